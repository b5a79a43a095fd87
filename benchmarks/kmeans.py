"""The k-means assignment step (the PyTorch blog's example), 200,000 points:
``np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)``.

NumPy eager builds the (k, n, 2) difference, squares, sums and takes the root in separate
passes; the compiled numba graph fuses subtract + norm into one kernel (argmin stays a NumPy
call); the hand-written numba kernel is one loop over points keeping the nearest mean (the
ceiling). Prints the time of each and the ratios against NumPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from numba import njit, prange

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import npdynamo  # noqa: E402
from benchmarks.common import fmt_time, measure  # noqa: E402

POINTS, CLUSTERS = 200_000, 8


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


@njit(parallel=True, error_model="numpy")
def _nearest(X, means, out):
    for i in prange(X.shape[0]):
        best, arg = np.inf, 0
        for j in range(means.shape[0]):
            d = 0.0
            for c in range(X.shape[1]):
                t = X[i, c] - means[j, c]
                d += t * t
            if d < best:  # the first minimum wins, as np.argmin's
                best, arg = d, j
        out[i] = arg


def handwritten(X, means):
    out = np.empty(X.shape[0], np.intp)
    _nearest(X, means, out)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((POINTS, 2))
    means = X[rng.choice(POINTS, CLUSTERS, replace=False)].copy()
    compiled = npdynamo.compile(kmeans_step, backend="numba", fullgraph=True)
    want = kmeans_step(X, means)
    assert np.array_equal(compiled(X, means), want)
    assert np.array_equal(handwritten(X, means), want)
    t_np = measure(kmeans_step, X, means)["median"]
    t_c = measure(compiled, X, means)["median"]
    t_h = measure(handwritten, X, means)["median"]
    print(f"\nk-means step, {POINTS} points, {CLUSTERS} means (median per call)")
    print(f"  NumPy eager        {fmt_time(t_np)}")
    print(f"  npdynamo numba     {fmt_time(t_c)}   {t_np / t_c:5.2f}x NumPy")
    print(f"  hand-written numba {fmt_time(t_h)}   {t_np / t_h:5.2f}x NumPy")


if __name__ == "__main__":
    main()
