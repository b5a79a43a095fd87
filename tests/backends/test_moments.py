"""``var``/``std`` on the numba backend: written as NumPy's own mean, deviations, squares and
sum, fused into kernels (no NumPy call left) for float and integer data over trailing axes, at
the kernels' tolerances against NumPy; over leading axes, with ``dtype=``, or without degrees of
freedom (NumPy's warning) they stay NumPy's call, with NumPy's values and warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from tests.backends.compare import assert_close, check_one_graph, not_fused
from tests.differential import run_both


def cronbach(items):
    itemvars = items.var(axis=1, ddof=1)
    tscores = items.sum(axis=0)
    n = len(items)
    return n / (n - 1) * (1 - itemvars.sum() / tscores.var(ddof=1))


def _moments(axis, ddof, keepdims):
    def fn(x):
        return (np.var(x, axis=axis, ddof=ddof, keepdims=keepdims),
                x.std(axis=axis, ddof=ddof, keepdims=keepdims) * 2)

    return fn


AXES = {1: [None, 0, -1], 2: [None, 1, (0, 1), -1], 3: [None, 2, (1, 2), (-1, -2, 0)]}


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["float32", "float64", "int64", "int8"]), st.integers(1, 3),
       st.data(), st.sampled_from([0, 1, 2.5]), st.booleans(), st.integers(0, 2**32 - 1))
def test_var_and_std_match_numpy_in_kernels(dtype, ndim, data, ddof, keepdims, seed):
    shape = tuple(data.draw(st.lists(st.integers(3, 9), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.sampled_from(AXES[ndim]))
    rng = np.random.default_rng(seed)
    x = (rng.normal(3, 2, shape) * (100 if dtype[0] == "i" else 1)).astype(dtype)
    fn = _moments(axis, ddof, keepdims)
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    run = run_both(fn, compiled, (x,), {})
    assert run.exc is None
    assert_close(run.got, run.expected, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_trailing_var_and_std_leave_no_numpy_call():
    x = np.random.default_rng(1).random((40, 30))
    for fn in (cronbach, _moments(1, 1, False), _moments(None, 0, True)):
        check_one_graph(fn, (x,))
        calls = not_fused(fn, (x,))
        assert not [c for c in calls if c.startswith(("var", "std"))], (fn, calls)


@pytest.mark.parametrize("fn, x", [
    (_moments(0, 0, False), np.random.default_rng(2).random((6, 5))),  # a leading axis
    (lambda x: x.var(dtype=np.float32), np.arange(12.0)),
    (_moments(None, 0, False), np.random.default_rng(3).random((4, 3)).astype(np.float16)),
])
def test_what_is_not_rewritten_stays_numpys_call(fn, x):
    check_one_graph(fn, (x,))
    assert any(c.startswith(("var", "std")) for c in not_fused(fn, (x,)))


def test_no_degrees_of_freedom_warns_as_numpy_does():
    def fn(x):
        return x.var(axis=1, ddof=3)

    x = np.ones((4, 3))
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_both(fn, compiled, (x,), {}, warned=caught)
    assert run.exc is None
    assert_close(run.got, run.expected)
    messages = [str(w.message) for w in caught if "Degrees of freedom" in str(w.message)]
    assert len(messages) == 2, messages  # once plain, once compiled
