"""The graph schema of an export archive: an fx graph as JSON data, and back.

Written by ``ExportedProgram.save`` and read by ``npdynamo.load`` (``archive.py``). The reader
never evaluates anything from the file: every value is rebuilt from a closed vocabulary of JSON
forms, and an op is resolved by name through the op registry only (``ops.REGISTRY`` and the
backward ops of ``autograd/backward_ops.py``: the allow-list). Anything outside the vocabulary
raises ``ArchiveError``.

Graph (version 1)::

    {"nodes": [NODE, ...]}            # placeholders first, one output node last
    NODE  = {"name": str, "op": "placeholder" | "call_function" | "output",
             "target": op name (call_function), "args": [VALUE...], "kwargs": {str: VALUE},
             "meta": {"val": META, "operator": str, "source": [file, line, text]}}
    VALUE = null | true/false | int | str | {"float": "repr"} | {"complex": ["re","im"]}
          | {"node": name} | {"tuple": [VALUE...]} | {"list": [VALUE...]}
          | {"dict": [[str, VALUE]...]} | {"slice": [VALUE, VALUE, VALUE]} | {"ellipsis": true}
          | {"dtype": "float32"} | {"sym": SYM} | {"graph": GRAPH, "name": str}
          | {"tensor": name}            # an array constant stored beside the graph
    META  = {"shape": [int | {"sym": SYM}...], "dtype": str, "scalar": bool}
          | {"scalar_type": "int" | "float" | "complex"} | {"tuple": [META...]}
    SYM   = [[coefficient, [ATOM...]]...]   # a polynomial over size atoms
    ATOM  = {"s": name, "hint": int, "lower": int} | {"op": "//" | "%" | "max", "a": SYM, "b": SYM}
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.autograd.backward_ops import BACKWARD_OPS
from npdynamo.errors import NpdynamoError
from npdynamo.fx import Graph, GraphModule
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.loop_index import IndexSymbol
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY
from npdynamo.ops.symbolic import Symbol, SymInt, _atom_expr, _Compound, floordiv, mod, sym_max
from npdynamo.ops.unbacked import UnbackedSymbol

#: dtypes an archive may hold (no object, void or structured dtypes: they could carry code)
DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble"])
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
_SCALAR_TYPES = {"int": int, "float": float, "complex": complex}
#: The allow-list of ops an archive may name: the canonical ops and those of backward graphs.
OPS = {**REGISTRY, **BACKWARD_OPS}
#: The limits a loaded graph must keep within (a hostile file must not exhaust memory).
MAX_NODES = 200_000
MAX_DEPTH = 64
#: A compound size atom's ``op`` -> the function that rebuilds it from its two operands.
_SIZE_OPS: dict[str, Callable[[Any, Any], Any]] = {"//": floordiv, "%": mod, "max": sym_max}


class ArchiveError(NpdynamoError):
    """An export archive is damaged, truncated, from a future version or not an archive."""


class ExportError(NpdynamoError):
    """A captured graph holds something an export target cannot express."""


# -- writing ----------------------------------------------------------------------------------

class GraphWriter:
    """Turns graphs into schema data; array constants found in arguments go to ``tensors``."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self.tensors = tensors

    def graph(self, graph: Graph) -> dict:
        return {"nodes": [self.node(n) for n in graph.nodes]}

    def node(self, node: Node) -> dict:
        out: dict[str, Any] = {"name": node.name, "op": node.op}
        if node.op == "call_function":
            name = getattr(node.target, "name", None)
            if OPS.get(name) is not node.target:
                raise ExportError(f"node {node.name} calls {node.target!r}, not a canonical op")
            out["target"] = name
        out["args"] = [self.value(a) for a in node.args]
        out["kwargs"] = {k: self.value(v) for k, v in node.kwargs.items()}
        meta: dict[str, Any] = {}
        if "val" in node.meta and node.meta["val"] is not None:
            meta["val"] = self.meta(node.meta["val"])
        if isinstance(node.meta.get("operator"), str):
            meta["operator"] = node.meta["operator"]
        if "source" in node.meta:
            file, line, text = node.meta["source"]
            meta["source"] = [str(file), int(line), str(text)]
        out["meta"] = meta
        return out

    def meta(self, meta: Any) -> Any:
        if isinstance(meta, ArrayMeta):
            return {"shape": [self.dim(d) for d in meta.shape], "dtype": meta.dtype.name,
                    "scalar": meta.scalar}
        if isinstance(meta, ScalarMeta):
            return {"scalar_type": meta.type.__name__}
        if isinstance(meta, tuple):
            return {"tuple": [self.meta(m) for m in meta]}
        raise ExportError(f"a node's value description {meta!r} cannot be saved")

    def dim(self, d: Any) -> Any:
        return {"sym": sym_data(d)} if isinstance(d, SymInt) else int(d)

    def value(self, v: Any) -> Any:
        if v is None or type(v) in (bool, int, str):
            return v
        if isinstance(v, Node):
            return {"node": v.name}
        if type(v) is float:
            return {"float": repr(v)}
        if type(v) is complex:
            return {"complex": [repr(v.real), repr(v.imag)]}
        if isinstance(v, SymInt):
            return {"sym": sym_data(v)}
        if type(v) in (tuple, list):
            return {type(v).__name__: [self.value(x) for x in v]}
        if type(v) is dict and all(type(k) is str for k in v):
            return {"dict": [[k, self.value(x)] for k, x in v.items()]}
        if type(v) is slice:
            return {"slice": [self.value(v.start), self.value(v.stop), self.value(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": True}
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            name = np.dtype(v).name
            if name in DTYPES:
                return {"dtype": name}
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype.name in DTYPES:
            name = f"c{len(self.tensors)}"
            self.tensors[name] = np.asarray(v)
            return {"tensor": name, "scalar": isinstance(v, np.generic)}
        if is_subgraph(v):
            return {"graph": self.graph(v.graph), "name": v.name}
        raise ExportError(f"an argument of type {type(v).__name__} ({v!r:.80}) cannot be saved")


def sym_data(x: SymInt) -> list:
    terms = []
    for mono, coeff in x.terms:
        atoms = []
        for atom in mono:
            if isinstance(atom, IndexSymbol):  # a Symbol too, but no size: it may be 0 or 1
                raise ExportError(f"the size {x} depends on a loop index: it cannot be saved "
                                  "(the program runs it; to_onnx and to_python write it)")
            if isinstance(atom, UnbackedSymbol):  # no value but the run time's (ops.unbacked)
                raise ExportError(f"the size {x} is known only when the graph runs (a slice "
                                  "bound the graph computes): it cannot be saved")
            if isinstance(atom, Symbol):
                atoms.append({"s": atom.name, "hint": atom.hint, "lower": atom.lower})
            elif isinstance(atom, _Compound):
                atoms.append({"op": atom.op, "a": _dim_data(atom.a), "b": _dim_data(atom.b)})
            else:
                raise ExportError(f"the size {x} depends on a loop index: it cannot be saved")
        terms.append([coeff, atoms])
    return terms


def _dim_data(d: Any) -> Any:
    return sym_data(d) if isinstance(d, SymInt) else int(d)


# -- reading ----------------------------------------------------------------------------------

class GraphReader:
    """Rebuilds graphs from schema data, checking every form; ``tensors`` resolves constants."""

    def __init__(self, tensors: Callable[[str], np.ndarray]) -> None:
        self.tensors = tensors
        self.count = 0
        self.symbols: dict[str, Symbol] = {}

    def graph(self, data: Any, depth: int = 0) -> Graph:
        if depth > MAX_DEPTH:
            raise ArchiveError("subgraphs nest too deeply")
        nodes = _field(data, "nodes", list)
        graph = Graph()
        env: dict[str, Node] = {}
        for item in nodes:
            self.count += 1
            if self.count > MAX_NODES:
                raise ArchiveError(f"the graph has more than {MAX_NODES} nodes")
            name = _field(item, "name", str)
            if not _NAME.match(name) or name in env:
                raise ArchiveError(f"bad or repeated node name {name!r}")
            kind = _field(item, "op", str)
            args = tuple(self.value(a, env, depth) for a in _field(item, "args", list))
            kwargs = {_check_name(k): self.value(v, env, depth)
                      for k, v in _field(item, "kwargs", dict).items()}
            if kind == "placeholder":
                node = graph.placeholder(name)
            elif kind == "call_function":
                target = _field(item, "target", str)
                if target not in OPS:
                    raise ArchiveError(f"unknown op {target!r} (not in npdynamo's op registry)")
                node = graph.call_function(OPS[target], args, kwargs, name=name)
            elif kind == "output":
                if len(args) != 1:
                    raise ArchiveError("the output node takes one argument")
                node = graph.output(args[0])
            else:
                raise ArchiveError(f"unknown node kind {kind!r}")
            if node.name != name:
                raise ArchiveError(f"node name {name!r} is reserved")
            self._meta(node, _field(item, "meta", dict))
            env[name] = node
        if graph.output_node is None:
            raise ArchiveError("the graph has no output node")
        try:
            graph.lint()
        except Exception as exc:
            raise ArchiveError(f"the graph is malformed: {exc}") from None
        return graph

    def _meta(self, node: Node, meta: dict) -> None:
        if "val" in meta:
            node.meta["val"] = self.meta(meta["val"])
        if "operator" in meta:
            node.meta["operator"] = _check(meta["operator"], str)
        if "source" in meta:
            file, line, text = _check_len(meta["source"], 3)
            node.meta["source"] = (_check(file, str), _check(line, int), _check(text, str))

    def meta(self, data: Any) -> Any:
        data = _check(data, dict)
        if "tuple" in data:
            return tuple(self.meta(m) for m in _field(data, "tuple", list))
        if "scalar_type" in data:
            kind = _field(data, "scalar_type", str)
            if kind not in _SCALAR_TYPES:
                raise ArchiveError(f"unknown scalar type {kind!r}")
            return ScalarMeta(_SCALAR_TYPES[kind])
        shape = tuple(self.dim(d) for d in _field(data, "shape", list))
        if len(shape) > 64:
            raise ArchiveError("an array with more than 64 dimensions")
        scalar = _field(data, "scalar", bool)
        try:
            return ArrayMeta(shape, dtype(_field(data, "dtype", str)), scalar=scalar)
        except ValueError as exc:
            raise ArchiveError(str(exc)) from None

    def dim(self, d: Any) -> Any:
        if type(d) is int:
            if d < 0:
                raise ArchiveError(f"negative size {d}")
            return d
        return self.sym(_field(d, "sym", list))

    def sym(self, terms: list, depth: int = 0) -> Any:
        if depth > MAX_DEPTH or len(terms) > 64:
            raise ArchiveError("a size expression too large")
        total: Any = 0
        for term in terms:
            coeff, atoms = _check_len(term, 2)
            product: Any = _check(coeff, int)
            for atom in _check(atoms, list)[:16]:
                product = product * self.atom(_check(atom, dict), depth)
            total = total + product
        return total

    def atom(self, data: dict, depth: int) -> Any:
        if "s" in data:
            name, hint = _check_name(data["s"]), _check(data.get("hint"), int)
            lower = _check(data.get("lower", 2), int)
            sym = self.symbols.get(name)
            if sym is None:
                try:
                    sym = self.symbols[name] = Symbol(name, hint)
                except ValueError as exc:
                    raise ArchiveError(str(exc)) from None
                sym.lower = lower
            return _atom_expr(sym)
        op = data.get("op")
        a = self._operand(data.get("a"), depth)
        b = self._operand(data.get("b"), depth)
        combine = _SIZE_OPS.get(op) if isinstance(op, str) else None
        if combine is None:
            raise ArchiveError(f"unknown size operation {op!r}")
        try:
            return combine(a, b)
        except Exception as exc:
            raise ArchiveError(f"bad size expression: {exc}") from None

    def _operand(self, d: Any, depth: int) -> Any:
        return d if type(d) is int else self.sym(_check(d, list), depth + 1)

    def value(self, v: Any, env: dict[str, Node], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ArchiveError("arguments nest too deeply")
        if v is None or type(v) in (bool, int, str):
            return v
        v = _check(v, dict)
        if len(v) == 0:
            raise ArchiveError("an empty value form")
        key = next(iter(v))
        sub = depth + 1
        if key == "node":
            name = _check(v["node"], str)
            if name not in env:
                raise ArchiveError(f"node {name!r} is used before it is defined")
            return env[name]
        if key == "float":
            return _float(v["float"])
        if key == "complex":
            re_, im = _check_len(v["complex"], 2)
            return complex(_float(re_), _float(im))
        if key == "sym":
            return self.sym(_check(v["sym"], list))
        if key in ("tuple", "list"):
            items = [self.value(x, env, sub) for x in _check(v[key], list)]
            return tuple(items) if key == "tuple" else items
        if key == "dict":
            return {_check(k, str): self.value(x, env, sub)
                    for k, x in (_check_len(p, 2) for p in _check(v["dict"], list))}
        if key == "slice":
            return slice(*(self.value(x, env, sub) for x in _check_len(v["slice"], 3)))
        if key == "ellipsis":
            return Ellipsis
        if key == "dtype":
            return dtype(_check(v["dtype"], str))
        if key == "tensor":
            array = self.tensors(_check(v["tensor"], str))
            return array[()] if v.get("scalar") is True else array
        if key == "graph":
            sub_graph = self.graph(v["graph"], depth + 1)
            return GraphModule(sub_graph, _check_name(v.get("name", "body")))
        raise ArchiveError(f"unknown value form {key!r}")


def dtype(name: str) -> np.dtype:
    if name not in DTYPES:
        raise ArchiveError(f"dtype {name!r} is not allowed in an archive")
    return np.dtype(name)


def _float(text: Any) -> float:
    text = _check(text, str)
    if len(text) > 40:
        raise ArchiveError("a float literal too long")
    try:
        value = float(text)
    except ValueError:
        raise ArchiveError(f"bad float literal {text!r}") from None
    if math.isnan(value) and text not in ("nan", "-nan"):
        raise ArchiveError(f"bad float literal {text!r}")
    return value


def _check(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise ArchiveError(f"expected {kind.__name__}, found {type(value).__name__}")
    return value


def _check_len(value: Any, n: int) -> list:
    if type(value) is not list or len(value) != n:
        raise ArchiveError(f"expected a list of {n} items")
    return value


def _check_name(name: Any) -> str:
    if type(name) is not str or not _NAME.match(name):
        raise ArchiveError(f"bad name {name!r}")
    return name


def _field(data: Any, key: str, kind: type) -> Any:
    if type(data) is not dict or key not in data:
        raise ArchiveError(f"missing field {key!r}")
    return _check(data[key], kind)


def tree_text(tree: Any, out: str) -> str:
    """The output tree (``{"out": i}``, ``{"const": v}``, ``{"tuple"/"list": [...]}``,
    ``{"dict": [[key, tree]]}``) as Python-like text, output ``i`` written as ``out.format(i)``:
    ``print(ep)`` shows it, and the NumPy-only module returns it as source."""
    if "out" in tree:
        return out.format(tree["out"])
    if "const" in tree:
        return repr(tree["const"])
    if "tuple" in tree:
        items = [tree_text(t, out) for t in tree["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "list" in tree:
        return "[" + ", ".join(tree_text(t, out) for t in tree["list"]) + "]"
    return "{" + ", ".join(f"{k!r}: {tree_text(t, out)}" for k, t in tree["dict"]) + "}"
