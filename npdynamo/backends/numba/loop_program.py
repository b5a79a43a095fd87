"""A whole ``while_loop``/``fori_loop`` as ONE njit function: the loop runs in compiled code.

Without this, the numba backend compiles a loop's condition and body as programs of their own
and the loop itself runs in Python (the op's ``impl``): every iteration pays Python dispatch.
Here the writer turns the loop node, its (simplified) subgraphs and the ``cond``/loop nodes
nested in them into the source of one nopython function: carried values are locals, the
condition is evaluated in compiled code, each fusion group of a subgraph is a call of its
(serial) kernel into buffers allocated with ``np.empty`` inside the function, and the ops left
between kernels are written as nopython code (``getitem``/``setitem`` with static or loop-index
indices, ``copy``, ``matmul`` of float vectors and matrices, ``tuple_item``, Python scalar
arithmetic). A loop with anything else (an op without such a form, symbolic sizes, a body
returning a view) keeps the Python loop; ``LoopRecord`` says why, in the numba report.

Exactness:

* Indexing is bounds-checked (``boundscheck=True``). Any exception raised by the compiled loop
  (an index out of bounds, a Python int that would overflow int64, a Python division by zero)
  makes the call rerun the loop in Python, which raises NumPy's or Python's own exception (or
  returns Python's exact result). Rerunning is safe: ``setitem`` is functional, so the loop
  writes only into buffers it allocated, never into its arguments.
* numba returns an argument array that comes back unchanged as that very object (a zero-trip
  loop, a value passed through the body), exactly as the Python loop returns it; views are
  never returned (a body returning one is refused). Every other result is a fresh array.
* Results have the carried kinds: NumPy scalars where the loop carries NumPy scalars, Python
  int/float where it carries Python numbers.
* Arrays of two or more dimensions that are not C-contiguous (or any array not in native byte
  order) run the Python loop: numba's copies are C-ordered, NumPy's keep the memory order.
* A numba error while compiling (an argument type the code cannot take) switches this loop to
  the Python loop for good, recorded in the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from numba.core.errors import NumbaError

from npdynamo.backends.numba import diskcache, loop_runtime
from npdynamo.backends.numba.codegen import generate_kernel
from npdynamo.backends.numba.fusion import FusionGroup, partition
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.scalar_ops import SCALAR_OPS

LOOP_OPS = ("while_loop", "fori_loop")
_CONTROL_FLOW = (*LOOP_OPS, "cond")
_PY_BINARY = {"py_add": "+", "py_sub": "-", "py_mul": "*"}
_INT_HELPERS = {"py_add": "int_add", "py_sub": "int_sub", "py_mul": "int_mul"}
#: float64 ufuncs that compute the same with a weak Python int operand as with its float
_WEAK_INT_SAFE = frozenset({"add", "subtract", "multiply", "divide", "true_divide", "maximum",
                            "minimum"})
_MATMUL_HELPERS = {(2, 1): "matvec", (1, 2): "vecmat", (2, 2): "matmat", (1, 1): "vecvec"}


class NotCompilable(Exception):
    """The loop has something the writer cannot express in nopython code (the message: why)."""


@dataclass
class LoopRecord:
    """What became of one loop node under the numba backend (a line of its report)."""

    node: str
    op: str
    compiled: bool
    why: str = ""
    runs: int = 0  # calls that ran the compiled loop (a test sees the fast path was taken)

    def __str__(self) -> str:
        if self.compiled:
            return f"loop {self.node} ({self.op}): one compiled program, the loop runs in numba"
        return f"loop {self.node} ({self.op}): Python loop ({self.why})"


def _meta(value: Any) -> Any:
    return value.meta.get("val") if isinstance(value, Node) else None


def _is_float64(value: Any) -> bool:
    meta = _meta(value)
    if isinstance(meta, ScalarMeta):
        return meta.type is float
    if isinstance(meta, ArrayMeta):
        return meta.dtype == np.float64
    return type(value) in (int, float) or (isinstance(value, np.ndarray)
                                           and value.dtype == np.float64)


def _int_operands_as_floats(graph: Graph) -> None:
    """Let kernels take the loop index (a dynamic Python int) where it meets float64 arrays.

    Kernels refuse dynamic ints (NumPy checks an int against an integer loop's dtype on each
    call). In a float64 ``add``/``multiply``/... whose other operands are float64, NumPy
    computes with ``float(i)`` whether the operand is the int or that float: the same float64
    loop on the same value. So such an operand becomes ``py_mul(i, 1.0)`` (exactly
    ``float(i)``), a dynamic float the kernels take. ``graph`` is the loop's own copy.
    """
    for node in list(graph.nodes):
        if getattr(node.target, "name", "") not in _WEAK_INT_SAFE or node.kwargs:
            continue
        ints = [a for a in node.args
                if isinstance(_meta(a), ScalarMeta) and _meta(a).type is int]
        if not ints or not _is_float64(node) or not all(
                _is_float64(a) for a in node.args if a not in ints):
            continue
        for a in dict.fromkeys(ints):
            with graph.inserting_before(node):
                as_float = graph.call_function(SCALAR_OPS["py_mul"], (a, 1.0))
            as_float.meta["val"] = ScalarMeta(float)
            node.replace_input_with(a, as_float)


class _Writer:
    """Emits the source of one loop function; ``prepare`` simplifies each subgraph first."""

    def __init__(self, prepare: Callable[[Graph], Graph]) -> None:
        self.prepare = prepare
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"np": np, "math": math}
        for name in (*_INT_HELPERS.values(), *_MATMUL_HELPERS.values(), "true_divide"):
            self.globals[name] = getattr(loop_runtime, name)
        self._count = 0
        self._bound: dict[int, str] = {}

    def fresh(self, hint: str = "v") -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def bind(self, obj: Any, hint: str) -> str:
        if id(obj) not in self._bound:
            name = f"_{hint}{len(self._bound)}"
            self._bound[id(obj)] = name
            self.globals[name] = obj
        return self._bound[id(obj)]

    def emit(self, line: str, depth: int) -> None:
        self.lines.append("    " * depth + line)

    def value(self, v: Any, env: dict[Node, str]) -> str:
        """``v`` (an argument of a node) as an expression."""
        if isinstance(v, Node):
            if v not in env:
                raise NotCompilable(f"{v.name} is not computed inside the loop program")
            return env[v]
        if type(v) in (bool, int):
            return repr(v)
        if type(v) is float:
            return repr(v) if math.isfinite(v) else self.bind(v, "float")
        if isinstance(v, np.generic) and v.dtype.kind in "biuf":
            return self.bind(v, "scalar")
        raise NotCompilable(f"a {type(v).__name__} constant")

    # -- graphs ---------------------------------------------------------------------------
    def graph(self, sub: Any, inputs: list[str], depth: int) -> list[tuple[str, Any]]:
        """Emit ``sub``'s steps with its placeholders bound to ``inputs``; its outputs as
        (expression, meta) pairs."""
        if not is_subgraph(sub):
            raise NotCompilable("a branch or body that is not a captured graph")
        graph = self.prepare(sub.graph)
        _int_operands_as_floats(graph)
        env: dict[Node, str] = dict(zip(graph.placeholders, inputs))
        fresh: set[Node] = set()  # arrays this graph allocated (setitem may write into them)
        for step in partition(graph).steps:
            if isinstance(step, FusionGroup):
                self.kernel(step, env, depth, fresh)
            else:
                self.op(step, env, depth, fresh)
        out = graph.output_node.args[0] if graph.output_node.args else ()
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        results = []
        for v in out:
            if isinstance(v, Node) and getattr(v.target, "name", "") == "getitem" and \
                    not getattr(_meta(v), "scalar", False):
                raise NotCompilable("a subgraph returns a view of an array (getitem)")
            results.append((self.value(v, env), _meta(v)))
        return results

    def kernel(self, group: FusionGroup, env: dict[Node, str], depth: int,
               fresh: set[Node]) -> None:
        # serial kernels: a parallel kernel called from this function is one more parallel
        # region per iteration (a thread-pool launch each time, often longer than a stencil
        # step), and the tuner that picks parallel or serial per graph cannot swap the
        # kernels compiled into this function; the loop's speed comes from having no
        # Python between iterations
        ks = generate_kernel(group, parallel=False)
        module, _path, _source = diskcache.load_kernel_module(ks.source)
        callee = self.bind(module.kernel, f"kernel{group.index}_")
        args, after = [], []
        for arg in ks.args:
            if arg.kind == "input":
                args.append(self.value(arg.value, env))
            elif arg.kind == "const":
                args.append(self.bind(arg.value, "const"))
            elif arg.kind in ("extent", "size"):
                if type(arg.value) is not int:
                    raise NotCompilable("symbolic sizes")
                args.append(repr(arg.value))
            else:
                node, meta = arg.value, arg.value.meta["val"]
                name = self.fresh()
                buffer = f"{name}_0d" if meta.scalar else name
                self.emit(f"{buffer} = np.empty({self.shape(meta)}, {self.dtype(meta)})", depth)
                env[node] = name
                fresh.add(node)
                args.append(buffer)
                if meta.scalar:  # a NumPy scalar, as NumPy gives
                    after.append(f"{name} = {buffer}[()]")
        self.emit(f"{callee}({', '.join(args)})", depth)
        for line in after:
            self.emit(line, depth)

    def shape(self, meta: Any) -> str:
        if not isinstance(meta, ArrayMeta) or any(type(d) is not int for d in meta.shape):
            raise NotCompilable("symbolic sizes")
        return repr(tuple(meta.shape))

    def dtype(self, meta: ArrayMeta) -> str:
        if meta.dtype.kind not in "biufc":
            raise NotCompilable(f"dtype {meta.dtype}")
        return self.bind(meta.dtype.type, meta.dtype.name)

    def truth(self, expr: str, meta: Any) -> str:
        """``expr`` as a condition: a 0-d array's element, a number itself."""
        if isinstance(meta, ArrayMeta) and not meta.scalar:
            return f"{expr}[()]"
        return expr

    # -- ops between kernels --------------------------------------------------------------
    def op(self, node: Node, env: dict[Node, str], depth: int, fresh: set[Node]) -> None:
        name = getattr(node.target, "name", repr(node.target))
        if getattr(node.target, "impure", False):
            raise NotCompilable(f"{name} draws random numbers")
        if node.kwargs:
            raise NotCompilable(f"{name} with keyword arguments")
        if name in _CONTROL_FLOW:
            env[node] = self.control_flow(node, name, [node.args], env, depth)
            return
        method = getattr(self, f"op_{name}", None)
        if name in _PY_BINARY:
            expr = self.py_binary(node, name, env)
        elif name in ("py_neg", "py_pos", "py_abs", "py_truediv"):
            expr = self.py_other(node, name, env)
        elif method is not None:
            expr = method(node, env, depth, fresh)
        else:
            raise NotCompilable(f"{name} has no nopython form in a loop program")
        env[node] = self.fresh()
        self.emit(f"{env[node]} = {expr}", depth)

    def op_tuple_item(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        results, index = node.args
        return f"{self.value(results, env)}[{int(index)}]"

    def op_copy(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        (x,) = node.args
        self.array(x, "copy")
        fresh.add(node)
        return f"{self.value(x, env)}.copy()"

    def op_matmul(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        a, b = node.args
        ma, mb = self.array(a, "matmul"), self.array(b, "matmul")
        helper = _MATMUL_HELPERS.get((len(ma.shape), len(mb.shape)))
        if helper is None or ma.dtype != mb.dtype or ma.dtype.kind != "f":
            raise NotCompilable("matmul other than of float vectors and matrices of one dtype")
        fresh.add(node)
        return f"{helper}({self.value(a, env)}, {self.value(b, env)})"

    def op_getitem(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        x, index = node.args
        self.array(x, "getitem")
        for user in node.users:
            if getattr(user.target, "name", "") in _CONTROL_FLOW:
                raise NotCompilable("a view (getitem) passed into a branch or loop")
        return f"{self.value(x, env)}[{self.index(index, env)}]"

    def op_setitem(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        x, index, value = node.args
        mx = self.array(x, "setitem")
        mv = _meta(value)
        kind = mv.dtype.kind if isinstance(mv, ArrayMeta) else (
            "f" if isinstance(mv, ScalarMeta) and mv.type is float or type(value) is float
            else "i" if (isinstance(mv, ScalarMeta) and mv.type is int) or type(value) is int
            else "?")
        if not (kind == mx.dtype.kind or (mx.dtype.kind == "f" and kind == "i")) or (
                isinstance(mv, ArrayMeta) and mv.dtype != mx.dtype):
            raise NotCompilable("setitem of a value of another dtype (NumPy's cast)")
        target, idx, val = self.value(x, env), self.index(index, env), self.value(value, env)
        if x in fresh and len(x.users) == 1:
            # the array was allocated here and nothing else reads it: write into it (the
            # functional setitem's copy is unobservable)
            self.emit(f"{target}[{idx}] = {val}", depth)
            fresh.add(node)
            return target
        copy = self.fresh()
        self.emit(f"{copy} = {target}.copy()", depth)
        self.emit(f"{copy}[{idx}] = {val}", depth)
        fresh.add(node)
        return copy

    def array(self, x: Any, where: str) -> ArrayMeta:
        meta = _meta(x)
        if not isinstance(meta, ArrayMeta) or meta.scalar:
            raise NotCompilable(f"{where} of something other than an array")
        if meta.dtype.kind not in "biuf":
            raise NotCompilable(f"{where} of dtype {meta.dtype}")
        return meta

    def index(self, index: Any, env: dict[Node, str]) -> str:
        items = index if type(index) is tuple else (index,)
        parts = [self.index_item(item, env) for item in items]
        if not parts:
            return "()"
        return parts[0] + "," if len(parts) == 1 and type(index) is tuple else ", ".join(parts)

    def index_item(self, item: Any, env: dict[Node, str]) -> str:
        if type(item) is slice:
            return ":".join("" if b is None else self.index_item(b, env)
                            for b in (item.start, item.stop, item.step))
        if type(item) is int:
            return repr(item)
        meta = _meta(item)
        if (isinstance(meta, ScalarMeta) and meta.type is int) or (
                isinstance(meta, ArrayMeta) and meta.scalar and meta.dtype.kind in "iu"):
            return env[item]
        raise NotCompilable("an index other than ints, slices and the loop's int values")

    def py_binary(self, node: Node, name: str, env: dict[Node, str]) -> str:
        a, b = (self.value(v, env) for v in node.args)
        kind = self.py_kind(node)
        if kind is int:
            return f"{_INT_HELPERS[name]}({a}, {b})"
        return f"({a} {_PY_BINARY[name]} {b})"

    def py_other(self, node: Node, name: str, env: dict[Node, str]) -> str:
        kind = self.py_kind(node)
        args = [self.value(v, env) for v in node.args]
        if name == "py_truediv":
            if all(self.py_operand_kind(v) is int for v in node.args):
                raise NotCompilable("a true division of two Python ints")
            return f"true_divide({args[0]}, {args[1]})"
        (a,) = args
        if name == "py_pos":
            return a
        if kind is int:
            neg = f"int_sub(0, {a})"
            return neg if name == "py_neg" else f"({a} if {a} >= 0 else {neg})"
        return f"(-{a})" if name == "py_neg" else f"abs({a})"

    def py_kind(self, node: Node) -> type:
        meta = _meta(node)
        if not isinstance(meta, ScalarMeta) or meta.type not in (int, float):
            raise NotCompilable("Python arithmetic other than of int and float")
        for v in node.args:
            if self.py_operand_kind(v) not in (int, float):
                raise NotCompilable("Python arithmetic with a NumPy value")
        return meta.type

    @staticmethod
    def py_operand_kind(v: Any) -> type | None:
        meta = _meta(v)
        if isinstance(meta, ScalarMeta):
            return meta.type
        return type(v) if type(v) in (int, float) else None

    # -- control flow ---------------------------------------------------------------------
    def control_flow(self, node: Node, name: str, args: list, env: dict[Node, str],
                     depth: int) -> str:
        """Emit a nested ``cond``/``while_loop``/``fori_loop``; the local holding its results."""
        (given,) = args
        vals = lambda seq: [self.value(v, env) for v in seq]  # noqa: E731
        if name == "cond":
            pred, true_fn, false_fn, operands, *extra = (*given, (), ())[:6]
            return self.emit_cond(self.truth(self.value(pred, env), _meta(pred)), true_fn,
                                  false_fn, vals(operands), vals(extra[0]), vals(extra[1]),
                                  depth)
        if name == "while_loop":
            cond_fn, body_fn, carried, cond_extra, body_extra = (*given, (), ())[:5]
            return self.emit_while(cond_fn, body_fn, vals(carried), vals(cond_extra),
                                   vals(body_extra), depth)
        lower, upper, body_fn, carried, body_extra = (*given, ())[:5]
        return self.emit_fori(self.value(lower, env), self.value(upper, env), body_fn,
                              vals(carried), vals(body_extra), depth)

    def _carry(self, values: list[str], depth: int) -> list[str]:
        names = [self.fresh("c") for _ in values]
        for name, v in zip(names, values):
            self.emit(f"{name} = {v}", depth)
        return names

    def _assign(self, names: list[str], outs: list[tuple[str, Any]], depth: int) -> None:
        if names:
            self.emit(f"{', '.join(names)}, = ({', '.join(e for e, _ in outs)},)", depth)

    def _result(self, names: list[str], depth: int) -> str:
        result = self.fresh("r")
        self.emit(f"{result} = ({''.join(n + ', ' for n in names)})", depth)
        return result

    def emit_while(self, cond_fn: Any, body_fn: Any, carried: list[str], cond_extra: list[str],
                   body_extra: list[str], depth: int) -> str:
        names = self._carry(carried, depth)
        self.emit("while True:", depth)
        ((test, meta),) = self.graph(cond_fn, names + cond_extra, depth + 1)
        self.emit(f"if not {self.truth(test, meta)}:", depth + 1)
        self.emit("break", depth + 2)
        self._assign(names, self.graph(body_fn, names + body_extra, depth + 1), depth + 1)
        return self._result(names, depth)

    def emit_fori(self, lower: str, upper: str, body_fn: Any, carried: list[str],
                  body_extra: list[str], depth: int) -> str:
        names = self._carry(carried, depth)
        index = self.fresh("i")
        self.emit(f"for {index} in range({lower}, {upper}):", depth)
        self._assign(names, self.graph(body_fn, [index, *names, *body_extra], depth + 1),
                     depth + 1)
        return self._result(names, depth)

    def emit_cond(self, pred: str, true_fn: Any, false_fn: Any, operands: list[str],
                  true_extra: list[str], false_extra: list[str], depth: int) -> str:
        self.emit(f"if {pred}:", depth)
        outs = self.graph(true_fn, operands + true_extra, depth + 1)
        names = [self.fresh("b") for _ in outs]
        self._assign(names, outs, depth + 1)
        self.emit("else:", depth)
        self._assign(names, self.graph(false_fn, operands + false_extra, depth + 1), depth + 1)
        return self._result(names, depth)


# -- the loop node's program ---------------------------------------------------------------
def _flat_args(op: str, args: tuple) -> tuple:
    """The loop node's arguments as the loop function's parameters (subgraphs left out)."""
    if op == "while_loop":
        _cond, _body, carried, cond_extra, body_extra = (*args, (), ())[:5]
        return (*carried, *cond_extra, *body_extra)
    lower, upper, _body, carried, body_extra = (*args, ())[:5]
    return (lower, upper, *carried, *body_extra)


def _loop_source(node: Node, op: str, prepare: Callable[[Graph], Graph]) -> _Writer:
    if node.kwargs:
        raise NotCompilable("keyword arguments")
    writer = _Writer(prepare)
    values = _flat_args(op, node.args)
    for v in values:
        meta = _meta(v) if isinstance(v, Node) else None
        if isinstance(meta, ArrayMeta) and meta.dtype.kind not in "biuf":
            raise NotCompilable(f"a carried or outer value of dtype {meta.dtype}")
        if isinstance(meta, ScalarMeta) and meta.type not in (int, float):
            raise NotCompilable(f"a carried or outer Python {meta.type.__name__}")
    params = [f"p{k}" for k in range(len(values))]
    if op == "while_loop":
        _cond, _body, carried, cond_extra, _extra = (*node.args, (), ())[:5]
        n, m = len(carried), len(cond_extra)
        result = writer.emit_while(node.args[0], node.args[1], params[:n], params[n:n + m],
                                   params[n + m:], 1)
    else:
        n = len(node.args[3])
        result = writer.emit_fori(params[0], params[1], node.args[2], params[2:2 + n],
                                  params[2 + n:], 1)
    writer.emit(f"return {result}", 1)
    writer.lines.insert(0, f"def loop({', '.join(params)}):")
    return writer


def _converter(meta: Any) -> Callable[[Any], Any]:
    """numba's result as the Python loop gives it: NumPy scalars, Python int/float."""
    if isinstance(meta, ScalarMeta):
        return meta.type
    if isinstance(meta, ArrayMeta) and meta.scalar:
        return meta.dtype.type
    return lambda v: v


def _runs_compiled(value: Any) -> bool:
    # numba's copies are C-ordered where NumPy's ``copy(order="K")`` keeps the memory order:
    # the same for arrays of one dimension and C-contiguous ones (and their slices)
    return not isinstance(value, np.ndarray) or (
        (value.ndim <= 1 or value.flags.c_contiguous) and value.dtype.isnative)


class LoopCall:
    """Runs a loop node: its compiled loop function, or its Python loop (``impl``)."""

    def __init__(self, node: Node, writer: _Writer, record: LoopRecord) -> None:
        self.op = node.target.name
        self.impl = node.target.impl
        self.record = record
        self.source = "\n".join(writer.lines) + "\n"
        exec(compile(self.source, f"<npdynamo-loop-{node.name}>", "exec"), writer.globals)
        # bounds checked: an index out of range raises (and the Python loop then raises
        # NumPy's IndexError) instead of reading outside the array
        self.jit = njit(boundscheck=True, error_model="numpy", nogil=True)(
            writer.globals["loop"])
        self.convert = [_converter(m) for m in node.meta.get("val") or ()]

    def __call__(self, *args: Any) -> tuple:
        if self.record.compiled:
            flat = _flat_args(self.op, args)
            if all(_runs_compiled(v) for v in flat):
                try:
                    out = self.jit(*flat)
                except NumbaError as exc:  # compiling for these argument types failed
                    lines = str(exc).strip().splitlines()
                    self.record.compiled = False
                    self.record.why = (f"numba could not compile it: {type(exc).__name__}: "
                                       f"{lines[0] if lines else ''}")
                except Exception:  # noqa: S110 - rerun in Python: its own exception or result
                    pass
                else:
                    self.record.runs += 1
                    return tuple(conv(v) for conv, v in zip(self.convert, out))
        return self.impl(*args)


def loop_programs(graph: Graph, prepare: Callable[[Graph], Graph]) -> list[LoopRecord]:
    """Give each ``while_loop``/``fori_loop`` node of ``graph`` whose loop the writer can
    express its compiled loop (``node.meta["numba_impl"]``, which the program calls instead of
    the op's Python loop). Returns one record per loop node."""
    records = []
    for node in graph.nodes:
        op = getattr(node.target, "name", None)
        if node.op != "call_function" or op not in LOOP_OPS:
            continue
        record = LoopRecord(node.name, op, compiled=False)
        try:
            writer = _loop_source(node, op, prepare)
        except NotCompilable as exc:
            record.why = str(exc)
        else:
            record.compiled = True
            node.meta["numba_impl"] = LoopCall(node, writer, record)
        records.append(record)
    return records
