"""``np.cumsum``/``np.cumprod`` on the numba backend run a compiled loop (``backends/numba/
scans.py``): NumPy's values bit for bit (dtype, shape, every axis, reversed and strided views,
integer wrap-around, infinities and NaNs, empty axes), one graph with no break, and NumPy's own
call for what the loop does not take."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning, scans
from npdynamo.ops.registry import REGISTRY
from tests.backends.compare import assert_close
from tests.differential import check_same, run_both


def reverse_cumsum(x):
    return np.cumsum(x[::-1])[::-1]


def scans_along(x, axis):
    return np.cumsum(x, axis=axis), x.cumprod(axis=axis), np.cumsum(x * 2.0, axis=axis)


def _loop(name: str):
    return scans._compiled(name, REGISTRY[name].impl)


def _data(dtype: str, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if dtype == "int64":  # products that overflow: NumPy wraps around
        return rng.integers(-(2**40), 2**40, shape)
    a = rng.normal(0, 1e3, shape).astype(dtype)
    if a.size > 3:
        a.flat[1], a.flat[2] = np.inf, np.nan
    return a


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["float32", "float64", "int64"]),
       st.lists(st.integers(0, 9), min_size=1, max_size=3), st.integers(-4, 3),
       st.sampled_from(["plain", "reversed", "strided", "transposed"]),
       st.integers(0, 2**32 - 1))
def test_the_compiled_loop_gives_numpys_scans_bit_for_bit(dtype, shape, axis, view, seed):
    a = _data(dtype, tuple(shape), np.random.default_rng(seed))
    if view == "reversed":
        a = a[::-1]
    elif view == "strided":
        a = a[..., ::2]
    elif view == "transposed":
        a = a.T
    axis = None if axis < -a.ndim or axis >= a.ndim else axis
    for name in ("cumsum", "cumprod"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = getattr(np, name)(a, axis=axis)
            size, scans.MIN_SIZE = scans.MIN_SIZE, 0  # every size through the loop
            try:
                got = _loop(name)(a, axis=axis)
            finally:
                scans.MIN_SIZE = size
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.c_contiguous
        assert np.array_equal(got, want, equal_nan=a.dtype.kind == "f"), (name, a, axis)


@pytest.mark.parametrize("kwargs", [{"dtype": np.float32}, {"axis": 0, "dtype": "int64"}])
def test_what_the_loop_does_not_take_is_numpys_call(kwargs):
    a = np.arange(2000, dtype=np.int32).reshape(2, 1000)
    want = np.cumsum(a, **kwargs)
    got = _loop("cumsum")(a, **kwargs)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_a_scan_is_one_graph_and_numpys_values_on_numba(dtype):
    x = np.random.default_rng(1).normal(0, 10, 3000).astype(dtype)
    compiled = npdynamo.compile(reverse_cumsum, backend="numba")
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaFallbackWarning)
            run = run_both(reverse_cumsum, compiled, (x,), {})
        assert run.exc is None
        assert_close(run.got, run.expected, rtol=0.0)
        npdynamo.synchronize()  # the second call is the compiled tier's
    check_same(reverse_cumsum, x, compiled=npdynamo.compile(reverse_cumsum, backend="eager"),
               graphs=1, breaks=0)
    m = x[:2400].reshape(40, 60)
    for axis in (None, 0, 1, -1):
        npdynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # cumprod's overflow
            check_same(scans_along, m, axis, backend="numba", graphs=1, breaks=0)


def test_the_numba_backend_runs_the_compiled_loop():
    x = np.random.default_rng(2).random(5000)
    report = npdynamo.explain(reverse_cumsum, backend="numba")(x)
    (numba,) = report.backend_reports
    assert numba.compiled_calls == ["cumsum"]
    assert ("cumsum", "cumsum: its own compiled loop, between kernels") in numba.not_fused
