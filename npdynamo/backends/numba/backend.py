"""The ``numba`` backend: graph passes, fusion, kernel generation, disk cache, one program.

``numba_backend(gm, example_inputs)`` simplifies a copy of the graph (``fx.passes``), partitions
it into fusion groups, generates and loads one kernel per group, builds the graph's program and
runs it once on the example inputs so every kernel is compiled before the first real call. It
returns a ``Compiled`` (``backends/report``) whose report is a ``NumbaReport`` for ``explain``.
Whatever goes wrong (an op numba cannot type, an LLVM error, a bug here) the graph runs on the
eager backend instead, with one warning naming the kernel's ops and the reason: the backend
never fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo import progress
from npdynamo.backends import scheduler, tuning
from npdynamo.backends.constant_operands import tuple_operands_as_arrays
from npdynamo.backends.eager import eager_forward
from npdynamo.backends.inplace import may_alias
from npdynamo.backends.numba import diskcache, front, histograms, nonzero, scans, threads
from npdynamo.backends.numba.codegen import generate_kernel
from npdynamo.backends.numba.direct_writes import direct_writes, needs_calm_state
from npdynamo.backends.numba.fusion import partition
from npdynamo.backends.numba.loop_program import loop_programs, whole_graph_program
from npdynamo.backends.numba.magnitudes import expand_abs_compares
from npdynamo.backends.numba.masked_loops import expand_masked_reductions
from npdynamo.backends.numba.moments import expand_moments
from npdynamo.backends.numba.program import Program
from npdynamo.backends.numba.region_writes import expand_region_writes
from npdynamo.backends.numba.report import TUNING_PENDING, NumbaReport  # noqa: F401
from npdynamo.backends.numba.subgraphs import compile_subgraphs
from npdynamo.backends.report import Compiled
from npdynamo.errors import NumbaFallbackWarning
from npdynamo.fx import passes
from npdynamo.fx.graph import Graph
from npdynamo.fx.subgraphs import under_errstate
from npdynamo.fx.user_lines import warn_at
from npdynamo.logs import get_logger
from npdynamo.ops.meta import ArrayMeta, ScalarMeta


def numba_backend(gm, example_inputs: list) -> Compiled:
    """Compile ``gm`` into fused numba kernels; see the module docstring."""
    tiered = front.start(gm, example_inputs)
    if tiered is not None:  # the eager tier runs until the workers' kernels are on disk
        return tiered
    report = NumbaReport()
    start = time.perf_counter()
    eager = eager_forward(gm)  # the eager backend's code: a candidate, and the fallback
    if under_errstate(gm.graph):
        # kernels report no floating-point errors, where an op in the user's np.errstate
        # block raises, warns or stays silent as that block says: NumPy runs the graph
        report.reason = "ops inside a `with np.errstate(...)` block run on the eager backend"
        fn = Compiled(eager, report)
        report.compile_time_s = time.perf_counter() - start
        return fn
    try:
        fn = build(gm, example_inputs, report, eager).finish()
    except Exception as exc:  # never fail the user: any error means the eager backend
        fall_back(report, f"{type(exc).__name__}: {_first_line(exc)}", gm.graph.nodes)
        fn = Compiled(eager, report)
    report.compile_time_s = time.perf_counter() - start
    return fn


def _control_flow(node) -> bool:
    """A while_loop/fori_loop/cond node (its op takes subgraphs; by now they are compiled
    callables), or the taking of one of its results."""
    if getattr(node.target, "subgraph_inputs", None) is not None:
        return True
    source = node.args[0] if node.args else None
    return getattr(node.target, "name", None) == "tuple_item" and getattr(
        getattr(source, "target", None), "subgraph_inputs", None) is not None


def compile_for_cache(gm, example_inputs: list, part: int = 0, parts: int = 1,
                      log: list | None = None, signatures: dict | None = None) -> Compiled:
    """A compile worker's work (``compile_worker``): the blocking compile of ``gm``, kernels
    run once on the example inputs even where the graph draws random numbers (nothing here is
    the user's), only the kernels of ``part`` of ``parts`` compiled. ``log`` gets (time,
    event) pairs: the program built, each kernel of the part compiled; ``signatures`` the
    argument types each of them was compiled for, by kernel name (the caller loads those)."""
    report = NumbaReport()
    eager = eager_forward(gm)
    built = build(gm, example_inputs, report, eager)
    compiles = bool(built.program.kernel_names) or bool(report.compiled_loops())
    built.warm = compiles and _concrete(example_inputs, built.graph, impure_ok=True)
    built.part = (part, parts)
    built.log = log
    if log is not None:
        log.append((time.time(), f"program built ({report.kernels} kernels)"))
    fn = built.finish()
    if signatures is not None:
        share = kernel_shares(built.program.kernel_names, parts)
        for name in built.program.kernel_names:
            compiled = getattr(built.program.globals.get(name), "signatures", None)
            if share[name] == part and compiled:
                signatures[name] = list(compiled)
        for i, record in enumerate(loop_records(report)):  # a graph with loops goes whole
            compiled = getattr(record.dispatcher, "signatures", None)
            if part == 0 and compiled:
                signatures[f"{LOOP_PREFIX}{i}"] = list(compiled)
    return fn


#: how a loop program's signatures are named in a worker's answer (``LOOP_PREFIX`` + its index
#: in ``loop_records``): the caller loads them with the kernels, off its calls' thread
LOOP_PREFIX = "loop:"


def loop_records(report: NumbaReport) -> list:
    """The graph's loop programs (and its whole-graph function), in an order the worker's build
    and the caller's share (the same graph builds the same program)."""
    return [r for r in [*report.loops, report.whole] if r is not None]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def fall_back(report: NumbaReport, reason: str, nodes) -> None:
    """Run on eager from now on, warning once at the user's line of the first op (``nodes``)."""
    if report.fell_back:
        return
    report.fell_back = True
    report.reason = reason
    warn_at(nodes, f"npdynamo: the numba backend could not compile a graph, so it runs on the "
            f"eager backend (NumPy): {reason}", NumbaFallbackWarning, stacklevel=3)


