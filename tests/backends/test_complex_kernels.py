"""Complex values in numba kernels: arithmetic, abs, conjugate, == and !=, sums, and loops
carrying complex arrays (``runtime.complex_*``: NumPy's complex loops step for step).

Each program runs plain and compiled on the eager backend (bitwise) and on the numba backend;
the numba report must show the complex ops inside kernels, so a silent NumPy call fails.
``test_lowering.py`` checks every table op on every pair of special parts bit for bit.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import npdynamo as nd
from tests.backends.compare import assert_close
from tests.differential import check_same

RNG = np.random.default_rng(5)


def arithmetic(a, b):
    return a * b - np.conj(a) / (b + 1j), np.abs(a - b) ** 2, a * 2.5 + 1


def comparisons(a, b):
    return (a == b) | (a != np.conj(a)), np.isnan(a * b), np.isfinite(a / b)


def conjugate_dot(a, b):
    return np.sum(a * np.conj(b)), (a * b).sum(axis=-1)


def escape_count(c, horizon):
    """mandelbrot's inner step: square, add, compare the modulus (no masked writes)."""
    z = np.zeros_like(c)
    n = np.zeros(c.shape, dtype=np.int64)
    for _ in range(30):
        inside = np.abs(z) < horizon
        n = n + inside
        z = np.where(inside, z * z + c, z)
    return z, n


def adaptive_filter(E, w, mu, R):
    """cma_pt's update: a complex dot, a modulus, a conjugate, per step of a formed loop
    (on one-element arrays: the eager backend's complex scalar arithmetic is not NumPy's to
    the bit, a separate matter)."""
    err = np.zeros(E.shape[0], dtype=E.dtype)
    for i in range(E.shape[0] - w.shape[0]):
        X = E[i:i + w.shape[0]]
        est = np.sum(X * np.conj(w), keepdims=True)
        e = (R - np.abs(est) ** 2) * est
        err[i:i + 1] = e
        w = w + mu * X * np.conj(e)
    return err, w


def _numba_run(fn, args):
    """``fn`` on the numba backend, no fallback warning; the report's fused ops."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = nd.compile(fn, backend="numba")
        for _ in range(2):
            assert_close(compiled(*copy.deepcopy(args)), fn(*copy.deepcopy(args)))
        report = nd.explain(fn, backend="numba")(*copy.deepcopy(args))
    fused = {op for r in report.backend_reports if r is not None for g in r.groups for op in g}
    loops = [rec for r in report.backend_reports if r is not None for rec in r.loops]
    return fused, loops


def _complex(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_elementwise_ops_are_kernel_code(dtype):
    a, b = _complex((6, 40), dtype), _complex((6, 40), dtype)
    for fn in (arithmetic, comparisons, conjugate_dot):
        with np.errstate(all="ignore"):
            check_same(fn, a, b, graphs=1, breaks=0)
    with np.errstate(all="ignore"):
        fused, _ = _numba_run(arithmetic, (a, b))
        assert {"multiply", "subtract", "conjugate", "divide", "absolute", "square"} <= fused
        fused, _ = _numba_run(comparisons, (a, b))
        assert {"equal", "not_equal", "isnan", "isfinite"} <= fused
        fused, _ = _numba_run(conjugate_dot, (a, b))
        assert {"sum", "conjugate"} <= fused


PARTS = st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e300, -1e-310, np.inf, -np.inf, np.nan])


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_special_complex_values_match_numpy(data):
    compiled = nd.compile(arithmetic, backend="numba")
    re = data.draw(arrays(np.float64, 12, elements=PARTS))
    im = data.draw(arrays(np.float64, 12, elements=PARTS))
    a = re.astype(np.complex128)
    a.imag = im
    b = a[::-1].copy()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", nd.backends.numba.NumbaFallbackWarning)
        assert_close(compiled(a, b), arithmetic(a, b))


def test_loops_carrying_complex_arrays_compile_with_no_numpy_call():
    c = _complex((8, 8)) * 1.5
    check_same(escape_count, c, 2.0, graphs=1, breaks=0)
    _, loops = _numba_run(escape_count, (c, 2.0))
    assert [rec.compiled and not rec.numpy_ops for rec in loops] == [True], [str(r) for r in loops]
    E, w = _complex(64), np.zeros(5, dtype=np.complex128)
    w[2] = 1
    check_same(adaptive_filter, E, w, 1e-3, 1.0, graphs=1, breaks=0)
    _, loops = _numba_run(adaptive_filter, (E, w, 1e-3, 1.0))
    assert [rec.compiled for rec in loops] == [True], [str(r) for r in loops]
