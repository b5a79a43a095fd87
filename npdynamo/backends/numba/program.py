"""The per-graph program: one generated Python function that runs a graph's steps in order.

It allocates every kernel output with NumPy (``np.empty``; numba's own allocation page-faults on
large arrays; large outputs reuse a buffer of an earlier call that nobody references any more),
calls each kernel once (one numba dispatch per fusion group), calls the NumPy ``impl`` of every
op that was not fused, and returns exactly what the eager backend returns: a
tuple, NumPy scalars where the graph has NumPy scalars, the graph's input objects themselves
where it returns an input. Any numba error while running (a kernel failing to compile for new
argument types) switches the program to the eager backend for good, with one warning. A call
under a non-default ``np.errstate`` runs on the eager backend (see ``errstate``).
NumPy calls between kernels raise exactly what they raise under the eager backend.

Symbolic sizes: the program reads each symbol it needs from an input's shape at entry
(``s0 = x.shape[0]``) and computes every size-dependent quantity per call: output shapes,
extents, whether a large output reuses a buffer, and, for kernels generated in a serial and a
parallel version, which one runs. So one program and one set of kernels serve every size. The
same switch runs every kernel serially (``set_parallel(False)``: the tuner's serial candidate).
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba.core.errors import NumbaWarning

from npdynamo.backends.fp_state import ufuncs_cannot_raise
from npdynamo.backends.numba import errstate, threads
from npdynamo.backends.numba.assignments import assign_repeat, fused_repeats, in_place_setitems
from npdynamo.backends.numba.codegen import KernelSource
from npdynamo.backends.numba.direct_writes import graph_outputs, needs_calm_state, step_inputs
from npdynamo.backends.numba.fusion import FusionGroup, Partition
from npdynamo.backends.numba.loop_program import LoopCall
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.sizes import symbol_reads
from npdynamo.generated import Namespace, define, fresh_name
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.symbolic_code import python_source, same_shape

_LITERALS = (bool, int, str, bytes, type(None))


class _Namespace(Namespace):
    def __init__(self, taken: set[str]) -> None:
        super().__init__(reserved=taken)
        self.symbols: dict[str, str] = {}  # size symbol -> the local holding its value
        self.unbacked: set[str] = set()  # symbols bound before a kernel call, not at entry

    def symbol(self, name: str) -> str:
        if name not in self.symbols:
            self.symbols[name] = fresh_name(f"_size_{name}", self.taken)
        return self.symbols[name]

    def render(self, a: Any, names: dict[Node, str] | None = None) -> str:
        """``a`` as source; ``names`` renames some nodes (a group's values recomputed by NumPy)."""
        if isinstance(a, Node):
            return names.get(a, a.name) if names else a.name
        kind = type(a)
        if kind in _LITERALS or a is Ellipsis:
            return "..." if a is Ellipsis else repr(a)
        if kind is float and math.isfinite(a):
            return repr(a)
        if kind is SymInt:
            return python_source(a, self.symbol)
        if kind is tuple:
            items = [self.render(x, names) for x in a]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if kind is list:
            return "[" + ", ".join(self.render(x, names) for x in a) + "]"
        if kind is dict:
            return "{" + ", ".join(f"{self.render(k, names)}: {self.render(v, names)}"
                                   for k, v in a.items()) + "}"
        if kind is slice:
            start, stop, step = (self.render(x, names) for x in (a.start, a.stop, a.step))
            return f"slice({start}, {stop}, {step})"
        return self.bind(a, "const")


#: Outputs at least this large reuse a buffer of an earlier call that nobody references any more.
REUSE_MIN_BYTES = 1 << 20
_SLOT_SIZE = 3


def take_buffer(slot: list, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A buffer of ``shape``/``dtype``: one kept in ``slot`` that nothing else references, else
    a new one (kept for later calls).

    Fresh large arrays cost a page fault per 4 KiB page on first write (an 8 MB float64 output:
    ~3 ms, more than the kernel). Reuse is unobservable: a buffer is taken only when the slot
    holds the sole reference (any array, view or memoryview of it the caller still has counts).
    A caller that keeps the previous result while computing the next (``p = step(p)``) leaves
    one buffer in use, hence a few per slot.
    """
    for buf in slot:
        # references: the slot, this loop variable and getrefcount's argument
        if sys.getrefcount(buf) == 3 and buf.shape == shape:
            return buf
    buf = np.empty(shape, dtype)
    if len(slot) >= _SLOT_SIZE:
        slot.pop(0)
    slot.append(buf)
    return buf


def _shape_expr(meta: ArrayMeta, ks: KernelSource, ns: _Namespace) -> str:
    """The output's shape: an input's ``.shape`` when they are equal (as cheap as a literal and
    right for any size), else the static shape."""
    if meta.shape:
        for arg in ks.args:
            m = arg.value.meta.get("val") if arg.kind == "input" else None
            if isinstance(m, ArrayMeta) and not m.scalar and same_shape(m.shape, meta.shape):
                return f"{arg.value.name}.shape"
    return ns.render(tuple(meta.shape))


def _own_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, writeable copy of ``a``."""
    return np.array(a, order="C")


def _last_uses(steps: list, graph: Graph) -> dict[int, list[str]]:
    """For each step, the values computed by earlier steps that no later step or output reads."""
    produced: dict[Node, int] = {}
    last: dict[Node, int] = {}
    for i, step in enumerate(steps):
        nodes = step.nodes if isinstance(step, FusionGroup) else [step]
        for n in step_inputs(step):
            last[n] = i
        for n in (step.outputs if isinstance(step, FusionGroup) else nodes):
            produced.setdefault(n, i)
    kept = set(graph.output_node.all_input_nodes) if graph.output_node else set()
    dead: dict[int, list[str]] = {}
    for n, i in last.items():
        if n in produced and n not in kept:
            dead.setdefault(i, []).append(n.name)
    return dead


class Program:
    """The generated top-level function of one graph and the state of its fallback."""

    def __init__(self, graph: Graph, partition: Partition,
                 kernels: dict[FusionGroup, tuple[KernelSource, Callable]],
                 eager: Callable[..., tuple], on_fallback: Callable[[int, str], None]) -> None:
        self.eager = eager
        self.on_fallback = on_fallback
        self.kernel_names: list[str] = []
        taken = {n.name for n in graph.nodes} | {"forward", "exc"}
        ns = _Namespace(taken)
        params = [p.name for p in graph.placeholders]
        body: list[str] = []
        out = graph_outputs(graph)
        dead_after = _last_uses(partition.steps, graph)
        #: kernel outputs computed straight into the input array they are written back to
        self.direct_writes = {node: holder.name for entry in kernels.values()
                              for node, holder in entry[0].into.items()}
        self._writes_started = False  # whether a kernel emitted so far may write an input
        self._calm_only = needs_calm_state(partition)
        #: setitem steps assigned into their array (no copy), and repeats assigned by them
        self.in_place = in_place_setitems(graph, partition.steps)
        self.fused_repeats = fused_repeats(graph, self.in_place)
        #: each step's lines, without the ``del`` after it (the scheduler's streams run them)
        self.step_lines: list[list[str]] = []
        for i, step in enumerate(partition.steps):
            start = len(body)
            if isinstance(step, FusionGroup):
                self._kernel_call(step, kernels[step], ns, body)
            else:
                self._numpy_call(step, ns, body)
                # a draw has advanced its generator: from here a failing kernel must not rerun
                # the whole call (it would draw again), only its own group
                self._writes_started |= getattr(step.target, "impure", False)
            self.step_lines.append(body[start:])
            if dead_after.get(i):
                # free temporaries at once: NumPy reuses their memory for the next allocation,
                # where fresh pages would cost a page fault each
                body.append(f"del {', '.join(dead_after[i])}")
        sizes = symbol_reads(graph, set(ns.symbols) - ns.unbacked, ns.symbol)
        self.symbols = dict(ns.symbols)  # sizes read per call (the scheduler leaves those)
        self.render = ns.render
        ns.values.update(_fell_back=False, _direct=True, _own=_own_copy, _calm=ufuncs_cannot_raise,
                         _parallel_from=threads.PARALLEL_MIN_ELEMENTS,
                         _eager=eager, _fallback=self._fallback,
                         _group_failed=self._group_failed,
                         _empty=np.empty, _take=take_buffer, _errstate=errstate.current,
                         _default_errstates=errstate.DEFAULT_STATES,
                         _kernels_may_run=errstate.kernels_may_run)
        arglist = ", ".join(params)
        call = f"({arglist},)" if len(params) == 1 else f"({arglist})"
        lines = [
            f"def forward({arglist}):",
            # under a user's np.errstate NumPy itself must raise or warn: the eager backend
            "    if _fell_back or (_errstate() not in _default_errstates"
            " and not _kernels_may_run()):",
            f"        return _eager({arglist})",
            *("    " + line for line in sizes),
            *("    " + line.replace("$ARGS", call) for line in body),
            f"    return {ns.render(out)}",
        ]
        self.source = "\n".join(lines) + "\n"
        self.globals = {"__name__": "npdynamo.backends.numba.generated", **ns.values}
        self.fn: Callable[..., tuple] = define(self.source, "forward", self.globals,
                                               filename="<npdynamo-numba-program>", lines=False)

    @property
    def has_parallel_kernels(self) -> bool:
        """Whether some kernel has a parallel version (``set_parallel`` then matters)."""
        return any(name.endswith("_parallel") for name in self.kernel_names)

    def set_parallel(self, enabled: bool) -> None:
        """Let kernels with a parallel version use it from ``PARALLEL_MIN_ELEMENTS`` elements
        (the default), or run every kernel serially (``enabled=False``)."""
        self.globals["_parallel_from"] = threads.PARALLEL_MIN_ELEMENTS if enabled else sys.maxsize

    def _kernel_call(self, group: FusionGroup, kernel: tuple[KernelSource, Callable],
                     ns: _Namespace, body: list[str]) -> None:
        ks, dispatcher = kernel[:2]
        for name, (node, d, offset) in ks.unbacked().items():  # read from the slice given
            body.append(f"{ns.symbol(name)} = {node.name}.shape[{d}] - {offset}")
            ns.unbacked.add(name)
        kname = ns.bind(dispatcher, f"kernel{group.index}")
        callee = kname
        if len(kernel) == 4:
            # serial and parallel versions: the concrete size picks one per call
            pname = ns.bind(kernel[3], f"kernel{group.index}_parallel")
            size = ns.render(group.size)
            callee = f"({pname} if {size} >= _parallel_from else {kname})"
            if pname not in self.kernel_names:
                self.kernel_names.append(pname)
        if kname not in self.kernel_names:  # identical groups share one kernel
            self.kernel_names.append(kname)
        args = []
        buffer_of = {}  # an input the kernel stores into -> the array passed for it
        for node, holder in ks.into.items():
            # only into memory the kernel can index as its own; else into a copy, which the
            # kernel reads and writes as it would the input
            calm = " and _calm()" if group.index in self._calm_only else ""
            body.append(f"{node.name} = {holder.name} if _direct and "
                        f"{holder.name}.flags.c_contiguous and {holder.name}.flags.writeable"
                        f"{calm} else _own({holder.name})")
            buffer_of[holder] = node.name
        for arg in ks.args:
            if arg.kind == "input":
                args.append(buffer_of.get(arg.value, arg.value.name))
            elif arg.kind == "const":
                args.append(ns.bind(arg.value, "const"))
            elif arg.kind in ("extent", "size"):
                args.append(ns.render(arg.value))
            else:
                node = arg.value
                meta: ArrayMeta = node.meta["val"]
                dtype = ns.bind(meta.dtype, str(meta.dtype))
                shape = _shape_expr(meta, ks, ns)
                nbytes = meta.nbytes
                if type(nbytes) is not int:  # decided per call from the concrete size
                    slot = ns.bind([], f"slot_{node.name}")
                    body.append(f"{node.name} = _take({slot}, {shape}, {dtype}) if "
                                f"{ns.render(nbytes)} >= {REUSE_MIN_BYTES} else "
                                f"_empty({shape}, {dtype})")
                elif nbytes >= REUSE_MIN_BYTES:
                    slot = ns.bind([], f"slot_{node.name}")
                    body.append(f"{node.name} = _take({slot}, {shape}, {dtype})")
                else:
                    body.append(f"{node.name} = _empty({shape}, {dtype})")
                args.append(node.name)
        # A kernel raises only when numba fails (e.g. compiling for new argument types), before
        # it writes anything: the try costs nothing when nothing is raised, and NumPy calls
        # stay outside it. Until an input may have been written directly (or a generator
        # drawn from) the whole call reruns on the eager backend; from then on the group's
        # values are recomputed by NumPy into its buffers (its inputs are still intact: each
        # written input is read by its own kernel only).
        body += ["try:", f"    {callee}({', '.join(args)})", "except Exception as exc:"]
        if not self._writes_started:
            body.append(f"    return _fallback(exc, $ARGS, {group.index})")
        else:
            body += ["    " + line for line in self._numpy_group(group, ns)]
        self._writes_started = self._writes_started or any(
            node in self.direct_writes for node in group.outputs)
        for node in group.outputs:
            if node.meta["val"].scalar:
                body.append(f"{node.name} = {node.name}[()]")  # a NumPy scalar, as NumPy gives

    def _numpy_call(self, node: Node, ns: _Namespace, body: list[str],
                    names: dict[Node, str] | None = None) -> None:
        # a loop node may carry its compiled loop (``loop_program``) in place of the Python one
        if names is None and (node in self.in_place or node in self.fused_repeats):
            self._assignment(node, ns, body)
            return
        impl = node.meta.get("numba_impl") or getattr(node.target, "impl", node.target)
        fn = ns.bind(impl, getattr(node.target, "name", "op"))
        if isinstance(impl, LoopCall):  # its warm path, once a compiled call made one
            fn += ".run"
        parts = [ns.render(a, names) for a in node.args]
        parts += [f"{k}={ns.render(v, names)}" for k, v in node.kwargs.items()]
        target = names[node] if names else node.name
        body.append(f"{target} = {fn}({', '.join(parts)})")

    def _assignment(self, node: Node, ns: _Namespace, body: list[str]) -> None:
        """An in-place ``setitem`` (``assignments``): assign, then name the array as its result.
        A repeat it assigns binds its source array under its own name (kept alive until the
        assignment, its only use, which repeats it into its slice)."""
        if node in self.fused_repeats:
            body.append(f"{node.name} = {ns.render(node.args[0])}")
            return
        target, index, value = (ns.render(a) for a in node.args)
        if node.args[2] in self.fused_repeats:
            repeat = node.args[2]
            count = repeat.kwargs.get("repeats", repeat.args[1] if len(repeat.args) > 1 else None)
            fn = ns.bind(assign_repeat, "assign_repeat")
            body.append(f"{fn}({target}[{index}], {value}, {count!r})")
        else:
            body.append(f"{target}[{index}] = {value}")
        body.append(f"{node.name} = {target}")

    def _numpy_group(self, group: FusionGroup, ns: _Namespace) -> list[str]:
        """Lines computing ``group``'s values with NumPy into its output buffers."""
        names = {}
        for node in group.nodes:
            names[node] = f"_np_{node.name}"
            ns.taken.add(names[node])
        lines = [f"_group_failed(exc, {group.index})"]
        for node in group.nodes:
            self._numpy_call(node, ns, lines, names)
        copyto = ns.bind(np.copyto, "copyto")
        lines += [f"{copyto}({node.name}, {names[node]})" for node in group.outputs]
        return lines

    def _fallback(self, exc: BaseException, args: tuple, group_index: int) -> tuple:
        """A kernel failed before any input was written: this call reruns on the eager backend,
        and so do later calls."""
        self._group_failed(exc, group_index)
        return self.eager(*args)

    def _group_failed(self, exc: BaseException, group_index: int) -> None:
        """A kernel failed after an input may have been written: this call goes on with NumPy
        for that group, later calls run on the eager backend."""
        self.globals["_fell_back"] = True
        lines = str(exc).strip().splitlines()
        self.on_fallback(group_index, f"{type(exc).__name__}: {lines[0] if lines else ''}")

    def warm_up(self, example_inputs: list, progress: Callable[[int, float], None]) -> None:
        """Run once on the example inputs so every kernel compiles now (timed one by one)."""
        saved = {name: self.globals[name] for name in self.kernel_names}

        def timed(index: int, dispatcher: Callable) -> Callable:
            def call(*args):
                start = time.perf_counter()
                try:
                    return dispatcher(*args)
                finally:
                    progress(index, time.perf_counter() - start)

            return call

        for i, name in enumerate(self.kernel_names):
            self.globals[name] = timed(i, saved[name])
        saved["_errstate"] = self.globals["_errstate"]
        self.globals["_errstate"] = lambda: errstate.DEFAULT  # run the kernels, errors ignored
        # the example inputs are the caller's own arrays: compute into fresh buffers
        saved["_direct"], self.globals["_direct"] = self.globals["_direct"], False
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("ignore", NumbaWarning)
                self.fn(*example_inputs)
                if self.has_parallel_kernels:  # the serial versions too (the tuner runs them)
                    self.set_parallel(False)
                    self.fn(*example_inputs)
        finally:
            self.globals.update(saved)
            self.set_parallel(True)