def prepare_graph(graph: Graph) -> Graph:
    """A simplified copy of ``graph`` for code generation (the input graph is not changed)."""
    graph, _ = graph.copy()
    tuple_operands_as_arrays(graph)
    expand_region_writes(graph)
    expand_masked_reductions(graph)
    expand_moments(graph)
    expand_abs_compares(graph)
    histograms.attach(graph)
    nonzero.attach(graph)
    scans.attach(graph)
    return passes.run_pipeline(graph, "codegen")


@dataclass
class Built:
    """A graph's program, built but not yet run: ``finish()`` compiles (or loads) its kernels
    on the example inputs and tunes it. The tiered backend calls it once a worker has put
    the kernels in the disk cache, so that it only loads them."""

    gm: object
    example_inputs: list
    report: NumbaReport
    eager: Callable[..., tuple]
    graph: Graph
    program: Program
    #: whether finishing runs the kernels on the example inputs (compiling them now)
    warm: bool
    #: (part, parts) of a compile worker: only the kernels of that part compile
    part: tuple[int, int] = (0, 1)
    #: the program's kernel name -> positions of its output arguments
    outputs: dict[str, list[int]] = field(default_factory=dict)
    #: the fusion partition and its kernels, from which the scheduler offers its form
    fusion: object = None
    kernels: dict = field(default_factory=dict)
    #: a compile worker's job log: (time, event) of each kernel compiled (``compile_worker``)
    log: list | None = None

    def finish(self, eager_best: float | None = None) -> Compiled:
        """Compile or load the kernels and tune; ``eager_best``: the eager graph's fastest call
        so far on these inputs' sizes (its tier's calls while compiling), which the tuner then
        does not time again unless it might win."""
        log = get_logger("output_code")
        if self.warm:
            _warm_up(self.program, self.example_inputs, self.gm, log, self)
        # (its streams order steps by what they read and make: an assignment in place would
        # also have to wait for every earlier reader of its array, which they do not track)
        scheduled = None if self.program.in_place else scheduler.program_candidate(
            self.program, self.graph, self.fusion, self.kernels, may_alias(self.graph),
            needs_calm_state(self.fusion))
        if scheduled is not None:
            scheduled.report.decision = ""  # the tuning line says it
            self.report.schedule = scheduled.report
        return _tuned(self.program, self.eager, self.report, self.graph, scheduled,
                      self.gm.graph, eager_best)


