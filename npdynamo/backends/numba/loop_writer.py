"""The loop writer: a loop node, its subgraphs and the control flow nested in them as the source
of one nopython function (used by ``loop_program``, which says what the function guarantees).

Each fusion group of a (simplified) subgraph is a call of its serial kernel into buffers
allocated with ``np.empty`` inside the function; the ops left between kernels are written as
nopython code (``getitem``/``setitem`` with int, slice and loop-index indices, ``copy``,
``matmul`` of float vectors and matrices, ``tuple_item``, Python int/float arithmetic, the
creation ops of ``loop_creation``), and any
other op (or one of these with arguments that have no such form, ``NoNopythonForm``) giving an
array, a NumPy scalar or a Python int/float is its NumPy impl called back in object mode,
checked to give what the compiled code was typed for. ``NotCompilable`` says why a loop cannot
be written at all.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

from npdynamo.backends.numba import diskcache, loop_runtime
from npdynamo.backends.numba.codegen import generate_kernel
from npdynamo.backends.numba.direct_writes import direct_writes
from npdynamo.backends.numba.fusion import FusionGroup, partition
from npdynamo.backends.numba.loop_control import ControlFlowCode
from npdynamo.backends.numba.loop_creation import CreationCode
from npdynamo.backends.numba.loop_inplace import InPlacePlan
from npdynamo.backends.numba.loop_scalars import (
    COMPARISONS,
    INT64,
    INT_HELPERS,
    NoNopythonForm,
    NotCompilable,
    ScalarCode,
    int_operands_as_floats,
    int_range,
    mark_int64,
    node_meta,
)
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_loop, is_subgraph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.symbolic_code import free_symbol_names, python_source, symbol_name

_MATMUL_HELPERS = {(2, 1): "matvec", (1, 2): "vecmat", (2, 2): "matmat", (1, 1): "vecvec"}


def _float64_scalar(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.scalar and meta.dtype == np.float64


#: each generated kernel's inlinable twin (``inline_kernel``), kept while the kernel lives
_INLINED: weakref.WeakKeyDictionary[Dispatcher, Dispatcher] = weakref.WeakKeyDictionary()


def inline_kernel(kernel: Dispatcher) -> Dispatcher:
    """``kernel`` (a generated kernel module's) as a function numba inlines into the loop
    program that calls it, compiled with the same options (one per kernel module)."""
    inline = _INLINED.get(kernel)
    if inline is None:
        options = {k: v for k, v in kernel.targetoptions.items()
                   if k not in ("cache", "nopython")}
        inline = _INLINED[kernel] = numba.njit(inline="always", **options)(kernel.py_func)
    return inline


class Writer(InPlacePlan, ScalarCode, CreationCode, ControlFlowCode):
    """Emits the source of one loop function; ``prepare`` simplifies each subgraph first."""

    def __init__(self, prepare: Callable[[Graph], Graph]) -> None:
        super().__init__()
        self.prepare = prepare
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"np": np, "math": math, "objmode": numba.objmode}
        for name in (*INT_HELPERS.values(), *_MATMUL_HELPERS.values(), "true_divide",
                     "assign", "assume", "vecvec_gather", "py_sqrt"):
            self.globals[name] = getattr(loop_runtime, name)
        self._count = 0
        self._bound: dict[int, str] = {}
        self.symbols: dict[str, str] = {}  # size symbol -> its local
        self.hoisted: list[str] = []  # allocations made once, at the function's entry
        self.loop_symbols: set[str] = set()  # size symbols that are loop indices (not entry)
        self.in_kernels: set[Node] = set()  # nodes of every fusion group written so far
        self.numpy_ops: list[str] = []  # ops called back in object mode, per iteration
        self.loop_depth = 0  # loops around the code being emitted
        self.c_ordered: set[Node] = set()  # arrays known C-contiguous (``CreationCode``)
        self.gathered: dict[Node, tuple[str, str]] = {}  # y[index] read by its dot (vecvec)
        self.unboxed: set[Node] = set()  # 0-d arrays that are numbers in the code (kernel)
        self.ranges: dict[str, tuple[int, int]] = {}  # bounded int locals (``ScalarCode``)
        self.into: dict[Node, Node] = {}  # kernel outputs written into a carried array

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
        if type(v) is complex or isinstance(v, np.generic) and v.dtype.kind in "biufc":
            return self.bind(v, "scalar")
        if type(v) is SymInt:
            return self.size(v)
        raise NotCompilable(f"a {type(v).__name__} constant")

    # -- graphs ---------------------------------------------------------------------------
    def graph(self, sub: Any, inputs: list[str], depth: int,
              owned: tuple[int, int] | None = None,
              writable: set[int] | None = None) -> list[tuple[str, Any]]:
        """Emit ``sub``'s steps with its placeholders bound to ``inputs``; its outputs as
        (expression, meta) pairs. ``owned``: (offset, count) of the loop's carried values among
        the placeholders, arrays the loop owns: assignments into them write them in place
        (``self.written`` gets the carried positions written). ``sub`` may also be a graph
        already prepared (a whole top-level graph, ``loop_program.whole_graph_program``)."""
        if isinstance(sub, Graph):
            graph = sub
        elif not is_subgraph(sub):
            raise NotCompilable("a branch or body that is not a captured graph")
        else:
            graph = self.prepare(sub.graph)
        if len(graph.placeholders) != len(inputs):
            raise NotCompilable(f"{getattr(sub, 'name', 'the graph')} takes "
                                f"{len(graph.placeholders)} inputs, given {len(inputs)}")
        int_operands_as_floats(graph)
        mark_int64(graph)
        if owned is not None:
            self._plan_carried_writes(graph, *owned)
            frame = (list(self.written), graph.placeholders[owned[0]:owned[0] + owned[1]])
            self.owners.append(frame)
        if writable:
            self._plan_branch_writes(graph, writable)
        env: dict[Node, str] = dict(zip(graph.placeholders, inputs))
        for p, given in env.items():
            if "size_symbol" in p.meta:  # a rolled loop's index, a size of the body's shapes
                self.loop_symbols.add(p.meta["size_symbol"])
                self.emit(f"{self.symbol(p.meta['size_symbol'])} = {given}", depth)
        fresh: set[Node] = set()  # arrays this graph allocated (setitem may write into them)
        part = partition(graph)
        self.plan_steps(graph, part.steps)
        if owned is not None:
            # ``v = v - r * q``: the kernel writes the loop's own vector (no array per step);
            # not a 0-d value, which may be a number in the code (``unboxable``)
            into = {node: holder for node, holder in direct_writes(graph, part, True).items()
                    if node_meta(node).shape}
            self.into.update(into)
            frame[0].extend(frame[1].index(holder) for holder in into.values())
        self.in_kernels |= {n for g in part.groups for n in g.nodes}
        for step in part.steps:
            if isinstance(step, FusionGroup):
                self.kernel(step, env, depth, fresh)
            else:
                self.op(step, env, depth, fresh)
        out = graph.output_node.args[0] if graph.output_node.args else ()
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        results = []
        for v in out:
            if isinstance(v, Node) and getattr(v.target, "name", "") == "getitem" and \
                    not getattr(node_meta(v), "scalar", False):
                raise NotCompilable("a subgraph returns a view of an array (getitem)")
            results.append((self.value(v, env), node_meta(v)))
        if owned is not None:  # (loops nested in the body planned their own in between)
            self.owners.pop()
            self.written = tuple(sorted(set(frame[0])))
        return results

    def kernel(self, group: FusionGroup, env: dict[Node, str], depth: int,
               fresh: set[Node]) -> None:
        # serial kernels: a parallel kernel called from this function is one more parallel
        # region per iteration (a thread-pool launch each time, often longer than a stencil
        # step), and the tuner that picks parallel or serial per graph cannot swap the
        # kernels compiled into this function; the loop's speed comes from having no
        # Python between iterations
        # a kernel giving scalars (or 0-d arrays) is a few instructions: called, passing its
        # 0-d buffers costs more than its work (~70 ns a call); inlined, they are registers.
        # Only in a loop: numba's inlining costs compile time per call site, and a call that
        # runs once (a whole graph's top level) does not repay it
        scalar = all(not node_meta(out).shape for out in group.outputs)
        inline = scalar and self.loop_depth > 0
        returns = scalar and all(self.unboxable(out) for out in group.outputs)
        into = {} if returns else {n: self.into[n] for n in group.outputs if n in self.into}
        ks = generate_kernel(group, parallel=False, returns=returns, into=into)
        for node, holder in into.items():  # (stored through the holder's own parameter)
            env[node] = self.value(holder, env)
        module, _path, _source = diskcache.load_kernel_module(ks.source)
        callee = self.bind(inline_kernel(module.kernel) if inline else module.kernel,
                           f"kernel{group.index}_")
        for name, (node, d, offset) in ks.unbacked().items():  # read from the slice given
            self.loop_symbols.add(name)  # (per iteration: never read at entry nor hoisted)
            self.emit(f"{self.symbol(name)} = {self.value(node, env)}.shape[{d}] - {offset}",
                      depth)
        if returns:
            # the kernel returns its values: locals, which LLVM keeps in registers (a
            # loop's accumulator) where a 0-d buffer is a store and a load per iteration
            names = [self.fresh() for _ in ks.returns]
            for node, name in zip(ks.returns, names):
                env[node] = name
                if not node_meta(node).scalar:  # a 0-d array only read as its element
                    self.unboxed.add(node)
            args = [self.bind(a.value, "const") if a.kind == "const" else
                    self.size(a.value) if a.kind in ("extent", "size") else
                    self.value(a.value, env) for a in ks.args]
            self.emit(f"{''.join(n + ', ' for n in names)}= {callee}({', '.join(args)})", depth)
            return
        args, after = [], []
        slots: dict[str, int] = {}  # per dtype, the NumPy-scalar outputs given a buffer so far
        for arg in ks.args:
            if arg.kind == "input":
                args.append(self.value(arg.value, env))
            elif arg.kind == "const":
                args.append(self.bind(arg.value, "const"))
            elif arg.kind in ("extent", "size"):
                args.append(self.size(arg.value))
            else:
                node, meta = arg.value, arg.value.meta["val"]
                name = self.fresh()
                buffer = name
                if meta.scalar:  # a NumPy scalar, as NumPy gives: read from its buffer at once
                    # so every kernel's k-th NumPy scalar of a dtype shares one buffer
                    slot = slots[meta.dtype.name] = slots.get(meta.dtype.name, -1) + 1
                    buffer = f"s_{meta.dtype.name}_{slot}"
                    after.append(f"{name} = {buffer}[()]")
                allocate = f"{buffer} = np.empty({self.shape(meta)}, {self.dtype(meta)})"
                env[node] = name
                args.append(buffer)
                if meta.scalar:
                    if allocate not in self.hoisted:
                        self.hoisted.append(allocate)
                elif (self.stays_inside(node) and not (
                        free_symbol_names(meta.shape) & self.loop_symbols)):
                    # a temporary of one iteration (a NumPy scalar's 0-d buffer is read at
                    # once): one buffer for the whole call, allocated at entry (its shape is
                    # the same in every iteration unless it is a loop index's expression)
                    self.hoisted.append(allocate)
                else:
                    self.emit(allocate, depth)
                    fresh.add(node)
        self.emit(f"{callee}({', '.join(args)})", depth)
        for line in after:
            self.emit(line, depth)

    def unboxable(self, node: Node) -> bool:
        """Whether a kernel's 0-d output can be a number in the loop: a NumPy scalar, or a
        0-d array read by nothing but ``x[()]`` (which gives that number: ``op_getitem``)."""
        meta = node_meta(node)
        if not isinstance(meta, ArrayMeta) or meta.shape:
            return False
        return meta.scalar or all(
            getattr(user.target, "name", "") == "getitem" and user not in self.in_kernels
            and user.args[0] is node and type(user.args[1]) is tuple and not user.args[1]
            and not user.kwargs
            for user in node.users)

    def result_interval(self, node: Node, name: str,
                        env: dict[Node, str]) -> tuple[int, int] | None:
        if self.py_kind(node) is not int:
            return None
        ia, ib = (self.interval(v, env) for v in node.args)
        return None if ia is None or ib is None else int_range(name, ia, ib)

    def shape(self, meta: Any) -> str:
        if not isinstance(meta, ArrayMeta):
            raise NotCompilable(f"a value of no array shape ({meta!r})")
        return "(" + "".join(self.size(d) + ", " for d in meta.shape) + ")"

    def size(self, d: Any) -> str:
        """A size as an int expression: symbols are locals read from the arguments' shapes at
        the function's entry (``loop_program``), so one compiled loop serves every size."""
        if type(d) is int:
            return repr(d)
        if type(d) is not SymInt:
            raise NotCompilable(f"a size {d!r}")
        expr = python_source(d, self.symbol)
        name = symbol_name(d)
        if name is not None and name not in self.loop_symbols:
            # an array's length, read once at entry (or an unbacked slice length): a
            # dimension, so within 0..2**63-1
            self.ranges[expr] = (0, INT64[1])
        return expr

    def symbol(self, name: str) -> str:
        return self.symbols.setdefault(name, f"z_{name}")

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
        method = getattr(self, f"op_{name}", None)
        if node.kwargs and not getattr(method, "takes_kwargs", False):
            env[node] = self.numpy_call(node, name, env, depth)
            return
        if is_loop(node) or name == "cond":
            env[node] = self.control_flow(node, name, [node.args], env, depth, fresh)
            return
        if name == "getitem" and self.gathers(node):  # computed by the dot that reads it
            self.gathered[node] = (self.value(node.args[0], env), self.value(node.args[1], env))
            env[node] = "<gathered>"
            return
        bounded = None  # an int result's proved interval (``ScalarCode.ranges``)
        try:
            if name in INT_HELPERS:
                expr = self.py_binary(node, name, env)
                bounded = self.result_interval(node, name, env)
            elif name in ("py_neg", "py_pos", "py_abs", "py_truediv"):
                expr = self.py_other(node, name, env)
            elif name in COMPARISONS:
                expr = self.py_compare(node, name, env)
            elif method is not None:
                expr = method(node, env, depth, fresh)
            else:
                raise NoNopythonForm(name)
        except NoNopythonForm:
            env[node] = self.numpy_call(node, name, env, depth)
            return
        env[node] = self.fresh()
        self.emit(f"{env[node]} = {expr}", depth)
        if bounded is not None:
            self.ranges[env[node]] = bounded

    def numpy_call(self, node: Node, name: str, env: dict[Node, str], depth: int) -> str:
        """An op without a nopython form, called from the compiled loop in object mode (its
        NumPy impl, as the eager backend runs it): the loop stays compiled around it."""
        meta = node_meta(node)
        if isinstance(meta, ScalarMeta) and meta.type in (int, float):
            nb_type = numba.int64 if meta.type is int else numba.float64
        elif isinstance(meta, ArrayMeta) and meta.dtype.kind in "biufc":
            nb_type = numba.from_dtype(meta.dtype)
            if not meta.scalar:
                nb_type = numba.types.Array(nb_type, len(meta.shape), "C")
        else:
            raise NotCompilable(f"{name} (no nopython form) gives a "
                                f"{type(meta).__name__ if meta is not None else 'value'}, "
                                "not an array or an int or float")
        impl = loop_runtime.checked(getattr(node.target, "impl", node.target), meta, name,
                                    private=isinstance(meta, ArrayMeta) and self.stays_inside(node))
        args = [self.boxed(a, env) for a in node.args]
        args += [f"{k}={self.boxed(v, env)}" for k, v in node.kwargs.items()]
        result = self.fresh()
        self.emit(f"with objmode({result}={self.bind(nb_type, 'type')}):", depth)
        self.emit(f"{result} = {self.bind(impl, name)}({', '.join(args)})", depth + 1)
        self.numpy_ops.append(name)
        return result

    def boxed(self, v: Any, env: dict[Node, str]) -> str:
        """``v`` as an object-mode expression: NumPy scalars made NumPy scalars again (numba
        boxes them as Python numbers, which NumPy promotes differently)."""
        if isinstance(v, Node):
            meta = node_meta(v)
            expr = self.value(v, env)
            if isinstance(meta, ArrayMeta) and meta.scalar:
                return f"{self.bind(meta.dtype.type, meta.dtype.name)}({expr})"
            return expr
        if type(v) in (tuple, list):
            items = "".join(self.boxed(x, env) + ", " for x in v)
            return f"({items})" if type(v) is tuple else f"[{items}]"
        if type(v) is slice:
            parts = (self.boxed(b, env) for b in (v.start, v.stop, v.step))
            return f"slice({', '.join(parts)})"
        if type(v) is SymInt:
            return self.size(v)
        if type(v) is dict or (hasattr(v, "__dict__") and any(
                isinstance(x, Node) for x in vars(v).values())):
            raise NotCompilable("a NumPy call whose arguments hold graph values")
        return self.bind(v, "const")

    def op_tuple_item(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        results, index = node.args
        return f"{self.value(results, env)}[{int(index)}]"

    def op_asserted(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        (holds,) = node.args  # (a speculated assert: ``assume`` raises when it fails)
        return f"assume({self.truth(self.value(holds, env), node_meta(holds))})"

    def op_scalar_power(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        # NumPy's float64 scalar ``**`` is C's pow() of the two values as doubles, as math.pow
        # is in nopython code (a Python int exponent converts exactly below 2**53); like the
        # kernels, the loop does not repeat NumPy's default-state warnings (errstate.py)
        if not _float64_scalar(node_meta(node)) or not all(
                _float64_scalar(node_meta(v)) if isinstance(v, Node)
                else type(v) is float or (type(v) is int and abs(v) < 2**53)
                for v in node.args):
            raise NoNopythonForm("scalar_power other than of float64 scalars and numbers")
        a, b = (self.value(v, env) for v in node.args)
        return f"math.pow({a}, {b})"

    def op_stack(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        # np.array([a, b]) of NumPy scalars of the result's dtype: a new vector filled in order
        meta = node_meta(node)
        items = node.args[0] if len(node.args) == 1 else None
        if not isinstance(items, (tuple, list)) or not isinstance(meta, ArrayMeta) or (
                meta.shape != (len(items),)) or meta.dtype.kind not in "biuf" or not all(
                isinstance(node_meta(v), ArrayMeta) and node_meta(v).scalar
                and node_meta(v).dtype == meta.dtype for v in items):
            raise NoNopythonForm("stack other than of NumPy scalars of one dtype")
        name = self.fresh("a")
        self.emit(f"{name} = np.empty(({len(items)},), {self.dtype(meta)})", depth)
        for k, v in enumerate(items):
            self.emit(f"{name}[{k}] = {self.value(v, env)}", depth)
        fresh.add(node)
        return name

    def op_py_sqrt(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        # math.sqrt converts its argument to a double first: exact from these kinds
        (a,) = node.args
        meta = node_meta(a) if isinstance(a, Node) else None
        if not (isinstance(meta, ScalarMeta) and meta.type in (int, float) or isinstance(
                meta, ArrayMeta) and meta.scalar and meta.dtype in (np.float64, np.float32)
                or type(a) in (int, float)):
            raise NoNopythonForm("math.sqrt of other than a float64/float32 scalar or number")
        return f"py_sqrt(np.float64({self.value(a, env)}))"  # (float() keeps a float32)

    def op_argmin(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        # numba's argmin/argmax of a whole array: NumPy's first extreme, the first nan (floats),
        # ValueError on an empty one; a flat index, as NumPy's without an axis
        (x,) = node.args
        meta = node_meta(x)
        if not isinstance(meta, ArrayMeta) or meta.dtype.kind not in "biuf" or meta.scalar or (
                not meta.shape):
            raise NoNopythonForm(f"{node.target.name} of other than a real array")
        return f"np.int64({self.value(x, env)}.{node.target.name}())"

    op_argmax = op_argmin

    def op_copy(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        (x,) = node.args
        self.array(x, "copy")
        fresh.add(node)
        meta = node_meta(node)
        if self.loop_depth and meta.shape and self.stays_inside(node, carried=True) and not (
                free_symbol_names(meta.shape) & self.loop_symbols):
            # dead at the iteration's end: one buffer for the call (Gram-Schmidt's column
            # ``v = A[:, k].copy()``, which its inner loop then updates in place)
            buffer = self.fresh("h")
            self.hoisted.append(f"{buffer} = np.empty({self.shape(meta)}, {self.dtype(meta)})")
            self.emit(f"assign({buffer}, {self.value(x, env)})", depth)
            return buffer
        return f"{self.value(x, env)}.copy()"

    def op_matmul(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        a, b = node.args
        ma, mb = self.array(a, "matmul"), self.array(b, "matmul")
        helper = _MATMUL_HELPERS.get((len(ma.shape), len(mb.shape)))
        if helper is None or ma.dtype != mb.dtype or ma.dtype.kind != "f":
            raise NoNopythonForm("matmul other than of float vectors and matrices of one dtype")
        fresh.add(node)
        for gather, other in ((b, a), (a, b)):  # x @ y[index] (or y[index] @ x): one loop
            if gather in self.gathered:  # (the products x[k] * y[index[k]] commute exactly)
                y, index = self.gathered[gather]
                return f"vecvec_gather({self.value(other, env)}, {y}, {index})"
        return f"{helper}({self.value(a, env)}, {self.value(b, env)})"

    def gathers(self, node: Node) -> bool:
        """Whether ``node`` is ``y[index]`` of a 1-D float ``y`` and a 1-D integer array
        ``index`` read only by dots of 1-D float vectors of ``y``'s dtype (``op_matmul`` then
        reads ``y[index[k]]`` in its loop: no gathered copy per iteration)."""
        y, index = node.args
        my, mi = node_meta(y), node_meta(index) if isinstance(index, Node) else None
        if not (isinstance(my, ArrayMeta) and isinstance(mi, ArrayMeta) and len(my.shape) == 1
                and len(mi.shape) == 1 and my.dtype.kind == "f" and mi.dtype.kind in "iu"):
            return False
        for user in node.users:
            if getattr(user.target, "name", "") != "matmul" or user.kwargs:
                return False
            other = user.args[1] if user.args[0] is node else user.args[0]
            mo = node_meta(other)
            if other is node or not (isinstance(mo, ArrayMeta) and len(mo.shape) == 1
                                     and mo.dtype == my.dtype):
                return False
        return True

    def op_getitem(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        x, index = node.args
        self.array(x, "getitem")
        # (an element, ``x[i, j]``, is a number in the compiled code: no view to pass on)
        if not node_meta(node).scalar and any(
                is_loop(user) or getattr(user.target, "name", "") == "cond"
                for user in node.users):
            raise NotCompilable("a view (getitem) passed into a branch or loop")
        if x in self.unboxed:  # (``unboxable``: the only read of a returned 0-d value)
            return self.value(x, env)
        return f"{self.value(x, env)}[{self.index(index, env)}]"

    def op_setitem(self, node: Node, env: dict[Node, str], depth: int, fresh: set) -> str:
        x, index, value = node.args
        mx = self.array(x, "setitem")
        mv = node_meta(value)
        bounds = None
        if isinstance(mv, ArrayMeta):
            same = mv.dtype == mx.dtype
        else:  # a Python number: NumPy converts it as numba does for these targets only
            py = mv.type if isinstance(mv, ScalarMeta) else type(value)
            same = (py is float and mx.dtype.kind in "fc") or (
                py is complex and mx.dtype.kind == "c") or (
                py is int and mx.dtype in (np.dtype(np.int64), np.dtype(np.float64))) or (
                py is bool and mx.dtype == np.dtype(bool))
            if py is int and mx.dtype == np.dtype(bool) and not isinstance(value, Node):
                value, same = bool(value), True  # (NumPy stores a constant int's truth)
            if py is int and mx.dtype.kind == "i" and not same:
                # NumPy raises OverflowError for an int out of the dtype's range: so does
                # the compiled loop (which then reruns in Python, for NumPy's own message)
                info = np.iinfo(mx.dtype)
                bounds, same = (info.min, info.max), True
        if not same:
            raise NoNopythonForm("setitem of a value of another dtype (NumPy's cast)")
        target, idx, val = self.value(x, env), self.index(index, env), self.value(value, env)
        store = (f"assign({{}}[{idx}], {val})" if self.copies_whole(x, index, value)
                 else f"{{}}[{idx}] = {val}")
        if bounds is not None:
            self.emit(f"if {val} < {bounds[0]} or {val} > {bounds[1]}:", depth)
            self.emit("raise OverflowError('Python integer out of bounds')", depth + 1)
        if self.readers_ran(node, x) and (node in self.in_place or (
                x in fresh and len(x.users) == 1) or self._last_write(node, x)):
            # the array was allocated here and nothing else reads it: write into it (the
            # functional setitem's copy is unobservable)
            self.emit(store.format(target), depth)
            fresh.add(node)
            return target
        copy = self.fresh()
        self.emit(f"{copy} = {target}.copy()", depth)
        self.emit(store.format(copy), depth)
        fresh.add(node)
        return copy

    def copies_whole(self, x: Node, index: Any, value: Any) -> bool:
        """Whether ``x[index] = value`` copies an array of the selection's own shape that
        cannot overlap ``x``: a kernel's output (a buffer of its own) with as many dimensions
        as the selection, none of them the int 1 (which would broadcast). Then the assignment
        is ``loop_runtime.assign``, far cheaper to compile than numba's slice assignment."""
        mv = node_meta(value)
        if value is x or value not in self.in_kernels or not isinstance(mv, ArrayMeta) \
                or mv.scalar or not mv.shape:
            return False
        items = index if type(index) is tuple else (index,)
        kept = len(node_meta(x).shape) - sum(type(item) is not slice for item in items)
        return len(mv.shape) == kept and not any(type(d) is int and d == 1 for d in mv.shape)

    def array(self, x: Any, where: str) -> ArrayMeta:
        meta = node_meta(x)
        if not isinstance(meta, ArrayMeta) or meta.scalar:
            raise NoNopythonForm(f"{where} of something other than an array")
        if meta.dtype.kind not in "biufc":
            raise NoNopythonForm(f"{where} of dtype {meta.dtype}")
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
        if type(item) in (int, SymInt):
            return self.size(item)
        meta = node_meta(item)
        if (isinstance(meta, ScalarMeta) and meta.type is int) or (
                isinstance(meta, ArrayMeta) and meta.scalar and meta.dtype.kind in "iu"):
            return self.value(item, env)
        raise NoNopythonForm("an index other than ints, slices and the loop's int values")
