"""Warm-call overhead of a compiled function: guard check + dispatch + rebuilding the result.

Workload: ``x * 2 + 1`` on 10 float64 elements, run as plain NumPy, as the backend's compiled
callable called directly, and through ``npdynamo.compile``. The difference between the last two is
what npdynamo adds to every call.
"""

from __future__ import annotations

import numpy as np

import npdynamo
from benchmarks.common import fmt_time, measure
from tests.differential import CountingBackend


def f(x):
    return x * 2 + 1


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


if __name__ == "__main__":
    main()
