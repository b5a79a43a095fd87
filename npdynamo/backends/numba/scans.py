"""``np.cumsum`` and ``np.cumprod`` as compiled loops on the numba backend (``attach``, before
fusion).

NumPy runs a scan as its ufunc's ``accumulate``: each element is the previous result plus (or
times) the next input, rounded once, in order along the axis. A loop that keeps the running
value in a register computes the same roundings, so its results are NumPy's bit for bit; but
NumPy's loop is its generic binary loop with the output overlapping an input, which reloads the
previous result from memory at every element (about 3.4 ns an element on a million float64s,
``np.cumsum(x[::-1])``, where the loop here takes about 1.1 ns). Along an axis that is not the
last, each step adds one whole slice to the one before, the same roundings again.

Covered: float32, float64 and int64 data scanned in their own dtype (integers wrap around as
NumPy's do), flattened (``axis=None``, C order as NumPy flattens) or along any axis, from
``MIN_SIZE`` elements on (below, NumPy's call costs less than the setting up). Everything else,
``dtype=`` a different type, the nan-ignoring scans and ``include_initial``, runs NumPy's own.
The result is a new C-ordered array, as NumPy's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from npdynamo.backends.numba.runtime import wrapping_add, wrapping_mul
from npdynamo.fx.graph import Graph

#: Below this many elements NumPy's own call is faster than reshaping and dispatching.
MIN_SIZE = 1024
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64))


def _loops(combine: Callable) -> tuple[Callable, Callable]:
    """The compiled scans with ``combine`` (an ``njit`` function of two scalars): along the
    last axis of a 2-D array (the running value in a register) and along the middle axis of a
    3-D one (a slice at a time)."""

    @njit(nogil=True, error_model="numpy", cache=True)
    def rows(a, out):  # pragma: no cover - compiled
        for p in range(a.shape[0]):
            if a.shape[1]:
                acc = a[p, 0]
                out[p, 0] = acc
                for k in range(1, a.shape[1]):
                    acc = combine(acc, a[p, k])
                    out[p, k] = acc

    @njit(nogil=True, error_model="numpy", cache=True)
    def planes(a, out):  # pragma: no cover - compiled
        for p in range(a.shape[0]):
            if a.shape[1]:
                for j in range(a.shape[2]):
                    out[p, 0, j] = a[p, 0, j]
                for k in range(1, a.shape[1]):
                    for j in range(a.shape[2]):
                        out[p, k, j] = combine(out[p, k - 1, j], a[p, k, j])

    return rows, planes


@njit(error_model="numpy")
def _float_add(a, b):  # pragma: no cover - compiled
    return a + b


@njit(error_model="numpy")
def _float_mul(a, b):  # pragma: no cover - compiled
    return a * b


#: (op name, is an integer dtype) -> (rows, planes)
_KERNELS = {("cumsum", False): _loops(_float_add), ("cumprod", False): _loops(_float_mul),
            ("cumsum", True): _loops(wrapping_add), ("cumprod", True): _loops(wrapping_mul)}


def _compiled(name: str, numpy_impl: Callable) -> Callable:
    """``numpy_impl`` (the op's) with the compiled loop where it applies."""
    float_loops, int_loops = _KERNELS[(name, False)], _KERNELS[(name, True)]

    def scan(a, *, axis=None, dtype=None, include_initial=False):
        if (include_initial or not isinstance(a, np.ndarray) or a.dtype not in _DTYPES
                or a.size < MIN_SIZE or (dtype is not None and np.dtype(dtype) != a.dtype)
                or (axis is not None and not -a.ndim <= axis < a.ndim)):
            return numpy_impl(a, axis=axis, dtype=dtype, include_initial=include_initial)
        if axis is None:
            shape, pre, n, post = (a.size,), 1, a.size, 1
            a = a if a.ndim == 1 else a.ravel()  # (a reversed vector is not copied)
        else:
            shape, ax = a.shape, axis % a.ndim
            pre, n = int(np.prod(a.shape[:ax])), a.shape[ax]
            post = int(np.prod(a.shape[ax + 1:]))
        rows, planes = int_loops if a.dtype.kind == "i" else float_loops
        out = np.empty((pre, n, post), a.dtype)
        if post == 1:
            rows(a.reshape(pre, n), out.reshape(pre, n))
        else:
            planes(a.reshape(pre, n, post), out)
        return out.reshape(shape)

    scan.__name__ = f"{name}_loop"
    return scan


def attach(graph: Graph) -> None:
    """Have each ``cumsum``/``cumprod`` node of ``graph`` run its compiled loop (the program
    calls a node's ``numba_impl`` in place of its NumPy implementation)."""
    for node in graph.nodes:
        name = getattr(node.target, "name", None)
        if name in ("cumsum", "cumprod") and not node.kwargs.get("include_initial"):
            node.meta["numba_impl"] = _compiled(name, node.target.impl)
