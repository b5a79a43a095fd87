"""Nopython helpers that compiled loop programs call (``loop_program``).

Matrix products: numba's own ``np.dot`` needs SciPy's BLAS, which npdynamo does not depend on,
so the loop programs multiply with these loops (row-major, contiguous reads, the dot products'
sums reassociable like the kernels' reductions: within numba's usual tolerance of NumPy's BLAS).

Python scalar arithmetic: a Python ``int`` never overflows and a Python division by zero raises,
where int64 wraps and ``error_model="numpy"`` gives inf. These helpers raise instead
(``OverflowError``, ``ZeroDivisionError``); the loop program then reruns the loop in Python,
which gives Python's own result or exception. A speculated ``assert`` (``assume``) raises
when it fails, likewise.

NumPy calls in object mode (ops without a nopython form) are ``checked``: they give what the
compiled code was typed for, or raise ``UnexpectedValue``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit
from numba.extending import overload

from npdynamo.backends.numba.runtime import radd
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.speculation import AssumptionFailed

#: ``inline="always"``: numba inlines each helper into the loop program's own code. A call of a
#: separately compiled function that takes arrays costs ~70 ns per call in reference counting
#: and argument passing (more than a 16-element dot product itself); inlined, the views of a
#: dot's operands are LLVM values the optimiser keeps in registers. (The helpers then run under
#: the loop program's ``boundscheck=True``, as the rest of its code does.)
_FLAGS = {"error_model": "numpy", "nogil": True, "cache": False, "inline": "always"}


def zero_of(x):
    """A zero of ``x``'s dtype (nopython only, ``overload`` below): no array allocated."""
    raise NotImplementedError("zero_of runs in compiled code only")


@overload(zero_of, inline="always")
def _zero_of(x):
    dtype = x.dtype
    return lambda x: dtype(0)


#: Dots shorter than this sum in order; longer ones reassociate (``radd``) so LLVM vectorises
#: them. A vectorised sum of a few terms costs more than it saves: a 16x16 Cholesky by rows
#: (dots of 0-15 terms) took 2.6 us with every dot reassociated, 1.1 us with these in order
#: (hand-written numba 1.3 us); at 80x80 the reassociated dots are 1.4x faster than in order
#: (31 us against 46 us; one noisy run each, ``docs/loop-corpus.md``).
SHORT_DOT = 32


@njit(**_FLAGS)
def matvec(a, x):
    """``a @ x`` for a 2-D ``a`` and a 1-D ``x``."""
    m, n = a.shape
    out = np.zeros(m, a.dtype)
    for i in range(m):
        acc = out[i]  # a zero of the result's dtype
        if n < SHORT_DOT:
            for k in range(n):
                acc += a[i, k] * x[k]
        else:
            for k in range(n):
                acc = radd(acc, a[i, k] * x[k])
        out[i] = acc
    return out


@njit(**_FLAGS)
def vecmat(x, a):
    """``x @ a`` for a 1-D ``x`` and a 2-D ``a`` (accumulated row by row of ``a``)."""
    n, m = a.shape
    out = np.zeros(m, a.dtype)
    for k in range(n):
        xk = x[k]
        for j in range(m):
            out[j] += xk * a[k, j]
    return out


@njit(**_FLAGS)
def matmat(a, b):
    """``a @ b`` for 2-D ``a`` and ``b`` (i-k-j order: contiguous rows of ``b`` and the result)."""
    m, n = a.shape
    p = b.shape[1]
    out = np.zeros((m, p), a.dtype)
    for i in range(m):
        for k in range(n):
            aik = a[i, k]
            for j in range(p):
                out[i, j] += aik * b[k, j]
    return out


@njit(**_FLAGS)
def vecvec(x, y):
    """``x @ y`` for 1-D ``x`` and ``y``: one number (``SHORT_DOT``: in order or not)."""
    acc = zero_of(x)
    n = x.shape[0]
    if n < SHORT_DOT:
        for k in range(n):
            acc += x[k] * y[k]
        return acc
    for k in range(n):
        acc = radd(acc, x[k] * y[k])
    return acc


@njit(**_FLAGS)
def vecvec_gather(x, y, index):
    """``x @ y[index]`` for 1-D ``x``, ``y`` and ``index`` (as long as ``x``), without the
    gathered copy. ``y[index[k]]`` is left to numba's bounds check (the loop programs that
    inline this helper are compiled with ``boundscheck=True``): it refuses an index outside
    ``-n .. n - 1`` and wraps a negative one once, as NumPy does, so an index NumPy refuses
    raises here too and the Python loop raises NumPy's error. (Wrapping it here first made
    numba wrap it again: an index of ``-2n`` read ``y[0]``.) The equal lengths tested first
    let LLVM drop the checks of ``x[k]`` and ``index[k]``. A plain sum: a gather does not
    vectorise, and ``radd``'s call was not always inlined here (a CSR product ran 3-4x slower
    in some compiles, noisy measurements)."""
    acc = zero_of(x)
    m = x.shape[0]
    if index.shape[0] != m:  # (the writer passes equal lengths: NumPy's ValueError otherwise)
        raise ValueError("matmul: mismatch in its core dimension")
    for k in range(m):
        acc = acc + x[k] * y[index[k]]
    return acc


