"""The ``mean`` op's own implementation is NumPy's ``np.mean`` bitwise: the same type, dtype,
shape, values, warnings and errors, on the fast path (non-empty float32/float64 arrays) and off
it (other dtypes, empty arrays, NumPy scalars, lists)."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from npdynamo.ops import REGISTRY

MEAN = REGISTRY["mean"].impl


def _run(fn, a, **kwargs):
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        try:
            return fn(a, **kwargs), None, [str(w.message) for w in caught]
        except Exception as exc:  # the same error is part of the contract
            return None, repr(exc), [str(w.message) for w in caught]


@settings(max_examples=300, deadline=None)
@given(shape=st.lists(st.integers(0, 5), max_size=3).map(tuple),
       dtype=st.sampled_from([np.float32, np.float64, np.float16, np.int32, np.bool_]),
       seed=st.integers(0, 2**32 - 1), keepdims=st.booleans(), data=st.data())
def test_mean_is_numpys_mean_bitwise(shape, dtype, seed, keepdims, data):
    a = (np.random.default_rng(seed).standard_normal(shape) * 100).astype(dtype)
    axes = [None, *range(-len(shape), len(shape))]
    if len(shape) > 1:
        axes.append((0, len(shape) - 1))
    axis = data.draw(st.sampled_from(axes))
    want, want_error, want_warnings = _run(np.mean, a, axis=axis, keepdims=keepdims)
    got, got_error, got_warnings = _run(MEAN, a, axis=axis, keepdims=keepdims)
    assert (got_error, got_warnings) == (want_error, want_warnings)
    assert type(got) is type(want)
    if want is not None:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        assert np.shape(got) == np.shape(want)
        assert np.array_equal(got, want, equal_nan=True)


def test_other_inputs_go_through_numpy():
    assert MEAN([1, 2, 4]) == np.mean([1, 2, 4])
    assert type(MEAN(np.float32(2.5))) is np.float32
