"""Where a parallel kernel starts to pay (the measurement behind
``npdynamo.backends.numba.threads.PARALLEL_MIN_ELEMENTS``).

Times the numba backend's generated GELU kernel, serial and with ``prange``, on growing float32
inputs, and prints the smallest size at which the parallel kernel wins.
"""

from __future__ import annotations

import numpy as np

import npdynamo
from benchmarks.common import fmt_time, measure
from benchmarks.quiet import wait_until_quiet
from benchmarks.workloads import gelu_cubed
from npdynamo.backends.numba import threads


def _compiled(parallel: bool, x):
    saved = threads.PARALLEL_MIN_ELEMENTS
    threads.PARALLEL_MIN_ELEMENTS = 0 if parallel else 1 << 62
    try:
        npdynamo.reset()  # a new entry, compiled under this threshold
        fn = npdynamo.compile(gelu_cubed, backend="numba")
        fn(x)  # compile now, under this threshold
        return fn
    finally:
        threads.PARALLEL_MIN_ELEMENTS = saved


def main() -> None:
    print("\nserial vs parallel generated kernel (GELU, float32)")
    crossover = None
    for log2 in range(12, 21, 1):
        x = np.random.default_rng(0).standard_normal(1 << log2).astype(np.float32)
        serial, parallel = _compiled(False, x), _compiled(True, x)
        wait_until_quiet()
        ts = measure(serial, x, samples=7)["median"]
        tp = measure(parallel, x, samples=7)["median"]
        if crossover is None and tp < ts:
            crossover = 1 << log2
        print(f"  2**{log2:<3} serial {fmt_time(ts)}  parallel {fmt_time(tp)}  "
              f"{ts / tp:5.2f}x")
    print(f"  parallel first wins at {crossover} elements; "
          f"PARALLEL_MIN_ELEMENTS = {threads.PARALLEL_MIN_ELEMENTS}")


if __name__ == "__main__":
    main()
