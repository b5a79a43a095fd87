"""Attribute stores on arrays (``a.shape = ...``, ``a.dtype = ...``, ``a.strides = ...``): each
is a graph break (the store runs in Python on the very object the names hold), and the code
after it, compiled again, sees what Python sees: the new shape through every name of the
array, the old one through its views, the object's identity kept (``capture/rebuild.py``
rebuilds an array made as a view, or a mask selection, once per object)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same
from tests.fidelity import check_fidelity

BACKENDS = ["eager", "numba"]


def shape_of_input(a):
    a.shape = (a.size,)
    return a * 2, a.shape


def shape_of_result(a):
    b = a + 1
    c = b
    b.shape = -1
    return c.sum(axis=0), c, b is c


def shape_through_a_chain(m):
    x, y = m[0], m[1]
    x.shape = y.shape = x.size  # one value on the stack, stored into two arrays
    r = x > 2
    return x[r], y[r], x.base is m.base or x.base is m


def shape_of_a_view_then_its_base(a):
    v = a[1:]
    v.shape = (v.size,)
    return v * 1, a + 0, v.shape, a.shape


def dtype_view(a):
    b = a + 0.0
    b.dtype = np.int64  # reinterprets the bits
    return b >> 52, b.dtype


def strides_store(a):
    b = a.copy()
    b.strides = (b.itemsize * b.shape[1], b.itemsize)
    return b + 0, b.strides


def non_contiguous_store(a):
    t = a.T + 0  # NumPy keeps the transposed layout: the store raises
    t.shape = t.size
    return t


def store_then_loop_with_breaks(a, steps):
    a.shape = (a.size,)
    total = np.zeros_like(a)
    for i in range(steps):
        keep = a > i
        total[keep] += a[keep]  # a mask: a graph break in each iteration
    return total, a.shape


CASES = [
    (shape_of_input, lambda: (np.arange(6.0).reshape(2, 3),)),
    (shape_of_result, lambda: (np.arange(6.0).reshape(2, 3),)),
    (shape_through_a_chain, lambda: (np.arange(18).reshape(2, 3, 3),)),
    (shape_of_a_view_then_its_base, lambda: (np.arange(8.0).reshape(4, 2),)),
    (dtype_view, lambda: (np.linspace(1, 4, 4),)),
    (strides_store, lambda: (np.arange(6.0).reshape(2, 3),)),
    (non_contiguous_store, lambda: (np.arange(6.0).reshape(2, 3),)),
    (store_then_loop_with_breaks, lambda: (np.arange(9.0).reshape(3, 3), 4)),
]

#: (graphs, breaks) of each case: one break per store; shape_through_a_chain also breaks three
#: times at ``.base``; store_then_loop_with_breaks at ``total[keep] += a[keep]`` (a mask
#: selection added to one), its store, and in the loop's resume
COUNTS = {
    shape_of_input: (1, 1), shape_of_result: (2, 1), shape_through_a_chain: (1, 5),
    shape_of_a_view_then_its_base: (1, 1), dtype_view: (2, 1), strides_store: (2, 2),
    non_contiguous_store: (1, 1), store_then_loop_with_breaks: (2, 4),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_attribute_store_matches_python(backend, fn, make, request):
    if backend == "numba" and fn is non_contiguous_store:
        # a known fault of the numba backend, kept visible: its kernels write C-ordered
        # results where NumPy keeps the operands' memory order (order="K"), so the store
        # that raises in Python succeeds on the kernel's result
        request.applymarker(pytest.mark.xfail(strict=True, reason="numba results are C-ordered"))
    graphs, breaks = COUNTS[fn]
    check_same(fn, *make(), backend=backend, graphs=graphs, breaks=breaks)


@pytest.mark.parametrize("fn,make", CASES[:4], ids=[c[0].__name__ for c in CASES[:4]])
def test_attribute_store_keeps_identities(fn, make):
    check_fidelity(fn, *make())


@pytest.mark.parametrize("fn,make", CASES[:6] + CASES[7:],
                         ids=[c[0].__name__ for c in CASES[:6] + CASES[7:]])
def test_attribute_store_is_a_break_with_a_reason(fn, make):
    report = npdynamo.explain(fn)(*make())
    stores = [r for r in report.break_reasons if "assigning the attribute" in r.reason]
    assert stores and all(r.kind == "side_effect" for r in stores)