def build(gm, example_inputs: list, report: NumbaReport, eager: Callable[..., tuple]) -> Built:
    """The graph's ``Built`` program: passes, fusion, kernel sources and modules, no compile."""
    graph = prepare_graph(gm.graph)
    # a loop the loop writer can express runs as one compiled function; the subgraphs are
    # compiled on their own too (called by the Python loop each iteration when it cannot)
    report.loops = loop_programs(graph, prepare_graph)
    # control flow at the top level with scalar code around it (a loop's peeled first
    # iteration): the whole graph as one compiled function, the program where it cannot run
    whole = whole_graph_program(graph, prepare_graph)
    report.subgraphs = compile_subgraphs(graph, numba_backend)
    part = partition(graph)
    allowed, report.thread_policy = threads.graph_allows_parallel(graph)
    kernels = {}
    log = get_logger("output_code")
    writes = direct_writes(graph, part)
    for group in part.groups:
        choice = threads.parallel_choice(allowed, group.size)
        # a kernel allowed to run in parallel gets a serial version too: the program picks one
        # per call, and the tuner may find serial faster on this machine (a busy core)
        variants = [False] if choice is False else [False, True]
        entry: tuple = ()
        for parallel in variants:
            into = {node: writes[node] for node in group.outputs if node in writes}
            ks = generate_kernel(group, parallel, into)
            module, path, source = diskcache.load_kernel_module(ks.source)
            entry += (ks, module.kernel)
            if path not in report.kernel_files or path == "<memory>":
                log.info("numba kernel %d (%s):\n%s", group.index, path, source)
            report.kernel_files.append(path)
        if len(entry) == 4 and [(a.name, a.kind) for a in entry[0].args] != \
                [(a.name, a.kind) for a in entry[2].args]:
            # not interchangeable: the policy's version for every size
            entry, choice = (entry[2:], True) if choice else (entry[:2], False)
        kernels[group] = entry
        report.groups.append(group.op_names)
        report.group_nodes.append(tuple(n.name for n in group.nodes))
        report.parallel.append(choice)
    report.kernels = len(part.groups)
    distinct = {id(k[1]): k[1] for k in kernels.values()}
    report.distinct = len(distinct)
    distinct.update({id(k[3]): k[3] for k in kernels.values() if len(k) == 4})
    report.dispatchers = list(distinct.values())
    # a loop or branch node is reported by its loop record and its subgraphs' lines, not as
    # a NumPy call (it is not one: numba runs its loop, or its branches' kernels)
    report.not_fused = [(n.name, why) for n, why in part.not_fused.items()
                        if not _control_flow(n)]
    report.compiled_calls = [n.name for n in part.not_fused
                             if "numba_impl" in n.meta and not _control_flow(n)]

    def on_fallback(group_index: int, reason: str) -> None:
        ops = ", ".join(part.groups[group_index].op_names)
        fall_back(report, f"the kernel of ops [{ops}] failed: {reason}",
                  part.groups[group_index].nodes)

    program = Program(graph, part, kernels, eager, on_fallback)
    if program.fused_repeats:  # (assignments.py: its own compiled loop, no repeated array)
        fused = {n.name for n in program.fused_repeats}
        report.not_fused = [(name, "repeat: its own compiled loop, into the slice it is assigned to"
                             if name in fused else why) for name, why in report.not_fused]
        report.compiled_calls += sorted(fused)
    if whole is not None:
        whole.program = program.fn
        program.fn = whole.forward
        report.whole = whole.record
    report.direct_writes = sorted(program.direct_writes.values())
    log.info("numba program for graph %s:\n%s", gm.name, program.source)
    outputs = {}
    for entry in kernels.values():
        for ks, dispatcher in zip(entry[::2], entry[1::2]):
            outputs[id(dispatcher)] = [i for i, a in enumerate(ks.args) if a.kind == "output"]
    outputs = {name: outputs.get(id(program.globals[name]), [])
               for name in program.kernel_names}
    compiles = bool(part.groups) or bool(report.compiled_loops())
    return Built(gm, example_inputs, report, eager, graph, program,
                 compiles and _concrete(example_inputs, graph), outputs=outputs,
                 fusion=part, kernels=kernels)