#: Operands (and products) below this magnitude cannot overflow int64 in one add or multiply.
#: The checks test before computing, in floats: a wrapped int64 result cannot be tested
#: afterwards (LLVM may assume signed arithmetic never overflows and fold the test away), and
#: they may refuse a few results that would fit: the Python loop then computes them.
_SAFE = 2.0**62


@njit(**_FLAGS)
def int_add(a, b):
    """Python's ``a + b`` of ints, or ``OverflowError`` where int64 might not hold it."""
    if abs(float(a)) >= _SAFE or abs(float(b)) >= _SAFE:
        raise OverflowError("int64 overflow")
    return a + b


@njit(**_FLAGS)
def int_sub(a, b):
    """Python's ``a - b`` of ints, or ``OverflowError`` where int64 might not hold it."""
    if abs(float(a)) >= _SAFE or abs(float(b)) >= _SAFE:
        raise OverflowError("int64 overflow")
    return a - b


@njit(**_FLAGS)
def int_mul(a, b):
    """Python's ``a * b`` of ints, or ``OverflowError`` where int64 might not hold it."""
    if abs(float(a) * float(b)) >= _SAFE:
        raise OverflowError("int64 overflow")
    return a * b


@njit(**_FLAGS)
def int_floordiv(a, b):
    """Python's ``a // b`` of ints (numba floors as Python does), raising as Python does."""
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    if b == -1 and abs(float(a)) >= _SAFE:
        raise OverflowError("int64 overflow")
    return a // b


@njit(**_FLAGS)
def int_mod(a, b):
    """Python's ``a % b`` of ints (the sign of ``b``, as numba gives it), raising as Python
    does."""
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    return a % b


@njit(**_FLAGS)
def true_divide(a, b):
    """Python's ``a / b`` of numbers: ``ZeroDivisionError`` for a zero divisor."""
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


@njit(**_FLAGS)
def py_sqrt(a):
    """``math.sqrt`` of a real number as a float: ``ValueError`` below zero (nopython's own
    sqrt gives nan there; a nan argument gives nan in both)."""
    if a < 0.0:
        raise ValueError("math domain error")
    return math.sqrt(a)


@njit(**_FLAGS)
def _shapes_differ():
    """Raised apart from ``assign``'s copy loop, so the error path costs no compile time; the
    loop program then reruns the loop in Python, which raises NumPy's own error."""
    raise ValueError("could not broadcast the assigned array into the selection")


@njit(**_FLAGS)
def assign(dst, src):
    """``dst[...] = src`` for arrays of one shape that do not overlap (a kernel's output
    written into a slice of another array). numba's own slice assignment, which broadcasts
    and checks for overlap, took seconds to compile in each new process (most of a stencil
    loop program's compile); this loop takes a fraction of that."""
    if dst.shape != src.shape:
        _shapes_differ()
    for idx in np.ndindex(dst.shape):
        dst[idx] = src[idx]


@njit(**_FLAGS)
def assume(holds):
    """A speculated ``assert`` (``ops.speculation.asserted``): raise when it fails; the loop
    then reruns in Python, whose ``asserted`` raises again and reruns the frame in Python."""
    if not holds:
        raise AssumptionFailed("an assert captured as passing fails on this data")
    return holds


# -- NumPy calls in object mode ----------------------------------------------------------------
class UnexpectedValue(TypeError):
    """A NumPy call in object mode gave what the compiled code cannot take (the loop then
    reruns in Python, and keeps running there)."""


def checked(impl: Callable, meta: ArrayMeta | ScalarMeta, name: str,
             private: bool) -> Callable:
    """``impl`` raising ``UnexpectedValue`` unless it gives what the compiled code was typed
    for (a C-contiguous array of ``meta``'s dtype and rank, or a NumPy scalar of its dtype):
    numba would read any other memory layout wrongly. A ``private`` result (one nothing holds
    after the iteration, only read) may be a view of another layout (``A.T``): its C-ordered
    copy is read instead, which nobody can tell apart."""

    def call(*args: Any, **kwargs: Any) -> Any:
        out = impl(*args, **kwargs)
        if isinstance(meta, ScalarMeta):  # an int beyond int64 fails numba's unboxing
            ok = type(out) is meta.type
        elif meta.scalar:
            ok = type(out) is meta.dtype.type
        else:  # the rule gave the shape: numba reads it (and the strides) from the array
            if private and type(out) is np.ndarray and not out.flags.c_contiguous:
                out = np.ascontiguousarray(out)
            ok = (type(out) is np.ndarray and out.dtype == meta.dtype
                  and out.ndim == len(meta.shape) and out.flags.c_contiguous)
        if not ok:
            raise UnexpectedValue(f"{name} gave a value of another type or memory layout "
                                  f"than the compiled loop takes ({type(out).__name__})")
        return out

    return call
