"""Warm-call overhead of a compiled function: guard check + dispatch + rebuilding the result.

Workload: ``x * 2 + 1`` on 10 float64 elements, run as plain NumPy, as the backend's compiled
callable called directly, and through ``npdynamo.compile``. The difference between the last two is
what npdynamo adds to every call.

Then the guard check alone (the entry's generated ``check``, called as the dispatcher calls it)
of functions whose guards are most of that overhead: one calling three global helpers (each
guarded on its type, globals and code, and the defaults one of them uses:
``capture/outside_functions.py``), the class-based model of ``small_functions.py`` (its methods
and its layers' ``__call__`` read in their classes' ``__dict__``, once per class:
``capture/absent_attributes.py``), the closures of its pipeline (their cells' contents too),
and four 1-D array arguments (the loop corpus's ``csr_spmv``: type, dtype and shape of each).
To compare two checkouts, run this file with each first on ``PYTHONPATH``.
"""

from __future__ import annotations

import numpy as np

import npdynamo
from benchmarks.common import fmt_time, interleaved, measure
from benchmarks.loop_kernels import KERNELS
from benchmarks.small_functions import _workloads, pipeline
from npdynamo.backends import lookup_backend
from npdynamo.capture.compile_frame import build_entry
from tests.differential import CountingBackend


def f(x):
    return x * 2 + 1


def scale(v):
    return v * 2.0


def shift(v, by=1.0):
    return v + by


def clip(v):
    return np.minimum(v, 10.0)


def three_helpers(x):
    return clip(shift(scale(x)))


def guard_check(fn, *args):
    """The generated guard function of ``fn``'s entry for ``args``."""
    entry = build_entry(fn, args, backend=lookup_backend("eager"))
    assert entry.check(*args)
    return entry.check


def main() -> None:
    x = np.arange(10, dtype=np.float64)
    backend = CountingBackend()
    compiled = npdynamo.compile(f, backend=backend)
    compiled(x)
    graph_callable = backend.graphs[0].forward
    rows = [
        ("plain NumPy", measure(f, x)),
        ("backend callable (graph only)", measure(graph_callable, x)),
        ("npdynamo.compile warm call", measure(compiled, x)),
    ]
    print("warm call of x * 2 + 1 on 10 float64 (eager backend)")
    print(f"{'variant':34} {'median':>11} {'min':>11} {'max':>11}")
    for name, r in rows:
        print(f"{name:34} {fmt_time(r['median'])} {fmt_time(r['min'])} {fmt_time(r['max'])}")
    overhead = rows[2][1]["median"] - rows[1][1]["median"]
    print(f"npdynamo overhead over the backend callable: {overhead * 1e6:.2f} µs per call")
    print(f"compiled / plain NumPy: {rows[2][1]['median'] / rows[0][1]['median']:.2f}x")

    (csr,) = [k for k in KERNELS if k.name == "csr_spmv"]
    csr_args = csr.make("small", np.random.default_rng(0))
    (_, predict, predict_args), *_ = _workloads()
    cases = {
        "three global helpers": (three_helpers, (x,)),
        "class-based predict (small_functions)": (predict, predict_args),
        "closures pipeline (small_functions)": (pipeline, (np.abs(x), [])),
        "four 1-D arrays (csr_spmv)": (csr.plain, csr_args),
    }
    checks = {name: guard_check(fn, *args) for name, (fn, args) in cases.items()}
    times = interleaved(checks, {name: cases[name][1] for name in cases})
    print("guard check alone (the entry's generated function), sampled in turns")
    for name, r in times.items():
        print(f"{name:38} {fmt_time(r['median'])} {fmt_time(r['min'])} {fmt_time(r['max'])}")


if __name__ == "__main__":
    main()