def _tuned(
    program: Program, eager: Callable[..., tuple], report: NumbaReport, graph: Graph,
    scheduled: scheduler.Candidate | None = None, eager_graph: Graph | None = None,
    eager_best: float | None = None,
) -> Compiled:
    """The program, or (``tuning``) whichever of its parallel and serial forms, its scheduled
    form (independent steps side by side) and the eager graph runs this graph fastest on its
    first warm calls."""
    if (not program.kernel_names and not report.loops and not report.subgraphs
            and not report.compiled_calls):
        # nothing for numba to run: the eager backend's code is the same NumPy calls, with its
        # in-place writes (``z = np.zeros(...); z[:, :, 0] = x`` assigns, not copies)
        report.tuning = "no kernels: runs as the eager graph (NumPy calls only)"
        if eager_graph is not None:  # its independent calls side by side, when measured faster
            tuned = scheduler.tuned_eager(eager_graph, eager, may_alias(eager_graph))
            report.schedule = tuned.report
            return tuned.with_report(report)
        return Compiled(eager, report)
    # (a graph whose only kernels are its loops' or branches' is tuned like any other: the
    # eager graph's loops write their carried arrays in place, and may well be faster)
    if _has_symbolic_sizes(graph):
        # what is fastest at the first calls' sizes says nothing about other sizes: the
        # thread policy decides per call from the concrete size instead
        report.tuning = "not tuned (its sizes vary per call: parallel chosen per call by size)"
        return Compiled(program.fn, report)
    if scheduled is not None and scheduler.mode() == "always":
        report.tuning = "runs scheduled (NPDYNAMO_SCHEDULE=always: not timed)"
        return Compiled(scheduled.run, report)
    if not tuning.tuning_enabled():
        report.tuning = "not tuned (NPDYNAMO_NUMBA_TUNE=0)"
        return Compiled(program.fn, report)
    # the NumPy graph first in each round: its allocations slow the kernels run after it, and
    # once it is dropped (usually after the first timed round) no round ends with it. It holds
    # the GIL between its NumPy calls, where the program's kernels (``nogil``) release it: it
    # must win by ``tuning.GIL_MARGIN`` (a loader thread beside the step needs the GIL)
    candidates = [tuning.Candidate("eager", eager, holds_gil=True)]
    if program.has_parallel_kernels:
        candidates += [
            tuning.Candidate("numba parallel", program.fn, lambda: program.set_parallel(True)),
            tuning.Candidate("numba serial", program.fn, lambda: program.set_parallel(False)),
        ]
    else:
        candidates.append(tuning.Candidate("numba", program.fn))
    if scheduled is not None:
        candidates.append(tuning.Candidate("numba scheduled", scheduled.run, side_by_side=True))

    def record(text: str) -> None:
        report.tuning = text

    measured = {} if eager_best is None else {"eager": eager_best}
    return tuning.fastest_of(candidates, record, report=report, measured=measured)


def _has_symbolic_sizes(graph: Graph) -> bool:
    return any(type(d) is not int for p in graph.placeholders
               for d in getattr(p.meta.get("val"), "shape", ()))


def _concrete(example_inputs: list, graph: Graph, impure_ok: bool = False) -> bool:
    if not impure_ok and any(getattr(n.target, "impure", False) for n in graph.nodes):
        return False  # running it at compile time would be visible (e.g. random state)
    return len(example_inputs) == len(graph.placeholders) and not any(
        isinstance(x, (ArrayMeta, ScalarMeta)) for x in example_inputs)


def _warm_up(program: Program, example_inputs: list, gm, log: logging.Logger,
             built: Built) -> None:
    """Compile every kernel now (one run on the example inputs), with progress when slow."""
    names = program.kernel_names
    part, parts = built.part
    if parts > 1:  # a worker's share: the other kernels only zero their outputs
        share = kernel_shares(names, parts)
        for name in names:
            if share[name] != part:
                program.globals[name] = _stand_in(built.outputs.get(name, []))
        names = [name for name in names if share[name] == part]
    progress.kernels(0, len(names))
    seen: set[int] = set()

    def compiled(index: int, seconds: float) -> None:
        if program.kernel_names[index] in names and index not in seen:
            seen.add(index)
            log.debug("numba: kernel %d/%d compiled or loaded in %.2f s", index + 1,
                      len(names), seconds)
            if built.log is not None:
                built.log.append((time.time(),
                                  f"kernel {program.kernel_names[index]} {seconds:.2f} s"))
            progress.kernels(len(seen), len(names))

    try:
        with progress.busy():
            program.warm_up(example_inputs, compiled)
    except Exception:  # noqa: S110 - a NumPy call raised: the real call raises it again
        pass


def kernel_shares(names: list[str], parts: int) -> dict[str, int]:
    """The part (of ``parts`` compile workers) that compiles each of a program's kernels: a
    group's serial and parallel versions go to one part, the groups round-robin. (Dealt by
    name, all parallel versions, which take longest to compile, went to the same worker.)"""
    groups: dict[str, int] = {}
    for name in names:
        groups.setdefault(name.removesuffix("_parallel"), len(groups))
    return {name: groups[name.removesuffix("_parallel")] % parts for name in names}


def _stand_in(outputs: list[int]) -> Callable:
    """A kernel that only zeroes its outputs (a compile worker's kernels of other parts)."""
    def kernel(*args):
        for i in outputs:
            args[i][...] = 0

    return kernel
