"""Programs for the ops whose ONNX form is a composite (``onnx_math``, ``onnx_stats``,
``onnx_arrays``), on inputs that reach their corner cases: signed zeros, infinities, NaNs,
zero and negative divisors, the most negative integer, ties. ``test_onnx.py`` runs them in ONNX
Runtime against NumPy (``CASES`` of ``onnx_cases.py`` with these added), and ``OP_GRAPHS``
lists canonical ops no public NumPy call captures today (``np.atleast_2d``, ``np.real``):
they are checked on a graph of that one op."""

from __future__ import annotations

import math

import numpy as np

_r = np.random.default_rng(11)
SPECIAL = np.array([[0.0, -0.0, 1.0, -1.0], [2.5, -2.5, 1e-12, -1e-300],
                    [1e10, np.inf, -np.inf, np.nan], [7.0, -7.0, 3.0, 0.5]])
DIVISOR = np.array([[3.0, -3.0, 0.0, -0.0], [0.7, 0.7, np.inf, -np.inf],
                    [-2.0, 2.0, np.nan, 1.0], [2.0, 2.0, -0.5, 0.25]])
SMALL = np.array([[0.0, 1e-20, -1e-20, 1e-9], [-1e-9, 0.3, -0.3, 5.0],
                  [-5.0, 700.0, -800.0, np.inf], [-np.inf, np.nan, 1e-300, -1.0]])
UNIT = np.array([[0.0, -0.0, 1.0, -1.0], [0.5, -0.5, 1e-10, -0.999999],
                 [0.3, 2.0, np.nan, 0.7], [-0.2, 0.9999, -1e-300, 0.1]])
I64 = np.array([[7, -7, 0, 9], [np.iinfo(np.int64).min, 5, -5, 12],
                [100, -100, 1, -1], [3, 64, -64, 6]])
J64 = np.array([[2, 2, 3, 0], [-1, -3, 3, 8], [-7, 7, 0, 0], [5, -4, 9, 6]])
WITH_NAN = np.where(_r.random((5, 4)) < 0.25, np.nan, _r.standard_normal((5, 4)))
WITH_NAN[:, 2] = np.nan  # an all-NaN column
TIES = np.array([[3.0, 1.0, 3.0, np.nan, 1.0], [np.inf, np.nan, np.inf, -0.0, 0.0]])
X = _r.standard_normal((5, 4))
V = np.sort(_r.standard_normal(6))
M = (_r.standard_normal((3, 3)) + 2 * np.eye(3))


def _elementwise(s, d, u, t):
    return (np.floor_divide(s, d), np.remainder(s, d), *np.divmod(s, d), np.fmax(s, d),
            np.fmin(s, d), np.heaviside(s, 0.5), np.nan_to_num(s), np.nan_to_num(
                s, nan=-1.0, posinf=9.0, neginf=-9.0), np.arctan2(s, d), np.arctan(s),
            np.arcsin(u), np.arccos(u), np.sinh(t), np.expm1(t), np.log1p(np.abs(t)),
            np.log1p(t), np.logaddexp2(s, d), np.cbrt(s), np.sinc(s), s % 2.5, s // -2.0,
            np.arcsinh(s), np.arcsinh(t), np.arccosh(np.abs(s) + 1), np.arccosh(s),
            np.arctanh(u), np.arcsinh(s * 1e300), np.arccosh(np.abs(s) * 1e300 + 1),
            np.sinh(s * 101.4), np.cosh(s * 101.4))


def _elementwise32(s, d, u, t):
    return (np.cosh(s * 12.7), np.sinh(s * 12.7), np.arctan2(s, d), np.expm1(t),
            np.log1p(np.abs(t)), np.floor_divide(s, d),
            np.fmax(s, d), np.cbrt(s), np.arcsin(u), np.sinh(t), np.remainder(s, d))


