"""Slices whose bounds the graph computes inside a rolled loop (``ops.unbacked``, issue 25).

``val[ptr[i]:ptr[i + 1]]`` in a formed loop is a slice of an unbacked size: NumPy's (and numba's)
slice semantics apply when the graph runs, the size flows as a symbol into the ops that read it,
and whatever needs its value at capture (a broadcast against a known size, ``len()``) breaks the
graph instead. Eager runs compare bitwise, numba within tolerance; graph and break counts are
exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from benchmarks.loop_kernels import csr_spmv
from npdynamo.ops.symbolic import SymbolicDecision, compare
from npdynamo.ops.unbacked import bound_symbol, slice_size
from tests.backends.test_loop_program import loop_records
from tests.capture.test_triangular_loops import numba_matches
from tests.differential import check_same, run_both

RNG = np.random.default_rng(25)
N = 20  # rows: more than config.for_loop_min_trips, so the loop forms


def csr(counts, ncols: int, rng=RNG):
    """A CSR matrix with ``counts[i]`` entries in row ``i`` (0: an empty row; a repeat of
    ``ptr``) and a vector to multiply."""
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    col = rng.integers(0, ncols, ptr[-1]).astype(np.int64)
    return ptr, col, rng.random(ptr[-1]), rng.random(ncols)


def window_sums(a, lo, hi):
    out = np.zeros(lo.shape[0])
    for i in range(lo.shape[0]):
        out[i] = a[lo[i]:hi[i]].sum()
    return out


def stepped(a, lo, hi):
    out = np.zeros(lo.shape[0])
    for i in range(lo.shape[0]):
        out[i] = a[lo[i]:hi[i]:2].sum() + a[hi[i]:lo[i]:-1].sum()
    return out


def carried_offset(x, y, n):
    k = 0  # a Python int the loop carries: a bound known only at run time
    total = 0.0
    for _ in range(n):
        total = total + x[k:k + 2] @ y[k:k + 2]
        k = k + 1
    return total


def windows_written(a, lo, hi):
    out = np.zeros_like(a)
    for i in range(lo.shape[0]):
        out[lo[i]:hi[i]] = a[lo[i]:hi[i]] * 2.0  # the same bounds: the same size
    return out


def against_known_size(a, lo, hi):
    out = np.zeros(lo.shape[0])
    for i in range(lo.shape[0]):
        out[i] = (a[lo[i]:hi[i]] + a[0:3]).sum()  # broadcasting needs the size: a break
    return out


def size_to_python(a, lo, hi):
    out = np.zeros(lo.shape[0])
    for i in range(lo.shape[0]):
        out[i] = np.zeros(len(a[lo[i]:hi[i]])).sum()  # Python reads the size: a break
    return out


def other_bounds(a, lo, hi):
    out = np.zeros(lo.shape[0])
    for i in range(lo.shape[0]):
        out[i] = a[lo[i]:hi[i]] @ a[lo[i] + 1:hi[i] + 1]  # other bounds: sizes not known equal
    return out


def bounds(n, low, high, rng=RNG):
    return rng.integers(low, high, n), rng.integers(low, high, n)


def numba_both(fn, args, loops: int = 1) -> None:
    """numba gives ``fn``'s results within tolerance with ``loops`` loop programs compiled
    (and run), no fallback and no NumPy call in object mode."""
    nd.reset()  # a fresh capture: the loop records are this compile's
    compiled = nd.compile(fn, backend="numba")
    for _ in range(2):
        numba_matches(compiled, fn, args)
    ran = [r for r in loop_records(compiled) if r.compiled and r.runs > 0]
    assert len(ran) == loops, [str(r) for r in loop_records(compiled)]
    assert all(r.numpy_ops == () for r in ran), [str(r) for r in ran]


# -- the CSR product -----------------------------------------------------------------------------
def test_csr_spmv_is_one_graph():
    counts = RNG.integers(0, 5, N)
    counts[[0, 7]] = 0  # empty rows: ptr repeats
    args = csr(counts, 12)
    check_same(csr_spmv, *args, graphs=1, breaks=0)
    numba_both(csr_spmv, args)


def test_csr_spmv_new_sizes_reuse_the_graph():
    # another count of entries: col and val get symbolic lengths (one more graph), whose
    # slices by the same bounds have one size when the lengths are equal (a guard); the
    # row count stays specialised (np.zeros(n) reads it)
    compiled = check_same(csr_spmv, *csr(RNG.integers(0, 5, N), 12), graphs=1, breaks=0)
    for high in (7, 3, 9):
        check_same(csr_spmv, *csr(RNG.integers(0, high, N), 12), compiled=compiled,
                   graphs=2, breaks=0)
    guards = " ".join(nd.inspect(compiled).entries[-1].guards)
    assert "val.shape[0] == col.shape[0]" in guards, guards


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(0, 4), min_size=1, max_size=24), ncols=st.integers(1, 9),
       seed=st.integers(0, 2**16))
def test_random_csr_matrices(counts, ncols, seed):
    nd.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(nd.config, "for_loop_min_trips", 1)  # one row still forms the loop
        check_same(csr_spmv, *csr(counts, ncols, np.random.default_rng(seed)),
                   graphs=1, breaks=0)


@settings(max_examples=10, deadline=None)
@given(counts=st.lists(st.integers(0, 4), min_size=N, max_size=N + 6),
       seed=st.integers(0, 2**16))
def test_random_csr_matrices_numba(counts, seed):
    nd.reset()  # (each example its own entries: the earlier examples' would reach the limit)
    compiled = nd.compile(csr_spmv, backend="numba", dynamic=True)
    numba_matches(compiled, csr_spmv, csr(counts, 7, np.random.default_rng(seed)))


def test_a_column_out_of_range_raises_as_numpy_does():
    ptr, col, val, x = csr(RNG.integers(1, 4, N), 6)
    col[5] = 6  # past x's end: IndexError from the gather, in the graph and in the program
    for backend in ("eager", "numba"):
        nd.reset()
        run = run_both(csr_spmv, nd.compile(csr_spmv, backend=backend), (ptr, col, val, x), {})
        assert type(run.exc) is IndexError, backend
    for wrong in (-7, -12, -13):  # below -len(x): an index wrapped twice read x[-12 + 12]
        col[5] = wrong
        nd.reset()
        compiled = nd.compile(csr_spmv, backend="numba")
        for _ in range(2):
            run = run_both(csr_spmv, compiled, (ptr, col, val, x), {})
            assert type(run.exc) is IndexError, (wrong, run)
    col[5] = -6  # a negative column counts from the end, as in NumPy
    check_same(csr_spmv, ptr, col, val, x, graphs=1, breaks=0)
    numba_both(csr_spmv, (ptr, col, val, x))


# -- NumPy's slice semantics at run time -----------------------------------------------------------
@pytest.mark.parametrize("low, high", [(0, 12), (-15, 15), (-40, 40)])
def test_bounds_clamp_and_wrap_as_numpy(low, high):
    a = RNG.random(10)
    lo, hi = bounds(N, low, high)
    for fn in (window_sums, stepped, windows_written):
        nd.reset()
        check_same(fn, a, lo, hi, graphs=1, breaks=0)
    numba_both(window_sums, (a, lo, hi))


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.int8])
def test_bounds_of_other_integer_dtypes(dtype):
    a = RNG.random(10)
    lo, hi = (b.astype(dtype) for b in bounds(N, 0, 14))
    check_same(window_sums, a, lo, hi, graphs=1, breaks=0)
    if dtype is np.uint64:
        numba_both(window_sums, (a, lo, hi))


def test_a_carried_python_int_bounds_a_slice():
    x, y = RNG.random(N + 2), RNG.random(N + 2)
    check_same(carried_offset, x, y, N, graphs=1, breaks=0)
    numba_both(carried_offset, (x, y, N))


def test_float_bounds_raise_as_numpy():
    a = RNG.random(10)
    lo, hi = bounds(N, 0, 10)
    run = run_both(window_sums, nd.compile(window_sums), (a, lo.astype(float), hi), {})
    assert type(run.exc) is TypeError


# -- what needs the size at capture breaks --------------------------------------------------------
@pytest.mark.filterwarnings("ignore::npdynamo.errors.RecompileLimitWarning")
@pytest.mark.parametrize("fn, why, counts", [
    (against_known_size, "depends on the length of the slice", 16),
    (size_to_python, "known only when the graph runs", 16),
    (other_bounds, "depends on the length of the slice", 24)])
def test_a_use_needing_the_size_breaks(fn, why, counts):
    # the loop is unrolled, where each bound is a graph value outside a loop body (a break per
    # iteration, then the recompile limit): results are NumPy's, counts depend on that limit
    # (``counts`` graphs and as many breaks with config.cache_size_limit 8, whatever the bounds)
    a = RNG.random(10)
    lo = RNG.integers(0, 6, N)
    hi = lo + 3  # windows of 3: NumPy succeeds
    check_same(fn, a, lo, hi, graphs=counts, breaks=counts)
    nd.reset()
    report = nd.explain(fn)(a, lo, hi)
    assert report.graph_break_count > 0
    notes = [line for line in str(report).splitlines() if "`for i in range" in line]
    assert notes and "unrolled: " in notes[0] and why in notes[0], str(report)


# -- the symbols ---------------------------------------------------------------------------------
def test_equal_slices_have_one_size_and_others_are_unknown():
    a, b = bound_symbol("a"), bound_symbol("b")
    u = slice_size(a, b, 1, 10)
    assert slice_size(a, b, 1, 10) is u
    assert compare(u, ">=", 0)  # a length is never negative
    with pytest.raises(SymbolicDecision):
        compare(u, "==", 3)
    with pytest.raises(SymbolicDecision):
        compare(u, "==", slice_size(b, a, 1, 10))
    with pytest.raises(SymbolicDecision):
        compare(a, ">=", 0)  # a bound may be negative
