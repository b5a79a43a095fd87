"""A Python number that an inner loop turns into a NumPy scalar (``s = 0.0; for k in range(i):
s += a[k]``), where the inner range is empty at the outer loop's first iteration (issue 25,
LU): the outer loop's first iteration runs before its node, so the inner range has an
iteration in every other one and its own first iteration runs before the inner node. Plain
against compiled (bitwise on eager, within tolerance on numba), at several sizes, with the
kinds that NumPy's promotion gives (float32 data keeps a float32 sum), and the ranges that
stay empty after the peel unrolled as before (exact results)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo as nd
from benchmarks.loop_kernels import lu_doolittle
from tests.capture.test_for_formation import quiet_explain
from tests.capture.test_triangular_loops import numba_matches
from tests.differential import check_same

RNG = np.random.default_rng(250)


def prefix_dots(A):
    n = A.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(i):
            s += A[i, k] * A[k, i]
        out[i] = A[i, i] - s
    return out


def lower_solve(L, b):
    """Forward substitution: the textbook triangular loop with a scalar accumulator."""
    n = b.shape[0]
    x = np.zeros(n, dtype=b.dtype)
    for i in range(n):
        s = 0.0
        for k in range(i):
            s += L[i, k] * x[k]
        x[i] = (b[i] - s) / L[i, i]
    return x


def empty_twice(a):
    """``range(i - 1)`` is empty at i = 0 and i = 1: one peel leaves it empty at the new first
    iteration, so the loops unroll (exactly) as before."""
    n = a.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = 0
        for k in range(i - 1):
            s += a[k]
        out[i] = s
    return out


def _dominant(n, dtype=np.float64):
    A = RNG.random((n, n))
    return (A + np.diag(A.sum(axis=1) + 1.0)).astype(dtype)


CASES = {
    "prefix_dots": (prefix_dots, lambda n: (_dominant(n),)),
    "lower_solve": (lower_solve, lambda n: (np.tril(_dominant(n)), RNG.random(n))),
    "lower_solve_float32": (lower_solve, lambda n: (np.tril(_dominant(n, np.float32)),
                                                    RNG.random(n).astype(np.float32))),
    "doolittle": (lu_doolittle, lambda n: (_dominant(n),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_graph_with_the_outer_loop_peeled(name):
    fn, make = CASES[name]
    args = make(20)
    check_same(fn, *args, graphs=1, breaks=0)
    report = quiet_explain(fn, *args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    assert any("its first iteration runs before the loop, where the loop at" in line
               for line in report.loops), report.loops
    assert not any("unrolled" in line and "fewer than" not in line for line in report.loops)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("n", [1, 2, 3, 17])
def test_other_sizes_give_plain_results(name, n):
    fn, make = CASES[name]
    check_same(fn, *make(n), graphs=1, breaks=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_numba_backend(name):
    fn, make = CASES[name]
    numba_matches(nd.compile(fn, backend="numba"), fn, make(20))


def test_a_range_still_empty_after_the_peel_unrolls():
    a = RNG.integers(0, 9, 20)
    check_same(empty_twice, a, graphs=1, breaks=0)
    report = quiet_explain(empty_twice, a)
    assert any("unrolled" in line for line in report.loops), report.loops


def running_total(A):
    """``s`` lives across the outer loop: a Python float through its first iteration (the
    inner range is empty there), an ``np.float64`` from its second on, so two iterations run
    before the node."""
    n = A.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i):
            s += A[j, i] * (i - j)
    return s


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 20])
def test_a_total_across_the_outer_loop_peels_two_iterations(n):
    A = RNG.random((n, n))
    check_same(running_total, A, graphs=int(n >= 2), breaks=0)  # (n < 2: nothing to compute)
    if n >= 17:  # long enough to form: two iterations run first, both loops are graph nodes
        report = quiet_explain(running_total, A)
        assert any("its second iteration runs too before the loop" in line
                   for line in report.loops), report.loops
        assert sum("in the graph as one fori_loop" in line for line in report.loops) == 2
        assert not any("unrolled" in line and "fewer than" not in line for line in report.loops)
        numba_matches(nd.compile(running_total, backend="numba"), running_total, (A,))
