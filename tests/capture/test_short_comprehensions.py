"""Short comprehensions (fewer than ``config.for_loop_min_trips`` iterations) captured as one loop
when their element reduces an array, at the graph's top level (``capture/flow/comprehensions.py``):
k-means' centroids, ``np.array([[np.sum(A[labels == i, j]) / np.sum(labels == i) for j in
range(D)] for i in range(k)])``, over 5 and 10, was 50 masked reductions in 3 kernels. What stays
unrolled: an element that reduces nothing (no call at all, or a call that does not reduce), one
iteration, and a short comprehension inside a loop body being captured (its copies fuse in the
body's kernels). Also ``A[mask, j]`` with the loop's ``j`` (``capture/masked.py``), and a loop
index compared with an int64 array in a kernel of the compiled loop rather than a NumPy call in
object mode (``backends/numba/loop_scalars.mark_int64``; a top-level graph's dynamic int, of any
size, stays a NumPy call). Plain and compiled on copies of the same inputs: eager bitwise with
NumPy's warnings, numba at its tolerance; empty masks (0 / 0), NaN, int and float32 data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo
from tests.capture.comprehension_programs import kmeans
from tests.capture.test_comprehensions import formed
from tests.differential import check_same, check_same_warnings, run_both

RNG = np.random.default_rng(3)
A = RNG.random((40, 4))
LABELS = np.arange(40) % 5
HOLES = np.where(LABELS == 3, 1, LABELS)  # centre 3 is empty: 0 / 0, nan and a warning


def centroids(A, labels, k):
    return np.array([[np.sum(A[labels == i, j]) / np.sum(labels == i) for j in range(A.shape[1])]
                     for i in range(k)])


def column_sums(A, labels):
    return np.array([np.sum(A[labels == 1, j]) for j in range(A.shape[1])])


def row_sums(x):
    return np.array([x[i].sum() for i in range(3)])


def dots(x, w):
    return np.array([x[i] @ w for i in range(3)])


def scaled(x):  # no call: unrolled without an attempt
    return np.array([x[i] * 2.0 for i in range(3)])


def sines(x):  # a call that reduces nothing: tried, then unrolled
    return np.array([np.sin(x[i]) for i in range(3)])


def one_row(x):
    return np.array([x[i].sum() for i in range(1)])


def column_past_the_end(A, labels):
    return np.array([np.sum(A[labels == 1, j + 2]) for j in range(A.shape[1])])


def _data():
    nan = A.copy()
    nan[7, 2] = np.nan
    return [
        (A, LABELS), (A, HOLES), (nan, LABELS), ((A * 100).astype(np.int64), LABELS),
        (A.astype(np.float32), LABELS), (A, LABELS.astype(np.int32)),
    ]


def assert_close(want, got, args: tuple) -> None:
    """numba's tolerance: kernel sums round differently from NumPy's pairwise ones (float32
    sums add in float64: closer to exact, a float32 rounding away from NumPy's)."""
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    single = any(getattr(a, "dtype", None) == np.float32 for a in args)
    np.testing.assert_allclose(got, want, rtol=1e-6 if single else 1e-12, atol=1e-15)


DATA = _data()
DATA_IDS = ["float64", "empty-centre", "nan", "int64", "float32", "int32-labels"]

FORMED = [  # (function, arguments, comprehensions formed)
    (row_sums, (A,), 1),
    (dots, (A, A[0]), 1),
    (column_sums, (A, LABELS), 1),
    (kmeans, (A, 5, 2, A[:5].copy()), 3),  # per iteration: dist and labels, then the centroids
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("data", DATA, ids=DATA_IDS)
def test_centroids_eager_bitwise_with_numpys_warnings(data):
    check_same_warnings(centroids, *data, 5, graphs=1, breaks=0)
    assert formed(centroids, *data, 5) == 1  # the outer over 5; the inner over 4 in its body


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("data", DATA, ids=DATA_IDS)
def test_centroids_numba_matches_numpy(data):
    pytest.importorskip("numba")
    compiled = npdynamo.compile(centroids, backend="numba")
    for _ in range(2):
        run = run_both(centroids, compiled, (*data, 5), {})
        assert run.exc is None
        assert_close(run.expected, run.got, data)
    (graph,) = npdynamo.inspect(compiled).graphs
    loops = [str(loop) for loop in graph.report.loops]
    assert loops and all("the loop runs in numba" in line for line in loops), loops
    # labels == i in a kernel of the loop, unless NumPy's int32 loop checks the int's range
    wide = data[1].dtype == np.int64
    assert all(("object mode" not in line) == wide for line in loops), loops


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,args,loops", FORMED, ids=[c[0].__name__ for c in FORMED])
@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_short_comprehensions_that_reduce_are_loops(fn, args, loops, backend):
    if backend == "eager":
        check_same(fn, *args, graphs=1, breaks=0)
    else:
        pytest.importorskip("numba")
        compiled = npdynamo.compile(fn, backend="numba")
        for _ in range(2):
            run = run_both(fn, compiled, args, {})
            assert run.exc is None
            assert_close(run.expected, run.got, args)
    assert formed(fn, *args) == loops


@pytest.mark.parametrize("fn", [scaled, sines, one_row])
def test_short_comprehensions_that_reduce_nothing_stay_unrolled(fn):
    check_same(fn, A, graphs=1, breaks=0)
    assert formed(fn, A) == 0
    npdynamo.reset()
    report = str(npdynamo.explain(fn)(A))
    npdynamo.reset()
    if fn is sines:
        assert "the element reduces no array" in report


def test_a_short_comprehension_inside_a_formed_one_stays_unrolled():
    # the inner over 4 (columns) is unrolled in the outer's body: its copies share one pass
    check_same(centroids, A, LABELS, 5, graphs=1, breaks=0)
    npdynamo.reset()
    report = str(npdynamo.explain(centroids)(A, LABELS, 5))
    npdynamo.reset()
    assert "float64[5, 4] array (5 iterations)" in report
    assert "float64[4] array" not in report


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_column_past_the_end_raises_numpys_index_error(backend):
    with pytest.raises(IndexError) as plain:
        column_past_the_end(A, LABELS)
    with pytest.raises(IndexError) as compiled:
        npdynamo.compile(column_past_the_end, backend=backend)(A, LABELS)
    assert str(compiled.value) == str(plain.value)


def shifted(x, n):
    return x + n


def test_a_top_level_dynamic_int_stays_a_numpy_call():
    # only a compiled loop's ints are int64s: here n may be any size (NumPy's OverflowError)
    pytest.importorskip("numba")
    x = np.arange(5)
    compiled = npdynamo.compile(shifted, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumbaFallbackWarning
        for n in (3, 4, 2**62):
            np.testing.assert_array_equal(compiled(x, n), shifted(x, n))
        with pytest.raises(OverflowError):
            compiled(x, 2**63 + 5)
