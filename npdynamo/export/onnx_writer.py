"""The ONNX lowering of an exported program's graph, built with ``onnx.helper`` (``onnx_export``).

The graph is walked once in order; each canonical op is lowered by its entry in the op tables
(``onnx_ops``, ``onnx_shapes``, ``onnx_numeric``, ``onnx_math``, ``onnx_stats``,
``onnx_arrays``) to ONNX nodes (an op without one raises ``ExportError`` naming it:
``onnx_export.onnx_supported_ops()`` lists those that have one). Inputs keep their
names; symbolic dimensions become ONNX dimension parameters named after their ``Dim``; constants
(weights) become initializers. The model's outputs are the graph's outputs in order (``out0``, ...):
the values returned, then the new values of the arrays the program writes (``ep.mutations``).
A size a shape argument needs at run time (``reshape(x, (s0, -1))``) is read from the input it
comes from (``Shape``). ``cond`` becomes ``If`` and ``while_loop``/``fori_loop`` become
``Loop``, their subgraphs lowered by the same walk (ONNX subgraphs read outer values by name).

NumPy semantics kept: the operands of an op are cast to the dtype NumPy computes in (Python
numbers are weak scalars, as in NumPy 2), so that dtypes and values match the eager backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo.export.onnx_pairs import Pair, involves_complex, pack, part_dtype, split
from npdynamo.export.schema import ExportError
from npdynamo.fx import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.sizes import symbol_origins
from npdynamo.generated import Names, unique_name
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import Symbol, SymInt, _Compound
from npdynamo.ops.symbolic_code import symbol_name

if TYPE_CHECKING:
    from npdynamo.export.program import ExportedProgram

#: the opset the models are written for (ONNX 1.16+; ORT 1.18+ runs it)
OPSET = 18


class Scope:
    """The ONNX nodes of one graph being written, and the names of its fx values."""

    def __init__(self, graph: Graph, env: dict[Node, Any]) -> None:
        self.graph = graph
        self.env = env
        self.nodes: list = []
        self.symbols: dict[str, str] = {}  # symbol -> name of its value as int64 [1]


class Lowering:
    """Lowers the program's graph (and its subgraphs) into ONNX graphs."""

    def __init__(self, ep: ExportedProgram, helper, onnx, lowerings: dict,
                 opset: int = OPSET, complex_lowerings: dict | None = None) -> None:
        self.ep = ep
        self.lowerings = lowerings
        self.complex_lowerings = complex_lowerings or {}
        self.opset = opset
        self.helper = helper
        self.onnx = onnx
        self.used = Names()
        self.scope: Scope | None = None
        self.initializers: list = []

    # -- names and nodes ----------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """``hint``, ``hint_1``, ...: the first name not used (a model has thousands of
        ``const``: ``unique_name`` goes on from the last one given)."""
        return unique_name(hint, self.used)

    def add(self, op_type: str, inputs: list, outputs: int = 1, **attrs: Any):
        """Append one ONNX node; returns its output name (a list when ``outputs`` > 1)."""
        names = [self.fresh(f"{op_type.lower()}") for _ in range(outputs)]
        self.scope.nodes.append(self.helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def const(self, value: Any, dtype: Any = None) -> str:
        array = np.asarray(value, dtype=dtype)
        tensor = self.onnx.numpy_helper.from_array(array, self.fresh("const"))
        return self.add("Constant", [], value=tensor)

    def ints(self, values: list[int]) -> str:
        return self.const(np.asarray(values, dtype=np.int64))

    def elem_type(self, dtype: np.dtype) -> int:
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def cast(self, name: str, source: np.dtype, target: np.dtype) -> str:
        if np.dtype(source) == np.dtype(target):
            return name
        return self.add("Cast", [name], to=self.elem_type(target))

    # -- values --------------------------------------------------------------------------------
    def meta(self, arg: Any) -> Any:
        return arg.meta.get("val") if isinstance(arg, Node) else None

    def dtype_of(self, arg: Any) -> Any:
        """The dtype of an operand, or the Python number standing for a weak scalar."""
        meta = self.meta(arg)
        if isinstance(meta, ArrayMeta):
            return meta.dtype
        if isinstance(meta, ScalarMeta):
            return meta.type(0)
        if isinstance(arg, SymInt):
            return 0
        if type(arg) in (bool, int, float, complex):
            return arg
        if isinstance(arg, (np.ndarray, np.generic)):
            return arg.dtype
        if type(arg) in (tuple, list) and _numbers(arg):
            return np.asarray(arg).dtype
        raise ExportError(f"an operand {arg!r:.60} has no ONNX form")

    def value(self, arg: Any, dtype: Any) -> str:
        """``arg`` as an ONNX value of ``dtype`` (a Python number as a 0-d constant)."""
        dtype = np.dtype(dtype)
        if isinstance(arg, Node):
            name = self.scope.env[arg]
            if isinstance(name, Pair):
                raise ExportError(f"{arg.name} is complex: this op has no complex ONNX form")
            if isinstance(name, tuple):
                raise ExportError(f"{arg.name} has several results")
            meta = self.meta(arg)
            source = meta.dtype if isinstance(meta, ArrayMeta) else _scalar_dtype(meta)
            return self.cast(name, source, dtype)
        if isinstance(arg, SymInt):
            scalar = self.add("Squeeze", [self.size(arg), self.ints([0])])
            return self.cast(scalar, np.int64, dtype)
        if type(arg) in (bool, int, float, complex) or isinstance(arg, (np.ndarray, np.generic)):
            return self.const(np.asarray(arg).astype(dtype))
        if type(arg) in (tuple, list) and _numbers(arg):
            return self.const(np.asarray(arg, dtype=dtype))
        raise ExportError(f"an operand {arg!r:.60} has no ONNX form")

    def size(self, d: Any) -> str:
        """A size (int or ``SymInt``) as an int64 tensor of shape [1]."""
        if type(d) is int:
            return self.ints([d])
        if not isinstance(d, SymInt):
            raise ExportError(f"a size {d!r} has no ONNX form")
        total = None
        for mono, coeff in d.terms:
            term = self.ints([coeff])
            for atom in mono:
                term = self.add("Mul", [term, self._atom(atom)])
            total = term if total is None else self.add("Add", [total, term])
        return total if total is not None else self.ints([0])

    def _atom(self, atom: Any) -> str:
        if isinstance(atom, Symbol):
            found = self.scope.symbols.get(atom.name)
            if found is None:
                found = self.scope.symbols[atom.name] = self._read_symbol(atom.name)
            return found
        if isinstance(atom, _Compound):
            a, b = self.size(atom.a), self.size(atom.b)
            op = {"//": "Div", "%": "Mod", "max": "Max"}[atom.op]  # sizes >= 0: Div floors
            return self.add(op, [a, b])
        raise ExportError(f"a size that depends on a loop index ({atom.text()}) has no ONNX form")

    def _read_symbol(self, name: str) -> str:
        origins = symbol_origins(self.scope.graph)
        if name not in origins:
            raise ExportError(f"the size {name} is read from no input of this graph")
        node, dim = origins[name]
        holder = self.scope.env[node]
        if dim is None:  # a loop index: its value
            return self.add("Reshape", [self.cast(holder, _scalar_dtype(self.meta(node)),
                                                  np.int64), self.ints([1])])
        return self.add("Shape", [holder], start=dim, end=dim + 1)

    def shape(self, dims: Any) -> str:
        """A shape (ints and ``SymInt``s, -1 allowed) as an int64 [n] tensor."""
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        if all(type(d) is int for d in dims):
            return self.ints(list(dims))
        if not dims:
            return self.ints([])
        return self.add("Concat", [self.size(d) for d in dims], axis=0)

    # -- graphs --------------------------------------------------------------------------------
    def main(self):
        ep, helper = self.ep, self.helper
        env: dict[Node, Any] = {}
        self.scope = scope = Scope(ep.graph, env)  # the splits of complex inputs go first
        inputs, initializers = [], []
        for spec, node in zip(ep.inputs, ep.graph.placeholders):
            name = self.fresh(node.name)
            env[node] = name
            meta = spec.meta
            cplx = isinstance(meta, ArrayMeta) and meta.dtype.kind == "c"
            if spec.kind == "constant":
                value = np.asarray(ep.constants[spec.name])
                if cplx:  # as a model input: (real, imag) along a trailing axis
                    value = np.stack([value.real, value.imag], -1)
                initializers.append(self.onnx.numpy_helper.from_array(value, name))
            else:
                if not isinstance(meta, ArrayMeta):
                    raise ExportError(f"input {spec.name} is a Python number; ONNX takes "
                                      "arrays")
                dims = [d if type(d) is int else ep.dim_name(symbol_name(d) or str(d))
                        for d in meta.shape]
                dtype = part_dtype(meta.dtype) if cplx else meta.dtype
                inputs.append(helper.make_tensor_value_info(
                    name, self.elem_type(dtype), dims + [2] * cplx))
            if cplx:
                env[node] = split(self, name)
        outs = self.lower(scope)
        outputs = []
        for i, (name, node) in enumerate(outs):
            if isinstance(name, Pair):
                name = pack(self, name)
            final = self.fresh(f"out{i}")
            self.scope.nodes.append(helper.make_node("Identity", [name], [final]))
            outputs.append(self._value_info(final, node))
        return helper.make_graph(self.scope.nodes, ep.name, inputs, outputs, initializers)

    def _value_info(self, name: str, node: Any):
        meta = self.meta(node) if isinstance(node, Node) else None
        if isinstance(meta, ArrayMeta):
            dims = [d if type(d) is int else None for d in meta.shape]
            if meta.dtype.kind == "c":  # (real, imag) along a trailing axis
                return self.helper.make_tensor_value_info(
                    name, self.elem_type(part_dtype(meta.dtype)), dims + [2])
            return self.helper.make_tensor_value_info(name, self.elem_type(meta.dtype), dims)
        if isinstance(meta, ScalarMeta):
            return self.helper.make_tensor_value_info(name, self.elem_type(
                _scalar_dtype(meta)), [])
        raise ExportError(f"an output {node!r} of unknown type has no ONNX form")

    def lower(self, scope: Scope) -> list[tuple[str, Any]]:
        """Lower ``scope.graph`` into ``scope.nodes``; returns its outputs (name, fx node)."""
        outer, self.scope = self.scope, scope
        try:
            for node in scope.graph.nodes:
                if node.op != "call_function":
                    continue
                lower = self.lowerings.get(node.target.name)
                if involves_complex(node):
                    lower = self.complex_lowerings.get(node.target.name)
                    if lower is None:
                        raise ExportError(f"the op {node.target.name} has no ONNX form for "
                                          f"complex numbers yet ({_where(node)})")
                if lower is None:
                    raise ExportError(f"the op {node.target.name} has no ONNX form yet "
                                      f"({_where(node)}); npdynamo.export.onnx_supported_ops() "
                                      "lists those that have one")
                try:
                    scope.env[node] = lower(self, node, *node.args, **node.kwargs)
                except ExportError as exc:
                    raise ExportError(f"{node.target.name} ({_where(node)}): {exc}") from None
            results = scope.graph.output_node.args[0]
            results = results if isinstance(results, (tuple, list)) else (results,)
            return [(scope.env[r] if isinstance(r, Node) and isinstance(scope.env[r], Pair)
                     else self.value(r, self._dtype(r)), r) for r in results]
        finally:
            self.scope = outer if outer is not None else scope

    def _dtype(self, r: Any) -> np.dtype:
        meta = self.meta(r)
        if isinstance(meta, ArrayMeta):
            return meta.dtype
        if isinstance(meta, ScalarMeta):
            return _scalar_dtype(meta)
        return np.asarray(r).dtype

    def subgraph(self, gm: Any, operands: list[str], name: str) -> tuple:
        """Subgraph ``gm`` lowered into a scope of its own, its placeholders reading the outer
        values ``operands`` by name; returns (scope, [], output value infos)."""
        if any(isinstance(o, Pair) for o in operands):
            raise ExportError("complex values in a loop or branch have no ONNX form yet")
        scope = Scope(gm.graph, dict(zip(gm.graph.placeholders, operands)))
        outputs = []
        for res, node in self.lower(scope):
            if isinstance(res, Pair):
                raise ExportError("complex values out of a loop or branch have no ONNX form yet")
            final = self.fresh(f"{name}_out")
            scope.nodes.append(self.helper.make_node("Identity", [res], [final]))
            outputs.append(self._value_info(final, node))
        return scope, [], outputs


def _numbers(seq: Any) -> bool:
    return all(type(v) in (bool, int, float, complex) or (type(v) in (tuple, list) and
                                                          _numbers(v)) for v in seq)


def _scalar_dtype(meta: Any) -> np.dtype:
    if isinstance(meta, ScalarMeta):
        return np.asarray(meta.type(0)).dtype
    return np.dtype(meta)


def _where(node: Node) -> str:
    source = node.meta.get("source")
    return f"{source[0]}:{source[1]}: {source[2]}" if source else node.name
