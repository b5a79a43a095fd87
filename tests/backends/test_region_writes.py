"""Writes of whole axes and integers into a fresh ``np.zeros`` (``z[:, :, 0] = a``), chained,
become one selection per write on the numba backend (``region_writes``): fused into kernels with
no NumPy write left and no zeros read, NumPy's values bit for bit; writes that do not together
cover the array, into other arrays, or of other dtypes stay NumPy's calls, with NumPy's values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from tests.backends.compare import assert_close, check_one_graph, not_fused
from tests.differential import run_both


def create_grid(x):
    n = x.shape[0]
    z = np.zeros((n, n, 3))
    z[:, :, 0] = x.reshape(-1, 1)
    z[:, :, 1] = x
    return z.reshape(n * n, 3)


def rows_and_constant(x):
    z = np.zeros((3, x.shape[0]), dtype=x.dtype)
    z[0] = x * 2
    z[-1] = x
    z[1, :] = x + 1
    return z


def one_column_only(x):
    z = np.zeros((x.shape[0], 4, 2))
    z[:, 2] = x.reshape(-1, 1)  # the same along the last axis: the zeros would have to be read
    return z


def into_an_argument(x, y):
    y[:, 0] = x
    return y


@pytest.mark.parametrize("fn, args", [
    (create_grid, (np.arange(0, 1, 1 / 9),)),
    (rows_and_constant, (np.arange(5, dtype=np.int32),)),
    (rows_and_constant, (np.linspace(0, 1, 7, dtype=np.float32),)),
])
def test_writes_into_fresh_zeros_fuse_with_no_numpy_write(fn, args):
    check_one_graph(fn, args)
    calls = not_fused(fn, args)
    assert not [c for c in calls if c.startswith(("setitem", "zeros"))], calls


@pytest.mark.parametrize("fn, args", [
    (one_column_only, (np.arange(4.0),)),
    (into_an_argument, (np.arange(3.0), np.ones((3, 2)))),
    (lambda x: _int_into_float(x), (np.arange(4),)),
])
def test_other_writes_stay_numpys_calls(fn, args):
    check_one_graph(fn, args)
    assert any(c.startswith("setitem") for c in not_fused(fn, args))


def _int_into_float(x):
    z = np.zeros((2, x.shape[0]))
    z[0] = x  # int64 into float64: assignment casts
    z[1] = x
    return z


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["float64", "float32", "int16", "bool"]),
       st.lists(st.integers(1, 5), min_size=2, max_size=3), st.data())
def test_chains_of_writes_match_numpy(dtype, shape, data):
    """Random chains of integer/whole-axis writes, covering or not: always NumPy's values."""
    shape = tuple(shape)
    writes = []
    for _ in range(data.draw(st.integers(1, 4))):
        index = tuple(data.draw(st.one_of(st.just(slice(None)), st.integers(-d, d - 1)))
                      for d in shape[:data.draw(st.integers(1, len(shape)))])
        region = [d for d, i in zip(shape, index) if isinstance(i, slice)]
        region += list(shape[len(index):])
        vshape = tuple(data.draw(st.sampled_from([1, d])) for d in region)
        vshape = vshape[data.draw(st.integers(0, len(vshape))):]
        writes.append((index, vshape))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    values = [rng.integers(-9, 9, v).astype(dtype) for _, v in writes]

    def fn(*vals):
        z = np.zeros(shape, dtype=dtype)
        for (index, _), v in zip(writes, vals):
            z[index] = v
        return z

    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)  # a failed rewrite is undone
        run = run_both(fn, compiled, tuple(values), {})
    assert run.exc is None
    assert_close(run.got, run.expected, rtol=0.0)
