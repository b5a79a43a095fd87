"""The result markers of whole-graph functions (``backends/numba/boxing.py``), in plain njit code.

``numpy_scalar`` must box every number as NumPy's scalar of the same dtype with the same bytes
(``-0.0``, NaN payloads, the largest unsigned values); ``returned_array`` must box an array
as numba's own box does (values, dtype, flags, the argument itself when one is returned)
and leak nothing; a value neither marker knows passes through as numba boxes it.
"""

from __future__ import annotations

import gc
import os
import re
import weakref

import numpy as np
import pytest
from numba import njit
from numba.core.runtime import _nrt_python as _nrt
from numba.core.runtime import rtsys

from npdynamo.backends.numba import boxing
from npdynamo.backends.numba.boxing import numpy_scalar, returned_array

SCALARS = [np.int8(-128), np.int16(-2), np.int32(7), np.int64(-2**63), np.uint8(255),
           np.uint16(65535), np.uint32(2**32 - 1), np.uint64(2**64 - 1), np.float32(-0.0),
           np.float32(np.inf), np.float64(-0.0), np.float64(5e-324), np.bool_(True),
           np.bool_(False), np.complex64(1 - 2j), np.complex128(complex(-0.0, np.nan))]


@njit
def _first_as_scalar(x):
    return (numpy_scalar(x[0]),)


@njit
def _first_plain(x):
    return (x[0],)


def test_the_scalar_maker_is_numpys_own():
    """The slot ``boxing`` reads is ``PyArray_Scalar``'s in this NumPy's own header, and the
    maker passed its check in this process (else no result would be boxed by it)."""
    header = os.path.join(np.get_include(), "numpy", "__multiarray_api.h")
    with open(header) as f:
        text = f.read()
    slot = re.search(r"#define PyArray_Scalar \\\s*\(\*\([^\n]*\)\) \\\s*PyArray_API\[(\d+)\]",
                     text)
    assert slot is not None and int(slot.group(1)) == boxing.ARRAY_SCALAR_SLOT
    assert boxing.SCALARS_BOXED


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: f"{v.dtype}-{v!r}")
def test_a_number_is_boxed_as_its_numpy_scalar_bit_for_bit(value):
    (got,) = _first_as_scalar(np.array([value]))
    assert type(got) is type(value)
    assert got.tobytes() == value.tobytes()
    (plain,) = _first_plain(np.array([value]))  # (numba's own box: a Python number)
    assert type(plain) in (int, float, bool, complex)


def test_a_nan_payload_survives():
    bits = np.array([0x7FF8_0000_0000_1234], dtype=np.uint64).view(np.float64)
    (got,) = _first_as_scalar(bits)
    assert type(got) is np.float64 and got.tobytes() == bits.tobytes()


@njit
def _arrays(x, y):
    return returned_array(x * 2), returned_array(x), returned_array(y), numpy_scalar((1, 2))


@njit
def _arrays_plain(x, y):
    return x * 2, x, y, (1, 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.bool_, np.complex128])
def test_arrays_are_boxed_as_numba_boxes_them(dtype):
    x = np.arange(12).reshape(3, 4).astype(dtype)
    y = np.arange(5.0)
    y.flags.writeable = False  # (returned as is: the argument itself, still read-only)
    got, plain = _arrays(x, y), _arrays_plain(x, y)
    for a, b in zip(got[:3], plain[:3]):
        assert type(a) is type(b) is np.ndarray
        assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
        np.testing.assert_array_equal(a, b)
        assert (a.flags.writeable, a.flags.c_contiguous) == (b.flags.writeable,
                                                             b.flags.c_contiguous)
    assert got[1] is x and got[2] is y and not got[2].flags.writeable
    assert got[3] == (1, 2) and type(got[3]) is tuple  # (not a number: numba's own box)


@pytest.fixture
def nrt_stats():
    """numba's allocation counts on (as numba's own test support turns them on)."""
    enabled = _nrt.memsys_stats_enabled()
    _nrt.memsys_enable_stats()
    yield
    if not enabled:
        _nrt.memsys_disable_stats()


def test_returned_arrays_leak_nothing(nrt_stats):
    x = np.arange(6.0)
    _arrays(x, x)  # (compiled)
    gc.collect()
    before = rtsys.get_allocation_stats()
    for _ in range(50):
        new, *_ = _arrays(x, x)
        gone = weakref.ref(new)
        del new, _
        assert gone() is None  # the boxed array owned its buffer alone
    after = rtsys.get_allocation_stats()
    allocated = after.alloc - before.alloc
    assert allocated >= 50 and after.free - before.free == allocated
