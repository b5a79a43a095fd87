"""What the numba backend did with one graph: ``NumbaReport``, shown by ``npdynamo.explain``.

Its own module, without numba: the tiered front (``front.py``) makes a graph's report before
numba is imported.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from npdynamo.backends.report import BackendReport


def _parallel_min_elements() -> object:
    threads = sys.modules.get("npdynamo.backends.numba.threads")  # loaded with any kernel
    return getattr(threads, "PARALLEL_MIN_ELEMENTS", "?")


#: ``NumbaReport.tuning`` before the first warm calls timed the candidates
TUNING_PENDING = ("the first warm calls time numba (parallel, serial) against NumPy calls and "
                  "keep the fastest")


@dataclass
class NumbaReport(BackendReport):
    """What the numba backend did with one graph (shown by ``npdynamo.explain``)."""

    kernels: int = 0
    distinct: int = 0  # kernels after sharing one among structurally identical groups
    groups: list[tuple[str, ...]] = field(default_factory=list)  # op names per fusion group
    group_nodes: list[tuple[str, ...]] = field(default_factory=list)  # node names, the same
    parallel: list[bool | None] = field(default_factory=list)  # per kernel; None: per call
    not_fused: list[tuple[str, str]] = field(default_factory=list)  # (node, why) run in NumPy
    #: nodes among ``not_fused`` that run a compiled loop of their own (histogram, scans)
    compiled_calls: list[str] = field(default_factory=list)
    thread_policy: str = ""
    fell_back: bool = False
    reason: str | None = None
    compile_time_s: float = 0.0
    kernel_files: list[str] = field(default_factory=list)
    subgraphs: list = field(default_factory=list)  # (name, NumbaReport) of branches, loop bodies
    #: per while_loop/fori_loop node: one compiled loop program, or the Python loop and why
    loops: list = field(default_factory=list)
    #: the whole graph as one compiled function (``loop_program.whole_graph_program``), or None
    whole: object = None
    #: inputs whose new values the trailing kernels compute straight into their own memory
    direct_writes: list[str] = field(default_factory=list)
    #: what the first warm calls chose (numba parallel / serial / eager) and their times
    tuning: str = TUNING_PENDING
    #: which tier ran its calls and when the compiled tier took over (tiered compiles only)
    tier: str = ""
    #: (seconds after capture, where, what): the caller's and the compile workers' steps to
    #: the compiled tier (tiered compiles only; ``jobs.timeline``)
    timeline: list = field(default_factory=list)
    #: the scheduled form offered to the tuner (``backends/scheduler.ScheduleReport``), or None
    schedule: object = None
    dispatchers: list = field(default_factory=list, repr=False)  # the distinct numba kernels

    def compiled_loops(self) -> list:
        """The records of the loop programs (and the whole graph's function) compiled."""
        return [r for r in [*self.loops, self.whole] if r is not None and r.compiled]

    def compiled_kernels(self) -> int:
        """Machine-code versions of this graph's kernels so far (compiled or loaded from the
        disk cache): one per kernel and argument types, never one per size."""
        return sum(len(d.overloads) for d in self.dispatchers)

    def is_empty(self) -> bool:
        """Nothing to report: no kernel, NumPy call, loop or subgraph (a branch passing its
        inputs through)."""
        return not (self.fell_back or self.kernels or self.not_fused or self.loops
                    or self.subgraphs or self.whole)

    def __str__(self) -> str:
        return self.describe()

    def describe(self, nested: bool = False) -> str:
        """The report's lines; ``nested`` (a subgraph's): no tuning line until one is chosen,
        as the enclosing graph's line says how it is."""
        if self.fell_back:
            return f"numba backend: fell back to eager ({self.reason})"
        shared = (f" ({self.distinct} distinct)" if 0 < self.distinct < self.kernels else "")
        lines = [f"numba backend: {self.kernels} kernel(s){shared}, {self.thread_policy}, "
                 f"compiled in {self.compile_time_s:.2f} s"]
        for ops, par in zip(self.groups, self.parallel):
            how = ("parallel" if par else "serial") if par is not None else \
                f"parallel from {_parallel_min_elements()} elements, chosen per call"
            lines.append(f"  kernel ({how}): {', '.join(ops)}")
        for name, why in self.not_fused:
            lines.append(f"  NumPy call {name}: {why}")
        lines += [f"  {record}" for record in self.loops]
        if self.whole is not None:
            lines.append(f"  {self.whole}")
        for name, report in self.subgraphs:
            if report is None or report.is_empty():
                continue  # a branch with no ops: nothing was compiled for it
            inner = report.describe(nested=True).splitlines()
            lines.append(f"  subgraph {name}: {inner[0]}")
            lines += [f"  {line}" for line in inner[1:]]
        if self.direct_writes:
            lines.append(f"  written in place by the kernels: {', '.join(self.direct_writes)}")
        if self.schedule is not None:
            lines += [f"  {line}" for line in str(self.schedule).splitlines()]
        if self.kernels and not (nested and self.tuning == TUNING_PENDING):
            lines.append(f"  {self.tuning}")
        if self.tier:
            lines.append(f"  tiers: {self.tier}")
        return "\n".join(lines)
