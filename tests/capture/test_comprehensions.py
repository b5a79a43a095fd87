"""``np.array([<expr> for i in range(n)])`` and its nested 2-level form captured as one loop
(``capture/flow/comprehensions.py``): plain and compiled on copies of the same inputs, eager
bitwise and numba at its tolerance, with the result's dtype and shape NumPy's own (a Python float
gives float64, a float32 scalar float32, an int64 scalar int64, a NumPy bool bool, a row of mixed
kinds their promotion), exact graph and break counts, and whether the comprehension became a
loop. What is left unrolled (a filter, a list used otherwise, a Python int element, an empty
range, a short one whose element reduces no array) keeps today's exact result."""

from __future__ import annotations

import contextlib
import io
import math
import sys
from math import sqrt

import numpy as np
import pytest

import npdynamo
from npdynamo import config
from tests.backends import compare
from tests.capture.comprehension_programs import kmeans
from tests.differential import check_same, run_both

N = 20  # at least config.for_loop_min_trips: a shorter comprehension is unrolled


def formed(fn, *args) -> int:
    """How many comprehensions of ``fn``'s capture became one loop."""
    npdynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        report = npdynamo.explain(fn)(*args)
    npdynamo.reset()
    return str(report).count("comprehension in the graph as one fori_loop")


# -- formed ---------------------------------------------------------------------------------------
def python_floats(x):
    return np.array([math.sqrt(np.sum(x[i] * x[i])) for i in range(x.shape[0])])


def numpy_scalars(x):
    return np.array([x[i].sum() * 2 for i in range(x.shape[0])])


def int_scalars(x):
    return np.array([x[i, :].argmin() for i in range(x.shape[0])])


def int32_scalars(x):
    y = (x * 100).astype(np.int32)
    return np.array([y[i].max() for i in range(y.shape[0])])


def bool_scalars(x):
    return np.array([(x[i] > 0.5).any() for i in range(x.shape[0])])


def mixed_row(x):
    k = (x * 10).astype(np.int64)
    return np.array([[x[i].sum(), k[i].max(), (x[i] > 2.0).all()] for i in range(x.shape[0])])


def float32_row(x):
    y = x.astype(np.float32)
    return np.array([(y[i].min(), y[i].max()) for i in range(y.shape[0])])


def array_rows(x):
    return np.array([x[i] * 2.0 - x[0] for i in range(x.shape[0])])


def distances(A, c):
    return np.array([[sqrt(np.sum((A[i, :] - c[j, :]) ** 2)) for j in range(c.shape[0])]
                     for i in range(A.shape[0])])


def shifted_range(x):
    return np.array([x[i].sum() - x[i - 1].sum() for i in range(1, x.shape[0])])


def used_after(x):
    d = np.array([x[i].max() for i in range(x.shape[0])])
    d[0] = -1.0  # a new array: writing into it is no break
    return d, d.argmax()


def asarray_of(x):
    return np.asarray([x[i].min() for i in range(x.shape[0])]) + 1.0


RNG = np.random.default_rng(0)
X = RNG.random((N, 4))
C3, C17 = RNG.random((3, 4)), RNG.random((17, 4))

