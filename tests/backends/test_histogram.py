"""``np.histogram`` in a graph: one op (no break) on both backends, NumPy's counts and edges bit
for bit (the numba backend's compiled loop included: values on the edges, the closed last bin,
ranges an ulp wide, zeros of either sign, all values equal), NumPy's errors (a NaN or an
infinity in the data, a reversed range), and a graph break for what the op does not take."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from npdynamo.backends.numba.histograms import histogram as compiled_histogram
from tests.backends.compare import assert_close
from tests.differential import check_same, run_both


def counts_and_edges(a, bins):
    h, e = np.histogram(a, bins)
    return h, e, h.sum() + 1


def with_range(a):
    return np.histogram(a * 2, 7, (-3, 4.5))


def with_density(a):
    return np.histogram(a, bins=5, density=True)


def _numba_exact(fn, args):
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaFallbackWarning)
            run = run_both(fn, compiled, args, {})
        assert run.exc is None
        assert_close(run.got, run.expected, rtol=0.0)


def _data(kind: str, dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        return rng.normal(0, 5, n).astype(dtype)
    if kind == "integers":  # many values exactly on the edges
        return rng.integers(-20, 20, n).astype(dtype)
    if kind == "narrow":  # a range a few ulps wide
        base = np.array(1.0, dtype)
        return np.nextafter(base, base + 1, dtype=dtype) ** rng.integers(0, 4, n).astype(dtype)
    if kind == "offset":  # a span of a few ulps of the values: edges rounded by up to a bin
        base = np.array(1000.0 + rng.integers(0, 4), dtype)
        return base + np.spacing(base) * rng.integers(-40, 40, n).astype(dtype)
    if kind == "zeros":
        return np.where(rng.random(n) < 0.5, 0.0, -rng.random(n)).astype(dtype)
    return np.full(n, 3.25, dtype)  # all equal: NumPy widens the range by 0.5 each side


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["normal", "integers", "narrow", "offset", "zeros", "equal"]),
       st.sampled_from(["float32", "float64"]), st.integers(1, 400), st.integers(1, 60),
       st.integers(0, 2**32 - 1))
def test_the_compiled_loop_gives_numpys_counts_and_edges(kind, dtype, n, bins, seed):
    a = _data(kind, dtype, n, np.random.default_rng(seed)).reshape(-1, 1)[::-1]
    try:
        want = np.histogram(a, bins)
    except ValueError as exc:  # too many bins for a range a few ulps wide
        with pytest.raises(ValueError, match=str(exc)[:20]):
            compiled_histogram(a, bins=bins)
        return
    got = compiled_histogram(a, bins=bins)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16"])
def test_histogram_is_one_graph_and_numpys_values(dtype):
    a = np.random.default_rng(3).normal(0, 4, 2000).astype(dtype)
    for fn, args in ((counts_and_edges, (a, 50)), (with_range, (a,)), (with_density, (a,))):
        check_same(fn, *args, compiled=npdynamo.compile(fn, backend="eager", fullgraph=True),
                   graphs=1, breaks=0)
        _numba_exact(fn, args)


def test_the_numba_backend_runs_the_compiled_loop():
    a = np.random.default_rng(4).random(1000)
    report = npdynamo.explain(counts_and_edges, backend="numba")(a, 10)
    (numba,) = report.backend_reports
    assert ("histogram", "histogram: its own compiled loop, between kernels") in numba.not_fused


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_data_that_is_not_finite_raises_numpys_error(bad, backend):
    a = np.arange(10.0)
    a[3] = bad
    compiled = npdynamo.compile(counts_and_edges, backend=backend)
    with pytest.raises(ValueError, match="autodetected range"):
        compiled(a, 4)
    run = run_both(counts_and_edges, compiled, (a, 4), {})
    assert isinstance(run.exc, ValueError)


@pytest.mark.parametrize("call,graphs", [  # a graph when there is work before the break
    (lambda a: np.histogram(a, np.array([0.0, 0.5, 1.0])), 1),  # edges given
    (lambda a: np.histogram(a, "auto"), 0),
    (lambda a: np.histogram(a, 4, weights=a), 0),
    (lambda a: np.histogram(a > 0.5, 3), 1),
])
def test_what_the_op_does_not_take_is_a_break_with_numpys_result(call, graphs):
    a = np.random.default_rng(5).random(50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = npdynamo.explain(call)(a)
        assert report.graph_break_count == 1, str(report)
        check_same(call, a, compiled=npdynamo.compile(call, backend="eager"), graphs=graphs,
                   breaks=1)


def test_a_reversed_range_raises_numpys_error_on_both_backends():
    def fn(a):
        return np.histogram(a, 3, (2.0, 1.0))

    for backend in ("eager", "numba"):
        with pytest.raises(ValueError, match="max must be larger than min"):
            npdynamo.compile(fn, backend=backend)(np.arange(4.0))


def float16_past_its_range(a):
    return np.histogram(a, 1, (-1e6, 10))  # -1e6 is -inf in float16: NumPy's IndexError


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_range_past_the_data_dtypes_numbers_runs_numpy_in_python(backend):
    # (hypothesis found it: test_rules; NumPy makes a float16 edge of -inf and raises)
    a = np.array([34.0, 25.0, 20.0, 10.0, 12.0], dtype=np.float16)
    check_same(float16_past_its_range, a, backend=backend, graphs=0, breaks=1)
