"""``ExportedProgram``: one captured graph with its input/output spec, constants and mutations.

Made by ``npdynamo.export`` (``export/trace.py``, the only module of this stage that captures)
or read back from an archive by ``npdynamo.load`` (``export/archive.py``); handed to the
writers (``onnx_writer.py``, ``python_writer.py``). Nothing here imports the capture stage, so
a loaded program runs with the graph layer, the op registry and a backend only.

Calling a program checks its input spec (types, dtypes, ranks, static sizes, the symbolic
dimensions' bounds and the facts the graph relies on), runs the graph on a backend (compiled
once per backend, on the first call), writes the new values of the arrays it mutates back into
them (``np.copyto``: same objects, as ``compile`` does) and rebuilds the returned structure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npdynamo.backends.compile import compile_graph
from npdynamo.backends.registry import lookup_backend
from npdynamo.errors import NpdynamoError
from npdynamo.export import archive
from npdynamo.export.schema import ArchiveError, GraphReader, GraphWriter, sym_data, tree_text
from npdynamo.fx import Graph, GraphModule
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import Fact, SymInt, free_symbols
from npdynamo.ops.symbolic_code import symbol_name


class InputSpecError(NpdynamoError, TypeError, ValueError):
    """An exported program was called with arguments its input spec does not accept."""


@dataclass(frozen=True)
class Dim:
    """A named dynamic dimension for ``npdynamo.export(..., dynamic_shapes=...)``, as
    torch.export's ``Dim``: every dimension given the same name is one size, in
    ``[min, max]`` (``max`` None: unbounded). Sizes 0 and 1 are never symbolic: ``min >= 2``."""

    name: str
    min: int = 2
    max: int | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise InvalidDim(f"a Dim's name must be an identifier, not {self.name!r}")
        if self.min < 2 or (self.max is not None and self.max < self.min):
            raise InvalidDim(f"Dim {self.name!r}: need 2 <= min <= max, got min={self.min}, "
                             f"max={self.max} (sizes 0 and 1 are always specialised)")


class InvalidDim(NpdynamoError, ValueError):
    """A ``Dim`` or ``dynamic_shapes`` entry that cannot describe an input."""


@dataclass
class InputSpec:
    """One graph input: an argument leaf (``path``: parameter name, then keys) or a constant."""

    name: str  # the placeholder's name
    kind: str  # "input" or "constant"
    meta: ArrayMeta
    path: tuple = ()


@dataclass
class ExportedProgram:
    """A function as one graph plus what calling, saving and converting it needs."""

    graph: Graph
    inputs: list[InputSpec]
    #: argument leaves that are not arrays: path -> the value the graph was specialised for
    fixed_args: list[tuple[tuple, Any]]
    params: list[str]
    #: the returned structure: {"out": i} | {"tuple"/"list": [...]} | {"dict": [[k, ...]]}
    #: | {"const": value}; output i is the graph's i-th output
    output_tree: Any
    #: graph output index -> the input placeholder whose array it overwrites
    mutations: dict[int, str]
    constants: dict[str, np.ndarray]
    #: symbol (``s0``) -> (user name, min, max)
    dims: dict[str, tuple[str, int, int | None]] = field(default_factory=dict)
    #: facts on the symbols the graph relies on (``s0 == s1``, ``s0 % 2 == 0``)
    facts: list[Fact] = field(default_factory=list)
    name: str = "fn"
    _compiled: dict = field(default_factory=dict, repr=False)

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, backend: str = "eager", **kwargs: Any) -> Any:
        values = self.input_values(args, kwargs)
        run, order = self._runner(backend, values)
        outs = run(*(values[i] for i in order)) if run is not None else ()
        for index, target in self.mutations.items():
            pos = self._position(target)
            if self.inputs[pos].kind == "constant":
                self.constants[target] = np.array(outs[index], copy=True)
            else:
                np.copyto(values[pos], outs[index])
        return _rebuild(self.output_tree, outs)

    def input_values(self, args: tuple, kwargs: Mapping[str, Any]) -> list:
        """The graph's input values for a call, after checking them against the spec."""
        bound = self._bind(args, kwargs)
        for path, expected in self.fixed_args:
            got = _at(bound, path, self.name)
            if not _same_fixed(got, expected):
                raise InputSpecError(
                    f"{self.name}: argument {path_text(path)} was {expected!r} when the program "
                    f"was exported (its graph is specialised to it), got {got!r}")
        values = [self.constants[s.name] if s.kind == "constant" else _at(bound, s.path, self.name)
                  for s in self.inputs]
        self.check(values)
        return values

    def check(self, values: list) -> None:
        """Raise ``InputSpecError`` unless ``values`` (one per input) fit the input spec."""
        bindings: dict[str, int] = {}
        named: dict[str, int] = {}  # a Dim's name -> its size in this call
        for spec, value in zip(self.inputs, values):
            if spec.kind == "constant":
                continue
            where = f"{self.name}: argument {path_text(spec.path)}"
            meta = spec.meta
            if isinstance(meta, ScalarMeta):  # a Python number the graph takes as input
                if type(value) is not meta.type:
                    raise InputSpecError(f"{where} must be a Python {meta.type.__name__}, got "
                                         f"{type(value).__name__}")
                continue
            kind = np.generic if meta.scalar else np.ndarray  # np.float64(1.0) vs an array
            if not isinstance(value, kind):
                what = "a NumPy scalar" if meta.scalar else "a NumPy array"
                raise InputSpecError(f"{where} must be {what}, got {type(value).__name__}")
            if value.dtype != meta.dtype:
                raise InputSpecError(f"{where}: expected dtype {meta.dtype}, got {value.dtype}")
            if value.ndim != len(meta.shape):
                raise InputSpecError(f"{where}: expected {len(meta.shape)} dimension(s) "
                                     f"{self.shape_text(meta.shape)}, got shape {value.shape}")
            for d, (want, got) in enumerate(zip(meta.shape, value.shape)):
                sym = symbol_name(want)
                if sym is None:
                    if got != want:
                        raise InputSpecError(f"{where}: dimension {d} must be {want} (static), "
                                             f"got {got} (shape {value.shape})")
                    continue
                user, low, high = self.dims.get(sym, (sym, 2, None))
                if named.setdefault(user, got) != got:
                    raise InputSpecError(f"{where}: dimension {d} is {user} = {named[user]} "
                                         f"(from an earlier argument), got {got}")
                if got < low or (high is not None and got > high):
                    raise InputSpecError(f"{where}: dimension {d} ({user}) must lie in "
                                         f"[{low}, {high if high is not None else 'inf'}], "
                                         f"got {got}")
                bindings[sym] = got
        for fact in self.facts:
            if set(_fact_symbols(fact)) <= set(bindings) and not fact.holds(bindings):
                raise InputSpecError(f"{self.name}: the input sizes break the constraint "
                                     f"{self.fact_text(fact)} the graph relies on "
                                     f"({self.binding_text(bindings)})")

    def _bind(self, args: tuple, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if len(args) > len(self.params):
            raise InputSpecError(f"{self.name} takes {len(self.params)} argument(s), "
                                 f"got {len(args)}")
        bound = dict(zip(self.params, args))
        for key, value in kwargs.items():
            if key not in self.params or key in bound:
                raise InputSpecError(f"{self.name}: unexpected or repeated argument {key!r}")
            bound[key] = value
        for path, value in self.fixed_args:  # a default that was used at export
            if len(path) == 1 and path[0] not in bound:
                bound[path[0]] = value
        needed = {s.path[0] for s in self.inputs if s.kind == "input"}
        needed |= {p[0] for p, _v in self.fixed_args}
        missing = [p for p in self.params if p in needed and p not in bound]
        if missing:
            raise InputSpecError(f"{self.name}: missing argument(s) {', '.join(missing)}")
        return bound

    def _position(self, name: str) -> int:
        return next(i for i, s in enumerate(self.inputs) if s.name == name)

    def _runner(self, backend: str, values: list):
        found = self._compiled.get(backend)
        if found is None:
            examples = {s.name: v for s, v in zip(self.inputs, values)}
            compiled = compile_graph(self.graph.copy()[0], lambda n: examples[n.name],
                                     lookup_backend(backend), owner=self.name)
            names = [s.name for s in self.inputs]
            order = [names.index(n.name) for n in compiled.inputs]
            found = self._compiled[backend] = (compiled.compiled, order)
        return found

    # -- display ------------------------------------------------------------------------------
    def dim_name(self, sym: str) -> str:
        return self.dims[sym][0] if sym in self.dims else sym

    def shape_text(self, shape: tuple) -> str:
        dims = []
        for d in shape:
            text = str(d)
            for sym in sorted(self.dims, key=len, reverse=True):
                text = text.replace(sym, self.dims[sym][0])
            dims.append(text)
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    def fact_text(self, fact: Fact) -> str:
        return fact.render({s: u for s, (u, _lo, _hi) in self.dims.items()})

    def binding_text(self, bindings: Mapping[str, int]) -> str:
        return ", ".join(f"{self.dim_name(s)}={v}" for s, v in sorted(bindings.items()))

    def __str__(self) -> str:
        lines = [f"ExportedProgram {self.name}:", "  inputs:"]
        for spec in self.inputs:
            where = path_text(spec.path) if spec.kind == "input" else "constant"
            lines.append(f"    {spec.name}: {spec.meta.dtype}{self.shape_text(spec.meta.shape)}"
                         f"  [{where}]")
        for path, value in self.fixed_args:
            lines.append(f"    {path_text(path)} = {value!r}  [fixed]")
        if self.dims:
            lines.append("  dims:")
            for sym, (user, low, high) in self.dims.items():
                lines.append(f"    {user} ({sym}): {low} <= {user}"
                             + (f" <= {high}" if high is not None else ""))
        if self.facts:
            lines.append("  constraints: " + ", ".join(self.fact_text(f) for f in self.facts))
        lines.append(f"  returns: {tree_text(self.output_tree, 'output {}')}")
        for index, target in self.mutations.items():
            lines.append(f"  mutates: {target} <- output {index}")
        lines.append("  graph:")
        lines += ["    " + line for line in str(self.graph).splitlines()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ExportedProgram {self.name}: {len(self.inputs)} inputs, " \
               f"{len(self.graph.nodes)} nodes>"

    # -- targets ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the program as one versioned archive (JSON graph + .npy tensors in a zip)."""
        tensors = {f"k_{name}": array for name, array in self.constants.items()}
        writer = GraphWriter(tensors)
        program = {
            "name": self.name, "params": list(self.params),
            "inputs": [{"name": s.name, "kind": s.kind, "meta": writer.meta(s.meta),
                        "path": list(s.path)} for s in self.inputs],
            "fixed_args": [[list(p), writer.value(v)] for p, v in self.fixed_args],
            "output_tree": _tree_data(self.output_tree, writer),
            "mutations": [[i, t] for i, t in self.mutations.items()],
            "dims": {s: list(d) for s, d in self.dims.items()},
            "facts": [{"expr": sym_data(f.expr), "rel": f.rel, "value": f.value}
                      for f in self.facts],
            "graph": writer.graph(self.graph),
        }
        archive.write(path, program, tensors)

    def to_onnx(self, path: str | None = None, opset: int | None = None):
        """Write (and return) the program as an ONNX model."""
        from npdynamo.export.onnx_export import to_onnx
        return to_onnx(self, path, opset)

    def to_python(self, path: str) -> None:
        """Write the program as one Python module needing only NumPy (+ ``<path>.npz``)."""
        from npdynamo.export.python_writer import to_python
        to_python(self, path)

    def graph_module(self) -> GraphModule:
        return GraphModule(self.graph.copy()[0])


def load(path: str | os.PathLike) -> ExportedProgram:
    """Read a program saved by ``ExportedProgram.save``; nothing in the file is executed.

    Raises ``ArchiveError`` for a damaged, truncated, hostile or future-version archive."""
    program, tensors = archive.read(path)
    try:
        return _from_data(program, tensors)
    except ArchiveError as exc:
        raise ArchiveError(f"{os.fspath(path)}: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError,
            NpdynamoError) as exc:
        raise ArchiveError(f"{os.fspath(path)}: a malformed program: "
                           f"{type(exc).__name__}: {exc}") from None


def _from_data(data: dict, tensors: dict[str, np.ndarray]) -> ExportedProgram:
    def tensor(name: str) -> np.ndarray:
        if name not in tensors:
            raise ArchiveError(f"missing tensor {name!r}")
        return tensors[name]

    reader = GraphReader(tensor)
    graph = reader.graph(data["graph"])
    params = [_check_str(p) for p in _check_list(data["params"])]
    inputs = []
    for item in _check_list(data["inputs"]):
        kind = item["kind"]
        if kind not in ("input", "constant"):
            raise ArchiveError(f"unknown input kind {kind!r}")
        path = tuple(_check_list(item["path"]))
        if kind == "input" and (not path or path[0] not in params):
            raise ArchiveError(f"input {item['name']!r} reads no parameter")
        inputs.append(InputSpec(_check_str(item["name"]), kind, reader.meta(item["meta"]), path))
    names = [p.name for p in graph.placeholders]
    if names != [s.name for s in inputs]:
        raise ArchiveError("the input spec does not match the graph's inputs")
    constants = {s.name: tensor(f"k_{s.name}") for s in inputs if s.kind == "constant"}
    for s in inputs:
        if s.kind == "constant" and (constants[s.name].dtype != s.meta.dtype
                                     or constants[s.name].shape != s.meta.shape):
            raise ArchiveError(f"constant {s.name!r} does not match its spec")
    n_out = len(graph.output_node.args[0])
    mutations = {}
    for index, target in _check_list(data["mutations"]):
        if type(index) is not int or not 0 <= index < n_out or target not in names:
            raise ArchiveError("a bad mutation record")
        mutations[index] = target
    dims = {}
    for sym, entry in _check_dict(data["dims"]).items():
        user, low, high = _check_list(entry)
        if type(low) is not int or (high is not None and type(high) is not int):
            raise ArchiveError("bad bounds of a dimension")
        dims[sym] = (_check_str(user), low, high)
    facts = []
    for item in _check_list(data["facts"]):
        if item["rel"] not in ("==", "!=", ">=") or type(item["value"]) is not int:
            raise ArchiveError("a bad constraint")
        expr = reader.sym(_check_list(item["expr"]))
        if not isinstance(expr, SymInt):
            raise ArchiveError("a constraint without symbols")
        facts.append(Fact(expr, item["rel"], item["value"]))
    env: dict = {}
    fixed = [(tuple(_check_list(p)), reader.value(v, env, 0))
             for p, v in _check_list(data["fixed_args"])]
    return ExportedProgram(
        graph=graph, inputs=inputs, fixed_args=fixed, params=params,
        output_tree=_tree_read(data["output_tree"], reader, n_out, 0), mutations=mutations,
        constants=constants, dims=dims, facts=facts, name=_check_str(data["name"]))


def _tree_data(tree: Any, writer: GraphWriter) -> Any:
    if "out" in tree:
        return tree
    if "const" in tree:
        return {"const": writer.value(tree["const"])}
    if "dict" in tree:
        return {"dict": [[k, _tree_data(t, writer)] for k, t in tree["dict"]]}
    key = next(iter(tree))
    return {key: [_tree_data(t, writer) for t in tree[key]]}


def _tree_read(tree: Any, reader: GraphReader, n_out: int, depth: int) -> Any:
    tree = _check_dict(tree)
    if depth > 64 or len(tree) != 1:
        raise ArchiveError("a bad output structure")
    if "out" in tree:
        if type(tree["out"]) is not int or not 0 <= tree["out"] < n_out:
            raise ArchiveError("an output index out of range")
        return tree
    if "const" in tree:
        return {"const": reader.value(tree["const"], {}, 0)}
    if "dict" in tree:
        return {"dict": [[_check_str(k), _tree_read(t, reader, n_out, depth + 1)]
                         for k, t in _check_list(tree["dict"])]}
    if "tuple" in tree or "list" in tree:
        key = next(iter(tree))
        return {key: [_tree_read(t, reader, n_out, depth + 1) for t in _check_list(tree[key])]}
    raise ArchiveError("a bad output structure")


def _check_list(v: Any) -> list:
    if type(v) is not list:
        raise ArchiveError(f"expected a list, found {type(v).__name__}")
    return v


def _check_dict(v: Any) -> dict:
    if type(v) is not dict:
        raise ArchiveError(f"expected an object, found {type(v).__name__}")
    return v


def _check_str(v: Any) -> str:
    if type(v) is not str:
        raise ArchiveError(f"expected a string, found {type(v).__name__}")
    return v


def _fact_symbols(fact: Fact) -> list[str]:
    return sorted(free_symbols(fact.expr))


def _same_fixed(got: Any, expected: Any) -> bool:
    """Whether an argument is the value fixed at export: the same types throughout (``1.0``
    is not ``1``: the graph was specialised to the kind too) and equal values and lengths."""
    if type(got) is not type(expected):
        return False
    if type(expected) in (tuple, list):
        return len(got) == len(expected) and all(map(_same_fixed, got, expected))
    return got == expected


def _at(bound: Mapping[str, Any], path: tuple, name: str) -> Any:
    value: Any = bound
    try:
        for key in path:
            value = value[key]
    except (KeyError, IndexError, TypeError):
        raise InputSpecError(f"{name}: argument {path_text(path)} is missing (the program was "
                             "exported with it)") from None
    return value


def path_text(path: tuple) -> str:
    """``params['w']`` for the path ``("params", "w")`` of an argument leaf."""
    return (str(path[0]) + "".join(f"[{k!r}]" for k in path[1:])) if path else "?"


def _rebuild(tree: Any, outs: tuple) -> Any:
    if "out" in tree:
        return outs[tree["out"]]
    if "const" in tree:
        return tree["const"]
    if "tuple" in tree:
        return tuple(_rebuild(t, outs) for t in tree["tuple"])
    if "list" in tree:
        return [_rebuild(t, outs) for t in tree["list"]]
    return {k: _rebuild(t, outs) for k, t in tree["dict"]}