FORMED = [  # (function, arguments, comprehensions formed)
    (python_floats, (X,), 1),
    (python_floats, (X.astype(np.float32),), 1),
    (numpy_scalars, (X,), 1),
    (numpy_scalars, (X.astype(np.float32),), 1),
    (numpy_scalars, ((X * 10).astype(np.int16),), 1),
    (int_scalars, (X,), 1),
    (int32_scalars, (X,), 1),
    (bool_scalars, (X,), 1),
    (mixed_row, (X,), 1),
    (float32_row, (X,), 1),
    (array_rows, (X,), 1),
    (distances, (X, C3), 1),  # the inner one short: unrolled into a row
    (distances, (X, C17), 2),  # both loops
    (shifted_range, (X,), 1),
    (used_after, (X,), 1),
    (asarray_of, (X,), 1),
    # per iteration: dist (inner unrolled) and labels, and the centroids over 3: a short range,
    # formed as its element reduces arrays (test_short_comprehensions)
    (kmeans, (X, 3, 2, X[:3].copy()), 3),
]
IDS = [f"{c[0].__name__}-{i}" for i, c in enumerate(FORMED)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,args,loops", FORMED, ids=IDS)
def test_formed_eager_is_numpy_bitwise(fn, args, loops):
    check_same(fn, *args, graphs=1, breaks=0)
    assert formed(fn, *args) == loops


def assert_close(want, got) -> None:
    # numba's documented tolerance, per dtype (1e-12 for float32 results was tighter than it)
    compare.assert_close(got, want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,args,loops", FORMED, ids=IDS)
def test_formed_numba_matches_numpy(fn, args, loops):
    pytest.importorskip("numba")
    compiled = npdynamo.compile(fn, backend="numba")
    for _ in range(2):
        run = run_both(fn, compiled, args, {})
        assert run.exc is None
        assert_close(run.expected, run.got)
    found = npdynamo.inspect(compiled)
    assert len(found.graphs) == 1
    assert sum(e.graph_break is not None for e in found.entries) == 0


def test_the_numba_loop_runs_compiled_without_numpy_calls():
    pytest.importorskip("numba")
    for fn, args in [(distances, (X, C17)), (int_scalars, (X,)), (python_floats, (X,))]:
        compiled = npdynamo.compile(fn, backend="numba")
        compiled(*args)
        (graph,) = npdynamo.inspect(compiled).graphs
        loops = [str(loop) for loop in graph.report.loops]
        assert loops and all("the loop runs in numba" in line and "object mode" not in line
                             for line in loops), loops


def test_dtypes_are_numpys():
    cases = [(python_floats, np.float64), (numpy_scalars, np.float64), (int_scalars, np.int64),
             (int32_scalars, np.int32), (bool_scalars, np.bool_), (mixed_row, np.float64),
             (float32_row, np.float32)]
    for fn, dtype in cases:
        got = npdynamo.compile(fn)(X)
        assert got.dtype == fn(X).dtype == dtype, fn.__name__
    got = npdynamo.compile(numpy_scalars)(X.astype(np.float32))
    assert got.dtype == np.float32


# -- exact where the data decides ------------------------------------------------------------------
def sqrt_of_row_sums(x):
    return np.array([math.sqrt(x[i].sum()) for i in range(x.shape[0])])


def test_math_sqrt_of_a_negative_raises_as_python():
    bad = X.copy()
    bad[7] = -1.0
    for backend in ("eager", "numba"):
        compiled = npdynamo.compile(sqrt_of_row_sums, backend=backend)
        np.testing.assert_allclose(compiled(X), sqrt_of_row_sums(X), rtol=1e-15)
        with pytest.raises(ValueError, match="math domain error"):
            compiled(bad)
        nan = X.copy()
        nan[3, 1] = np.nan
        assert np.isnan(compiled(nan)[3]) and not np.isnan(compiled(nan)[2])


def test_argmin_takes_the_first_nan_and_the_first_minimum():
    y = np.ones((N, 5))
    y[4, 3] = np.nan
    y[4, 1] = np.nan
    y[6, [2, 4]] = 0.0
    y[9, 0] = -0.0
    for backend in ("eager", "numba"):
        got = npdynamo.compile(int_scalars, backend=backend)(y)
        np.testing.assert_array_equal(got, int_scalars(y))


# -- left unrolled: today's behaviour -----------------------------------------------------------
def python_ints(x):
    return np.array([i * 2 for i in range(x.shape[0])]) + x.shape[0]


def filtered(x):
    return np.array([x[i].sum() for i in range(x.shape[0]) if x[i, 0] > 0.5])


def list_kept(x):
    rows = [x[i].sum() for i in range(x.shape[0])]
    return np.array(rows), len(rows)


def list_summed(x):
    return sum([x[i].sum() for i in range(x.shape[0])])


def with_dtype(x):
    return np.array([x[i].sum() for i in range(x.shape[0])], dtype=np.float32)


def walrus(x):
    out = np.array([(last := x[i].sum()) for i in range(x.shape[0])])
    return out, last


def index_value_read(x):
    return np.array([x[i].sum() if i < 3 else 0.5 for i in range(x.shape[0])])


def short(x):  # (a short range whose element reduces an array is a loop: test_short_...)
    return np.array([x[i] * 2.0 for i in range(3)])


UNROLLED = [(python_ints, (X,)), (list_kept, (X,)), (list_summed, (X,)), (walrus, (X,)),
            (index_value_read, (X,)), (short, (X,))]


@pytest.mark.parametrize("fn,args", UNROLLED, ids=[c[0].__name__ for c in UNROLLED])
def test_left_unrolled_and_exact(fn, args):
    check_same(fn, *args, graphs=1, breaks=0)
    assert formed(fn, *args) == 0


def test_a_filter_or_dtype_keeps_todays_result():
    # the filter's branch on data breaks: 3.11 runs the comprehension's own frame in Python;
    # 3.12+ inline the comprehension (PEP 709), so its loop is the caller's and each element's
    # test is a break until the loop runs in Python (16 or 17 graphs: the resumes differ)
    filter_counts = {(3, 11): (1, 1), (3, 12): (17, 17)}.get(sys.version_info[:2], (16, 17))
    for fn, (graphs, breaks) in ((filtered, filter_counts), (with_dtype, (1, 1))):
        check_same(fn, X, graphs=graphs, breaks=breaks)
        assert formed(fn, X) == 0


def empty(x, n):
    return np.array([x[i].sum() for i in range(n)]), x * 2


def empty_outer(x, n, k):
    return np.array([[x[i, j] * 2.0 for j in range(k)] for i in range(n)]), x * 2


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_empty_comprehensions_are_numpys(backend):
    # np.array([]) is float64 of shape (0,); an outer list of empty rows is (n, 0)
    for fn, args in [(empty, (X, 0)), (empty_outer, (X, 0, 3)), (empty_outer, (X, N, 0))]:
        got = npdynamo.compile(fn, backend=backend)(*args)[0]
        want = fn(*args)[0]
        assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    check_same(empty, X, 0, backend=backend, graphs=1, breaks=0)
    # (the entries of the calls above, of the same code, are counted too)
    check_same(empty_outer, X, N, 0, backend=backend, graphs=2, breaks=0)


def test_capture_for_loops_off_unrolls(monkeypatch):
    monkeypatch.setattr(config, "capture_for_loops", False)
    check_same(numpy_scalars, X, graphs=1, breaks=0)
    assert formed(numpy_scalars, X) == 0


def test_a_long_comprehension_is_one_loop_whatever_its_length():
    # 3,000 rows of 5 ops: unrolled, past the graph's op limit (a break before the loop)
    big = RNG.random((3_000, 4))
    check_same(distances, big, C3, graphs=1, breaks=0)
    assert formed(distances, big, C3) == 1


# -- where it sits ---------------------------------------------------------------------------------
def out_of_bounds(x):
    return np.array([x[i + 5].sum() for i in range(x.shape[0])])


def centre_means(A, labels, k):
    return np.array([A[labels == i, 0].sum() / np.sum(labels == i) for i in range(k)])


def row_norms(x):
    return np.array([math.sqrt(np.sum(x[i] ** 2)) for i in range(x.shape[0])])


def calls_a_helper(x):
    return row_norms(x * 2.0) + 1.0


def test_an_index_past_the_end_raises_numpys_error():
    for backend in ("eager", "numba"):
        check_same(out_of_bounds, X, backend=backend, graphs=1, breaks=0)  # the graph raises


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (formed() runs it outside the check)
def test_warnings_of_the_elements_are_numpys():
    from tests.differential import check_same_warnings
    labels = np.arange(N) % 18  # centres 18 and 19 are empty: 0 / 0, nan and a warning each
    check_same_warnings(centre_means, X, labels, N, graphs=1, breaks=0)
    assert formed(centre_means, X, labels, N) == 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_inside_a_called_function_and_a_formed_loop():
    check_same(calls_a_helper, X, graphs=1, breaks=0)
    assert formed(calls_a_helper, X) == 1
    # sixteen iterations: the outer loop may be formed too (3.11), with the comprehensions in it
    args = (X, 3, 16, X[:3].copy())
    check_same(kmeans, *args, graphs=1, breaks=0)
    assert formed(kmeans, *args) >= 2
