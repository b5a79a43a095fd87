"""Integer overflow in numba kernels wraps around as in NumPy's loops.

numba marks signed integer arithmetic as unable to overflow (LLVM's ``nsw``), so LLVM may fold
``(a + 1) > a`` to True even for the largest int64, where NumPy wraps and says False. Kernels
compute int64 ``+ - *`` through wrapping intrinsics (``runtime.wrapping_add`` ...); these tests
compare kernels with NumPy bit for bit on values at the ends of each integer type.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays, from_dtype

import npdynamo
from tests.differential import assert_same_value


def compares_after_add(a, b):
    return (a + 1) > a, (a - b) < a, a * 3 + b


def abs_of_difference(a, b):
    return -a + np.abs(a - 7), np.square(a) - b


def reductions(a, b):
    return (a * b).sum(), (a + b).sum(axis=-1), np.prod(a - b)


PROGRAMS = [compares_after_add, abs_of_difference, reductions]
_COMPILED: dict = {}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint64", "uint8"])
@pytest.mark.parametrize("fn", PROGRAMS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_kernels_wrap_like_numpy(fn, dtype, data):
    compiled = _COMPILED.setdefault(fn, npdynamo.compile(fn, backend="numba"))
    edges = from_dtype(np.dtype(dtype))
    a = data.draw(arrays(dtype, (3, 8), elements=edges))
    b = data.draw(arrays(dtype, (3, 8), elements=edges))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba kernels do not repeat NumPy's warnings
        want = fn(a, b)
        for _ in range(3):  # the kernels' own call, then the tuned ones
            assert_same_value(want, compiled(a, b))


def test_the_largest_int64_plus_one_is_not_larger():
    a = np.full(64, np.iinfo(np.int64).max)
    compiled = npdynamo.compile(compares_after_add, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(a, a)
    assert not got[0].any()  # wrapped: -2**63 > 2**63 - 1 is False
