"""The numba side of the tiers: what the preparing thread and the switch do (``front``).

``prepare`` (in ``front``'s thread, after it has sent the graph to the compile workers:
``jobs.send``) imports numba, builds the graph's program (fusion, kernel sources, kernel
modules: no compile) while the workers compile, and settles the jobs with what it found: the
parts with no kernel are withdrawn, and all of them when every kernel is in the disk cache
already (a load takes milliseconds) or the graph has nothing to compile; then the switch
finishes here.

Once the jobs have ended, the thread loads their kernels from the disk cache
(``_load_when_compiled``). ``finish`` is the switch, in the caller's thread after that:
``Built.finish()``, whose warm-up run finds every kernel loaded, then the tuner as on any first
calls. A job that failed (a worker killed or crashed, an error in it) costs one
``CompileWorkerWarning``, and the switch compiles what is missing here, as without tiers; jobs
a fork cut off are submitted again by the child. A graph the worker could not compile (numba's
fallback) stays on the eager backend with the backend's usual warning, not compiled again here.
The switch also puts the graph's timeline in its report (``jobs.timeline``).
"""

from __future__ import annotations

import contextlib
import queue
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npdynamo.backends.numba import backend, diskcache, front, jobs, workers
from npdynamo.backends.report import Compiled, as_compiled
from npdynamo.errors import CompileWorkerWarning

if TYPE_CHECKING:
    from npdynamo.backends.numba.backend import Built


def _on_disk(report: Any) -> bool:
    """Whether every kernel and loop program of the graph (its subgraphs' too) has machine code
    in the disk cache already."""
    loops = [record.dispatcher for record in report.compiled_loops()]
    for dispatcher in [*report.dispatchers, *loops]:
        index = diskcache.cache_index(dispatcher)
        if index is None or not Path(index).exists():
            return False
    return all(_on_disk(sub) for _, sub in report.subgraphs if sub is not None)


def prepare(pending: Any) -> None:
    """The preparing thread's work (``front``), once the graph's jobs are out: build the
    graph's program, settle the jobs with it (the switch finishes here without them)."""
    pending.note("numba imported")
    with front.numba_step():  # (a fork waits for the build: it takes numba's locks)
        built = backend.build(pending.gm, pending.example_inputs, pending.report, pending.eager)
    pending.built = built
    pending.note(f"program built ({built.report.kernels} kernels)")
    sent = pending.jobs
    if sent is None:
        return
    if not built.warm or _on_disk(built.report):
        # (a worker that has taken a job skips it, or its answer is dropped: nobody waits)
        sent.keep(set())
        pending.note("jobs withdrawn: " + ("kernels on disk" if built.warm else
                                           "nothing to compile here"))
        return
    if len(sent.jobs) > 1:
        sent.keep(jobs.parts_with_kernels(built.program.kernel_names, len(sent.jobs)))
        if len(sent.live()) < len(sent.jobs):
            pending.note(f"parts with no kernel withdrawn ({len(sent.live())} left)")
    _load_when_compiled(pending, sent, built)


def _load_when_compiled(pending: Any, sent: jobs.Jobs, built: Built) -> None:
    """Load each part's kernels and loop programs from the disk cache here, still in the
    preparing thread, as soon as its worker has compiled them (for the argument types the
    worker reports): the switch then finds them loaded, and its warm-up run takes
    milliseconds, where loading took a good part of a second after the last part (numba's
    runtime set up, each kernel read). What a part does not report (a failed job, numba's
    fallback) is left to the switch."""
    waiting = sent.live()
    finished: queue.SimpleQueue = queue.SimpleQueue()
    for job in waiting:
        job.then(finished.put)
    for _ in waiting:  # in the order the parts end
        job = finished.get()
        answer = job.result if job.status == workers.DONE else {}
        loops = backend.loop_records(built.report)
        for name, signatures in answer.get("signatures", {}).items():
            if name.startswith(backend.LOOP_PREFIX):  # a loop program: loaded here too
                index = int(name[len(backend.LOOP_PREFIX):])
                dispatcher = loops[index].dispatcher if index < len(loops) else None
            else:
                dispatcher = built.program.globals.get(name)
            for signature in signatures:
                with front.numba_step(), contextlib.suppress(Exception):
                    diskcache.load_compiled(dispatcher, signature)
        if answer.get("signatures"):
            part, parts = answer.get("part", (0, 1))
            pending.note(f"kernels of part {part + 1}/{parts} loaded")


def finish(pending: Any, tiered: Any, begun: float, shown: Any) -> Compiled | None:
    """The switch (in the caller's thread): the compiled tier's callable, or ``None`` when a
    fork cut the workers' jobs off and they were submitted again."""
    report, sent = pending.report, pending.jobs
    failed = [job for job in sent.live() if job.status != workers.DONE] if sent else []
    if any(job.status == workers.FORKED for job in failed):
        pending.jobs = jobs.submit([job.payload for job in sent.live()])
        return None
    problem = (f"preparing its compiled tier failed ({pending.error})"
               if pending.error not in (None, "forked") else
               str(failed[0].result) if failed else None)
    if problem is not None:
        label = failed[0].label if failed else "a graph"
        warnings.warn(f"npdynamo: {problem}; the kernels of {label} compile in this process "
                      "instead", CompileWorkerWarning, stacklevel=3)
    answers = [job.result for job in sent.jobs if job.status == workers.DONE] if sent else []
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
            fn = built.finish(tiered.eager_best())
    except Exception as exc:  # never fail the user: any error means the eager backend
        backend.fall_back(report, f"{type(exc).__name__}: {exc}", pending.gm.graph.nodes)
        fn = pending.eager
    fn = as_compiled(fn)
    if fn.report is not report:
        fn = fn.with_report(report)
    took = time.perf_counter() - begun
    report.compile_time_s = took
    text = _took_over(tiered, took)
    report.tier = text
    pending.note("switched to the compiled tier")
    report.timeline = jobs.timeline(pending.events, sent, pending.begun)
    shown.finished(text)
    return fn


def _took_over(tiered: Any, took: float) -> str:
    """When the compiled tier took over and what ran the calls before (``report.tier``)."""
    eager, plain = tiered.eager_calls, tiered.plain_calls
    calls = eager + plain
    if not calls:
        return f"the compiled tier took over before its first call, {took:.1f} s after capture"
    ran = [f"{n} on the eager tier" for n in [eager] if n]
    ran += [f"{n} in plain Python while compiling" for n in [plain] if n]
    text = (f"the compiled tier took over at call {calls + 1}, {took:.1f} s after capture "
            f"({'call 1' if calls == 1 else f'calls 1-{calls}'} ran: {', '.join(ran)})")
    if tiered.measured is not None:
        slower = tiered.measured[0] / max(tiered.measured[1], 1e-9)
        text += f"; the eager tier took {slower:.2f}x plain Python's time a call"
    return text


front.install(prepare, finish)