def _integers(i, j):
    return (i // j, i % j, *np.divmod(i, j), np.gcd(i, j), np.lcm(i, j), np.left_shift(i, 3),
            np.right_shift(i, 2), np.left_shift(i, j), np.right_shift(i, np.abs(j)),
            np.fmax(i, j), i // 3, -i % 5)


def _unsigned(i, j):
    return (i // j, i % j, np.gcd(i, j), np.left_shift(i, 2), np.right_shift(i, j))


def _small_ints(a, b, c, d):
    return (np.maximum(a, b), np.minimum(a, b), a.max(axis=0), b.min(), c.max(axis=1),
            np.maximum(c, d), -c, -d, np.fmax(a, b), a.max(), np.clip(a, -3, 3))


def _nan_reductions(w):
    return (np.nanmax(w, axis=0), np.nanmin(w), np.nanprod(w, axis=1), np.nanstd(w),
            np.nanvar(w, axis=0, ddof=1), np.nanargmax(w, axis=1), np.nanargmin(w[:, :2]),
            np.nancumsum(w, axis=1), np.nancumprod(w), np.nanmedian(w, axis=0),
            np.nanpercentile(w, [10, 50, 95], axis=1), np.nanquantile(w, 0.3, keepdims=True,
                                                                      axis=0),
            np.nanmedian(w))


def _quantiles(x, w):
    return (np.median(x), np.median(x, axis=1), np.median(x[:4], axis=0, keepdims=True),
            np.quantile(x, (0.0, 0.25, 1.0), axis=0), np.percentile(x, 37.5, axis=1),
            np.median(w, axis=1), np.cumprod(x, axis=0), np.cumprod(x),
            np.cumulative_prod(x, axis=1), np.cumprod(x[:, 0] > 0))


def _sorting(t, x):
    return (np.argsort(t, axis=1, stable=True), np.argsort(t, axis=0, kind="stable"),
            np.argsort(x, axis=None, kind="stable"), np.searchsorted(np.sort(t[0]), t[1]),
            np.searchsorted(V, x, side="right"), np.searchsorted(V, x[0]),
            np.interp(x, V, V * 2), np.interp(x, V, V ** 2, left=-1.0, right=5.0),
            np.interp(V, V, -V))


def _stats(x, m):
    return (np.cov(x), np.cov(x, rowvar=False), np.cov(x[0]), np.cov(x, bias=True),
            np.cov(x, ddof=2), np.corrcoef(x), np.corrcoef(x, rowvar=False),
            np.corrcoef(x[0]), np.polyval(V[:3], x), np.polyval(np.array([2.0, -1.0]), m),
            np.linspace(0, 1, 7), np.linspace(-2.5, 3, 4, endpoint=False),
            np.linspace(0, 10, 5, dtype=np.int64), np.linspace(1.0, 2.0, 1))


def _arrays(x, m, v):
    return (np.append(x, m[:, :1]), np.append(x[:3], x[:3], axis=1),
            np.pad(x, 1), np.pad(x, ((1, 2), (0, 1)), mode="edge"),
            np.pad(x, (2, 1), mode="reflect"), np.pad(x, 1, constant_values=-3.5),
            np.repeat(x, 2, axis=0), np.repeat(x, 3), np.repeat(x, 2, axis=-1),
            np.rot90(x), np.rot90(x, 2), np.rot90(x, -1), np.rot90(x, 4),
            np.diag(v), np.diag(v, 2), np.diag(v, -1), np.diag(x), np.diag(x, 1), np.diag(x, -2),
            np.diagflat(m), np.diagflat(v, -2), np.diagonal(x, 1), np.diagonal(m, -1),
            np.ediff1d(x), np.ediff1d(v),
            np.kron(m, x[:2]), np.kron(v[:2], m), np.tensordot(x, x, axes=([0], [0])),
            np.tensordot(m, m), np.tensordot(x, v[:4], 1),
            np.linalg.matrix_power(m, 0),
            np.linalg.matrix_power(m, 2), np.linalg.matrix_power(m, 5),
            np.linalg.matrix_power(m, 8), np.cross(x[:, :3], x[::-1, 1:]),
            np.convolve(v, v[:3]), np.convolve(v[:2], v, "same"), np.convolve(v, v[:4], "valid"),
            np.correlate(v, v[:3]), np.correlate(v, v[:2], "same"), np.correlate(v, v[:3], "full"))


def _writes(x, b, v):
    y = x.copy()
    np.copyto(y, v[:4], where=b)
    z = x.copy()
    np.copyto(z, 2.5)
    p = x.copy()
    np.putmask(p, b, 0.5)
    q = x.copy()
    np.putmask(q, b, v[:3])
    w = x.copy()
    np.fill_diagonal(w, 7.0)
    ww = x.copy()
    np.fill_diagonal(ww, -1.0, wrap=True)
    u = x.copy()
    np.put_along_axis(u, np.array([[0], [1], [-1], [0], [2]]), 9.0, axis=1)
    t = x.copy()
    t[b] += 1.0
    s = x.copy()
    s[b] = x[b] * 2 + v[:4].reshape(1, 4).repeat(5, 0)[b] - 1
    r = x.copy()
    r[x[:, 0] > 0] *= 3.0
    k = (x[b] * 2).sum(), (x[b] + x[b] ** 2).mean()
    return y, z, p, q, w, ww, u, t, s, r, *k


def _python_numbers(x):
    n = int(x.sum() * 100)
    f = float(x.max())
    return (n ** 2 * x, n // 3 * x, n % 7 * x, -n * x, n / 3 * x, f // 0.3 * x,
            (f % 0.3) * x, x.sum().item() * x, x.sum() ** 2.0 * x, abs(x.sum()) * x,
            math.sqrt(np.abs(x).sum()) * x)


def scaled_by_peak(x):
    """A speculated choice: Python's ``max`` gives the float 1.0 or the NumPy scalar."""
    peak = max(1.0, np.abs(x).max()) + 1e-9
    return x / peak, 2.0 * peak - 1.0


EDGE_CASES = {
    "elementwise_edges": (_elementwise, (SPECIAL, DIVISOR, UNIT, SMALL)),
    "elementwise_edges32": (_elementwise32, tuple(a.astype(np.float32) for a in (
        SPECIAL, DIVISOR, UNIT, SMALL))),
    "integer_edges": (_integers, (I64, J64)),
    "unsigned": (_unsigned, (np.abs(I64[1:]).astype(np.uint32) + 1,
                             np.abs(J64[1:]).astype(np.uint32))),
    "small_ints": (_small_ints, (I64.astype(np.int16), J64.astype(np.int16),
                                 np.abs(I64[1:]).astype(np.uint16), np.abs(J64[1:]).astype(
                                     np.uint32))),
    "nan_reductions": (_nan_reductions, (WITH_NAN,)),
    "quantiles": (_quantiles, (X, WITH_NAN)),
    "sorting": (_sorting, (TIES, X)),
    "stats": (_stats, (X, M)),
    "arrays": (_arrays, (X, M, V)),
    "masked_writes": (_writes, (X, X > 0, V)),
    "python_numbers_more": (_python_numbers, (X,)),
    "speculated_choice": (scaled_by_peak, (X,)),
}

#: canonical ops no NumPy call (or Python operator on a graph number) captures today: (the ops
#: applied in turn, the input, what NumPy or Python computes)
OP_GRAPHS = [
    (("atleast_1d",), np.float64(2.5), np.atleast_1d), (("atleast_2d",), V, np.atleast_2d),
    (("atleast_3d",), X, np.atleast_3d), (("atleast_3d",), V, np.atleast_3d),
    (("real",), X, np.real), (("imag",), X, np.imag), (("imag",), SPECIAL, np.imag),
    (("py_float", "py_neg"), np.float64(2.5), lambda v: -float(v)),
    (("py_int", "py_abs"), np.float64(-7.9), lambda v: abs(int(v))),
    (("py_int", "py_pos"), np.float64(-7.9), lambda v: +int(v)),
    (("py_float", "py_abs"), np.float64(-0.25), lambda v: abs(float(v))),
]
