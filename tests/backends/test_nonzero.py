"""``np.nonzero(a)`` and the one-argument ``np.where(a)`` in a graph (``ops/nonzero_indices.py``):
one op whose results have a size known only at run time, so the code after it stays in the graph
(numpy-benchmarks' ``grouping``: one graph, no break); the numba backend's compiled loop for
1-d data (``backends/numba/nonzero.py``) gives NumPy's indices exactly, sparse or dense, NaN
and negative zero included; where Python code needs the count the graph breaks at the call, as
it did before the op existed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from npdynamo.backends.numba.nonzero import nonzero as compiled_nonzero
from tests.differential import check_same


def grouping(values):  # numpy-benchmarks' kernel
    diff = np.concatenate(([1], np.diff(values)))
    idx = np.concatenate((np.where(diff)[0], [len(values)]))
    return values[idx[:-1]], np.diff(idx)


def selected(x):
    idx = np.nonzero(x)[0]
    return x[idx] * 2 + 1, idx


def two_d(x):
    rows, cols = np.where(x > 0.5)
    return rows, cols, x[rows, cols].sum()


def rows_in_a_loop(x):  # a kernel over an array one longer than the count, in a loop body
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        idx = np.where(x[i] > 0.5)[0]
        out[i] = np.concatenate((idx, [7])).sum() * 2
    return out


def count_in_python(x, m):  # `if idx.size` needs the count: the break is at the call
    idx = np.nonzero(m)[0]
    if idx.size == 0:
        return x.sum()
    return x[idx].mean() * 2


@pytest.fixture(autouse=True)
def _untuned(monkeypatch):
    """The numba program runs every call (not NumPy's graph the tuner might keep)."""
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        yield


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_grouping_is_one_graph_with_numpys_values(backend):
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 3000):
        npdynamo.reset()
        values = np.sort(rng.integers(0, 40, n).astype(np.uint32))
        check_same(grouping, values, backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_the_indices_feed_ops_after_them(backend):
    rng = np.random.default_rng(1)
    check_same(selected, (rng.random(60) > 0.7) * rng.random(60), backend=backend, graphs=1,
               breaks=0)
    check_same(two_d, rng.random((6, 7)), backend=backend, graphs=1, breaks=0)
    check_same(rows_in_a_loop, rng.random((6, 9)), backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_python_needing_the_count_breaks_at_the_call(backend):
    rng = np.random.default_rng(2)
    for m in (rng.random(9) > 0.5, np.zeros(9, bool)):
        npdynamo.reset()
        check_same(count_in_python, rng.random(9), m, backend=backend, graphs=1, breaks=1)
    report = npdynamo.explain(count_in_python, backend=backend)(rng.random(9), m)
    assert "needs how many elements are nonzero" in report.break_reasons[0].reason


_DTYPES = ["bool", "int8", "uint16", "int64", "uint64", "float32", "float64"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_DTYPES), st.integers(0, 400), st.floats(0.0, 1.0),
       st.integers(0, 2**32 - 1), st.booleans())
def test_the_compiled_loop_gives_numpys_indices(dtype, n, density, seed, strided):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(2 * n) < density, rng.normal(0, 9, 2 * n), 0.0)
    if dtype.startswith("float"):  # NaN counts, -0.0 does not
        x[rng.random(2 * n) < 0.05] = np.nan
        x[rng.random(2 * n) < 0.05] = -0.0
    x = x.astype(dtype) if dtype != "bool" else x != 0
    x = x[::2] if strided else x[:n]
    (got,), (want,) = compiled_nonzero(x), np.nonzero(x)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_other_data_runs_numpys_nonzero():
    x = np.arange(12.0).reshape(3, 4) % 3
    for got, want in zip(compiled_nonzero(x), np.nonzero(x)):
        assert np.array_equal(got, want)
