"""``npdynamo.inspect(fn)``: what a compiled function holds now, as public records.

Beside ``explain`` at the top of capture: where ``explain`` runs a function once under a fresh
capture, ``inspect`` reads the caches of a compiled function as its calls so far filled them
(its own entries and those of its resume functions, the code after each graph break): per entry
its guards, its graph (ops, generated code) and what the backend made of it (which backend, the
numba kernels compiled or loaded from the disk cache, compile times), or why it runs in Python;
and why the function was recompiled. Nothing here changes a cache.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

from npdynamo.autograd.aot import AOTReport
from npdynamo.backends.numba.report import NumbaReport
from npdynamo.backends.registry import backend_name
from npdynamo.capture.bytecode.generate import user_label
from npdynamo.capture.hooks.cache import cache_of, recompile_reasons
from npdynamo.capture.hooks.dispatch import original_function
from npdynamo.errors import InvalidArgument, user_location


@dataclass
class GraphInfo:
    """One compiled graph: its ops, its generated code and what the backend made of it."""

    #: the ``fx.GraphModule`` (``.code``, ``.print_tabular()``, ``.graph``)
    graph_module: object
    #: the name of the backend that compiled it (``"eager"``, ``"numba"``, or the callable's)
    backend: str
    #: the backend's report (numba: kernels, fusion groups, fallback reason), or None
    report: object = None

    @property
    def ops(self) -> list[str]:
        """The graph's ops, in order (``["sin", "add", ...]``)."""
        return [getattr(n.target, "name", str(n.target))
                for n in self.graph_module.graph.nodes if n.op == "call_function"]

    @property
    def code(self) -> str:
        """The Python the graph was generated as (what the eager backend runs)."""
        return self.graph_module.code

    @property
    def runs_on(self) -> str:
        """What runs the graph: ``numba kernels``, or NumPy calls and why."""
        report = self.report
        if not isinstance(report, NumbaReport):
            return f"{self.backend} backend"
        if report.fell_back:
            return f"NumPy calls (the numba backend fell back: {report.reason})"
        if (not report.kernels and not report.loops and not report.subgraphs
                and not report.compiled_calls):
            return "NumPy calls (nothing for numba to compile)"
        return f"numba: {report.kernels} kernel(s); {report.tuning}"

    @property
    def kernels(self) -> dict[str, int]:
        """Numba kernels of this graph (its fused groups and subgraphs): machine code
        ``compiled`` in this process and ``from_disk`` (the kernel cache); zeros elsewhere."""
        return _kernel_counts(self.report)

    @property
    def compile_time_s(self) -> float:
        """The backend's compile time for this graph (0 when the backend does not say)."""
        report = self.report
        return float(report.compile_time_s or 0.0) if isinstance(report, NumbaReport) else 0.0


@dataclass
class EntryInfo:
    """One cache entry: the guards under which it runs, and its graph or why it runs Python."""

    #: the user's function, ``"fit (from line 44)"`` for the code after a graph break
    function: str
    #: the guards, one readable line each (``x: ndarray float64 shape (3,)``)
    guards: list[str]
    graph: GraphInfo | None = None
    #: why this entry runs the frame in plain Python (None: it runs its graph)
    runs_python: str | None = None
    #: the graph break that ends this entry's graph, as ``explain`` reports it
    graph_break: object = None
    #: time spent capturing and compiling this entry
    compile_time_s: float = 0.0


@dataclass
class Inspection:
    """``npdynamo.inspect(fn)``: a compiled function's entries, graphs and recompiles."""

    function: str
    entries: list[EntryInfo] = field(default_factory=list)
    recompile_reasons: list[str] = field(default_factory=list)

    @property
    def graphs(self) -> list[GraphInfo]:
        return [e.graph for e in self.entries if e.graph is not None]

    @property
    def kernels(self) -> dict[str, int]:
        """Numba kernels of all the graphs: ``{"compiled": m, "from_disk": n}``."""
        total = {"compiled": 0, "from_disk": 0}
        for graph in self.graphs:
            for key, count in graph.kernels.items():
                total[key] += count
        return total

    @property
    def compile_time_s(self) -> float:
        return sum(e.compile_time_s for e in self.entries)

    def __str__(self) -> str:
        count = len(self.entries)
        lines = [f"{self.function}: {count} entr{'y' if count == 1 else 'ies'}, "
                 f"{len(self.graphs)} graph(s), compiled in {self.compile_time_s:.2f} s"]
        for i, entry in enumerate(self.entries, 1):
            what = (f"runs in Python: {entry.runs_python}" if entry.runs_python
                    else f"{len(entry.graph.ops)} ops on {entry.graph.runs_on}" if entry.graph
                    else "no graph")
            if entry.graph_break is not None:
                brk = entry.graph_break
                what += f"; graph break at line {brk.lineno}: {brk.reason}"
            lines.append(f"  {i}. {entry.function}: {what}; {len(entry.guards)} guard(s)")
        kernels = self.kernels
        if any(kernels.values()):
            lines.append(f"  numba kernels: {kernels['compiled']} compiled, "
                         f"{kernels['from_disk']} loaded from the disk cache")
        lines += [f"  recompiled: {reason}" for reason in self.recompile_reasons]
        return "\n".join(lines)


def inspect(fn) -> Inspection:
    """What the compiled function ``fn`` holds now (after its calls so far): see ``Inspection``.

    ``fn`` is what ``npdynamo.compile`` returned (or a method of an object whose class has one);
    a function never called yet has no entries."""
    cache = cache_of(fn)
    if cache is None:
        raise InvalidArgument(
            f"{user_location()}: npdynamo.inspect(fn) needs a function made by npdynamo.compile "
            f"(after a call), not {fn!r}; use npdynamo.explain(fn)(*args) for a plain function"
        )
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    original = original_function(target) or target
    name = getattr(original, "__qualname__", repr(original))
    backend = backend_name(cache.backend)
    entries = [_entry_info(e, user_label(cache.code), backend) for e in cache.entries]
    for call in list(cache.session.resume_calls.values()):
        if call.key.code is cache.code:
            entries += [_entry_info(e, user_label(call.code), backend) for e in call.entries]
    return Inspection(name, entries, recompile_reasons(fn))


def _entry_info(entry, label: str, backend: str) -> EntryInfo:
    graph = None
    if entry.graph_module is not None:
        report = entry.report
        graph = GraphInfo(entry.graph_module, backend,
                          None if isinstance(report, AOTReport) else report)
    return EntryInfo(label, list(entry.guard_set.describe()), graph, entry.runs_python,
                     entry.graph_break, entry.compile_time_s)


def _kernel_counts(report) -> dict[str, int]:
    counts = {"compiled": 0, "from_disk": 0}
    if not isinstance(report, NumbaReport):
        return counts
    for dispatcher in report.dispatchers:
        hits = sum(dispatcher.stats.cache_hits.values())
        counts["from_disk"] += hits
        counts["compiled"] += max(len(dispatcher.overloads) - hits, 0)
    for _name, inner in report.subgraphs:
        for key, count in _kernel_counts(inner).items():
            counts[key] += count
    return counts
