"""Timing helpers shared by the benchmarks: calibrated repeats, medians, min/max; and the
reading of a numpy-benchmarks kernel file (its ``#setup:`` and ``#run:`` lines)."""

from __future__ import annotations

import ast
import statistics
import time
import timeit
from collections.abc import Callable

import npdynamo
from benchmarks.quiet import foreign_load, wait_until_quiet
from npdynamo.backends import own_work
from npdynamo.backends.tuning import tuning_calls

#: Warm calls before a function is timed: enough for a numba graph's tuning to finish (about 15
#: calls, up to 40 when two candidates come close), so the calls that size the samples time
#: the chosen candidate, not its NumPy rival (a tuning call of the NumPy graph once made a
#: 3 ms kernel look like a 20 ms function, timed one call per sample, cold in the cache). A
#: function whose every call is slow stops after ``WARM_S``, once its last call ran no tuning
#: step; while its calls still tune a graph (up to 77 calls: four candidates, extra rounds,
#: a side-by-side form's probation) it goes on, up to ``MAX_WARM_CALLS``.
WARM_CALLS = 40
WARM_S = 0.5
MAX_WARM_CALLS = 200


def until_own_work_is_over(timeout: float = 120.0) -> None:
    """Wait until this process's compile workers are idle (none starting, none compiling).
    ``npdynamo.synchronize()`` returns once the graphs have their kernels; a graph whose
    kernels were on disk has them once one worker has imported numba, while the worker started
    for its other part may still import it, a core's worth of work for a second or more. In
    ``make bench``'s warm section the MLP step once timed 4.51 ms against 1.79 ms: its BLAS
    pool's second thread shared a core with such a worker (likely; not reproduced)."""
    deadline = time.perf_counter() + timeout
    while own_work.busy() and time.perf_counter() < deadline:
        time.sleep(0.01)


def warm_up(fn, *args) -> None:
    """Call ``fn(*args)`` ``WARM_CALLS`` times, or for ``WARM_S`` seconds when even its fastest
    call so far would make ``WARM_CALLS`` calls take longer, and then on while its calls still
    run tuning steps. After the first call, wait for the numba tier's background compiles
    and for the compile workers to be idle: warm calls are the compiled tier's, on cores of
    their own."""
    start = fastest = None
    for k in range(MAX_WARM_CALLS):
        tuned_before = tuning_calls()
        t0 = time.perf_counter()
        fn(*args)
        if k == 0:
            npdynamo.synchronize()
            until_own_work_is_over()
            tuned_before = tuning_calls()
            t0 = time.perf_counter()
            fn(*args)
        t1 = time.perf_counter()
        start = t0 if start is None else start
        fastest = t1 - t0 if fastest is None else min(fastest, t1 - t0)
        if tuning_calls() != tuned_before:
            continue
        if k + 1 >= WARM_CALLS or (t1 - start > WARM_S and fastest * WARM_CALLS > WARM_S):
            break


def measure(fn, *args, samples: int = 15, min_sample_s: float = 0.02) -> dict:
    """Per-call seconds of ``fn(*args)``: median, min and max over ``samples`` samples."""
    warm_up(fn, *args)
    timer = timeit.Timer(lambda: fn(*args))
    number = 1
    while timer.timeit(number) < min_sample_s:
        number *= 2
    times = [timer.timeit(number) / number for _ in range(samples)]
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def interleaved(fns: dict, args, samples: int = 15, min_sample_s: float = 0.02) -> dict:
    """Per-call times of each function, sampled in turns so that drifts of this shared machine
    affect every variant alike; median, min and max per variant, its ``samples`` (in turn
    order: sample i of each variant was taken in the same turn), and ``others``: the cores
    other processes used meanwhile. ``args`` is one argument tuple for all, or a dict giving
    each label its own (functions that update their arguments). Each turn starts one variant
    later than the one before: a variant always timed right after the same other one (after a
    scheduled form's two threads, say) would carry that one's after-effects in every sample."""
    timers, numbers = {}, {}
    for label, fn in fns.items():
        own = args[label] if isinstance(args, dict) else args
        warm_up(fn, *own)
        timers[label] = timeit.Timer(lambda fn=fn, own=own: fn(*own))
        number = 1
        while timers[label].timeit(number) < min_sample_s:
            number *= 2
        numbers[label] = number
    times: dict = {label: [] for label in fns}
    wait_until_quiet()
    with foreign_load() as load:
        labels = list(fns)
        for turn in range(samples):
            for label in labels[turn % len(labels):] + labels[:turn % len(labels)]:
                times[label].append(timers[label].timeit(numbers[label]) / numbers[label])
    return {label: {"median": statistics.median(t), "min": min(t), "max": max(t),
                    "samples": t, "others": load.cores} for label, t in times.items()}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:8.1f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    return f"{seconds * 1e3:8.2f} ms"


def numpy_benchmark_kernel(path: str) -> tuple[Callable, list]:
    """The function a numpy-benchmarks file's ``#run: f(a, *b)`` line calls and its arguments,
    made by running the file and its ``#setup:`` line in a fresh namespace (fresh arrays on each
    call)."""
    with open(path) as f:
        source = f.read()
    setup = run = None
    for line in source.splitlines():
        if line.startswith("#setup:"):
            setup = line.split(":", 1)[1].strip()
        elif line.startswith("#run:"):
            run = line.split(":", 1)[1].strip()
    call = ast.parse(run, mode="eval").body
    ns = {"__name__": "kernel"}
    exec(compile(source, str(path), "exec"), ns)  # noqa: S102 (the benchmark's own code)
    exec(setup, ns)  # noqa: S102
    args = []
    for a in call.args:
        node = a.value if isinstance(a, ast.Starred) else a
        value = eval(compile(ast.Expression(node), "<run>", "eval"), ns)  # noqa: S307
        args.extend(value) if isinstance(a, ast.Starred) else args.append(value)
    return ns[call.func.id], args
