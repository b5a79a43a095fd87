"""The numba side of the tiers: what the preparing thread and the switch do (``front``).

``prepare`` (in ``front``'s thread) builds the graph's program (fusion, kernel sources, kernel
modules: no compile) and ``submit``s its kernels to the compile workers, unless every kernel
is in the disk cache already (a load takes milliseconds), the cache is not writable, or the
payload does not pickle: then the switch compiles here. The graph's kernels are split into up
to ``workers.max_workers()`` parts of two kernels at least, one job each, so its independent
kernels compile side by side; the jobs of different graphs share the same workers.

``finish`` is the switch, in the caller's thread once the jobs have ended: ``Built.finish()``,
whose warm-up run now *loads* each kernel from the disk cache, then the tuner as on any first
calls. A job that failed (a worker killed or crashed, an error in it) costs one
``CompileWorkerWarning``, and the switch compiles what is missing here, as without tiers; jobs
a fork cut off are submitted again by the child. A graph the worker could not compile (numba's
fallback) stays on the eager backend with the backend's usual warning, not compiled again here.

Symbolic sizes refuse to pickle in general (their identity belongs to a capture); a payload's
graph is only compiled, so they are pickled by structure (``dumps``).
"""

from __future__ import annotations

import io
import pickle
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npdynamo import config, progress
from npdynamo.backends.numba import backend, diskcache, front, workers
from npdynamo.backends.report import Compiled, as_compiled
from npdynamo.errors import CompileWorkerWarning
from npdynamo.fx.graph_module import GraphModule
from npdynamo.logs import get_logger
from npdynamo.ops.symbolic import SymInt

if TYPE_CHECKING:
    from npdynamo.backends.numba.backend import Built


class Jobs:
    """The jobs of one graph's parts, seen as one."""

    def __init__(self, jobs: list[workers.CompileJob]) -> None:
        self.jobs = jobs

    def done(self) -> bool:
        return all(job.done() for job in self.jobs)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in self.jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not job.wait(left):
                return False
        return True

    def status(self) -> str:
        done = sum(job.kernels[0] for job in self.jobs)
        total = sum(job.kernels[1] for job in self.jobs)
        text = f"kernels {done}/{total}" if total else "kernels 0/?"
        return f"{text} ({len(self.jobs)} parts)" if len(self.jobs) > 1 else text


def submit(built: Built) -> Jobs | None:
    """Start compiling ``built``'s kernels in workers; ``None``: compile now instead."""
    if diskcache.cache_dir() is None or _on_disk(built.report):
        return None
    names = built.program.kernel_names
    # a graph with loop programs or subgraphs compiles in one part (every part would run them)
    whole = built.report.subgraphs or built.report.compiled_loops()
    # at least two kernels a part (a second worker's start-up costs about one kernel's
    # compile), a group's serial and parallel versions in one part (``kernel_shares``)
    groups = len({name.removesuffix("_parallel") for name in names})
    parts = 1 if whole else max(1, min(workers.max_workers(), len(names) // 2, groups))
    try:
        payloads = [dumps(built.gm, built.example_inputs, part, parts)
                    for part in range(parts)]
    except Exception as exc:  # an input or constant that does not pickle: compile here
        get_logger("tiers").debug("graph compiled in the caller's process: its payload does "
                                  "not pickle (%s: %s)", type(exc).__name__, exc)
        return None
    return _submit(payloads)


#: the knobs copied into the worker (capture's knobs do not matter to a backend)
_CONFIG = ("verbose",)


def _symint(terms: Any, hint: Any) -> SymInt:
    value = object.__new__(SymInt)
    value.terms, value.hint = terms, hint
    return value


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is SymInt:
            return _symint, (obj.terms, obj.hint)
        if type(obj) is GraphModule:  # its generated function is made again on the other side
            return GraphModule, (obj.graph, obj.name)
        return NotImplemented


def dumps(gm: GraphModule, example_inputs: list, part: int = 0, parts: int = 1) -> bytes:
    """The payload of one job (raises whatever pickling raises: then there is no job)."""
    buffer = io.BytesIO()
    settings = {name: getattr(config, name) for name in _CONFIG}
    # the environment as it is now (a warm worker was started under an earlier one): where the
    # cache is, the thread policy
    settings["environ"] = config.worker_environment()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
        (gm, example_inputs, settings, part, parts))
    return buffer.getvalue()


def _submit(payloads: list[bytes]) -> Jobs:
    what = progress.current_what()
    return Jobs([workers.pool().submit(payload, what) for payload in payloads])


def _on_disk(report: Any) -> bool:
    """Whether every kernel and loop program of the graph (its subgraphs' too) has machine code
    in the disk cache already."""
    loops = [record.dispatcher for record in report.compiled_loops()]
    for dispatcher in [*report.dispatchers, *loops]:
        cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
        index = getattr(cache_file, "_index_path", None)
        if index is None or not Path(index).exists():
            return False
    return all(_on_disk(sub) for _, sub in report.subgraphs if sub is not None)


def prepare(pending: Any) -> None:
    """The preparing thread's work (``front``): build the graph's program, send its kernels to
    the workers unless they are on disk or cannot be sent (then the switch finishes here)."""
    with front.fork_guard:  # (a fork waits for the build: it takes numba's locks)
        built = backend.build(pending.gm, pending.example_inputs, pending.report, pending.eager)
    pending.built = built
    if built.warm:
        pending.jobs = submit(built)


def finish(pending: Any, tiered: Any, begun: float, shown: Any) -> Compiled | None:
    """The switch (in the caller's thread): the compiled tier's callable, or ``None`` when a
    fork cut the workers' jobs off and they were submitted again."""
    report, jobs = pending.report, pending.jobs
    failed = [job for job in jobs.jobs if job.status != workers.DONE] if jobs else []
    if any(job.status == workers.FORKED for job in failed):
        pending.jobs = _submit([job.payload for job in jobs.jobs])
        return None
    problem = (f"preparing its compiled tier failed ({pending.error})"
               if pending.error not in (None, "forked") else
               str(failed[0].result) if failed else None)
    if problem is not None:
        label = failed[0].label if failed else "a graph"
        warnings.warn(f"npdynamo: {problem}; the kernels of {label} compile in this process "
                      "instead", CompileWorkerWarning, stacklevel=3)
    answers = [job.result for job in jobs.jobs if job.status == workers.DONE] if jobs else []
    refused = [a for a in answers if a.get("fell_back")]
    try:
        if refused:  # numba could not compile it there: it would not here either
            backend.fall_back(report, refused[0].get("reason") or "failed in a compile worker",
                              pending.gm.graph.nodes)
            fn = pending.eager
        else:
            built = pending.built
            if built is None:  # never built (an error, a fork): the whole compile here
                built = backend.build(pending.gm, pending.example_inputs, report, pending.eager)
            fn = built.finish()
    except Exception as exc:  # never fail the user: any error means the eager backend
        backend.fall_back(report, f"{type(exc).__name__}: {exc}", pending.gm.graph.nodes)
        fn = pending.eager
    fn = as_compiled(fn)
    if fn.report is not report:
        fn = fn.with_report(report)
    calls = tiered.eager_calls
    took = time.perf_counter() - begun
    report.compile_time_s = took
    ran = "call 1" if calls == 1 else f"calls 1-{calls}"
    text = (f"the compiled tier took over at call {calls + 1}, {took:.1f} s after capture "
            f"({ran} ran on the eager tier)" if calls else
            f"the compiled tier took over before its first call, {took:.1f} s after capture")
    report.tier = text
    shown.finished(text)
    return fn


front.install(prepare, finish)
