"""Vectorisable exp, tanh and log for the numba kernels (the numba backend's code generation).

The llvmlite wheels have no SVML, so ``np.exp``/``np.tanh`` inside a numba loop are scalar libm
calls and a fused kernel using them is slower than NumPy's SIMD loops. These versions use only
arithmetic, ``floor`` and a bit cast, which LLVM vectorises. Generated kernels call them as
``exp_f32(v)`` etc.; each is its own ``njit`` function (compiled with FMA contraction only, never
with the value-changing fast-math flags) and LLVM inlines it into the loop.

Method (the same for both widths): ``y = n*ln2 + r`` with ``n = round(y/ln2)`` and
``|r| <= ln2/2`` (Cody-Waite: ``ln2`` split into a short high part, so ``n*hi`` is exact, and a
low part); ``expm1(r)`` by its Taylor polynomial (degree 7 for float32, 12 for float64, which
bounds the truncation error below half an ulp); then ``exp(y) = 2**n * (1 + p)`` and
``expm1(y) = 2**n * p + (2**n - 1)``, the power of two built from its bits. ``2**n`` is applied
in two halves so that results in the subnormal range and overflow to inf come out right.
``tanh(x) = sign(x) * t / (t + 2)`` with ``t = expm1(2|x|)`` (no cancellation for small x).

``log``: ``x = 2**e * m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` read from the bits (subnormals
scaled by ``2**54`` first), ``f = m - 1`` (exact), ``s = f / (2 + f)`` and
``log(1 + f) = f - f*f/2 + s*(f*f/2 + R(s*s))``, ``R`` the Taylor series of ``2*atanh(s)/s - 2``
in ``z = s*s`` to degree 11 (``|s| < 0.172``: truncation below 1e-19 of the result), then
``e*ln2`` added in two parts as for exp. float32 is computed in float64 and rounded once
(LLVM converts whole vectors). Negative inputs give nan, zeros -inf, +inf and nan themselves.

Accuracy over the whole range (tiny, subnormal, huge, negative, +-inf, nan, -0.0), measured
against the long-double result: exp float32 1 ulp, exp float64 2.4 ulps, tanh float32 2.1 ulps,
tanh float64 5.7 ulps (relative error 1.3e-15). ``tests/backends/test_approx.py`` checks them
against NumPy's own results (which are off by up to 2.2 ulps): within ``MAX_ULPS`` for normal
results, within two of the smallest subnormal below that, and nan, +-inf and the sign of zero
exactly as NumPy.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from npdynamo import generated

#: Largest difference from NumPy's results in units in the last place (the tests check it).
MAX_ULPS = 8


def _bitcast(source: types.Type, target: types.Type):
    """An intrinsic reading the bits of a ``source`` value as a ``target`` value."""

    @intrinsic
    def cast(typingctx, value):
        if value != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))

        return target(source), codegen

    return cast


_f32_from_bits = _bitcast(types.int32, types.float32)
_f64_from_bits = _bitcast(types.int64, types.float64)
_f64_to_bits = _bitcast(types.float64, types.int64)


def _ln2_split(fraction_bits: int) -> tuple[float, float]:
    """ln 2 as ``hi + lo``: ``hi`` keeps ``fraction_bits`` bits so ``n * hi`` is exact."""
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        hi = math.floor(float(ln2) * 2**fraction_bits) / 2**fraction_bits
        lo = float(ln2 - Decimal(hi))
    return hi, lo


_FLAGS = {"contract"}


def _horner(coefficients: tuple) -> object:
    """An njit ``poly(r)``: the polynomial with ``coefficients`` (highest degree first) by
    Horner's rule, written out step by step (as LLVM gets it: no loop to unroll)."""
    steps = "".join(f"    p = p * r + c[{k}]\n" for k in range(1, len(coefficients)))
    poly = generated.define(f"def poly(r):\n    p = c[0]\n{steps}    return p\n", "poly",
                            {"c": coefficients}, label="horner")
    return njit(fastmath=_FLAGS, error_model="numpy")(poly)


def _exp_tanh(ftype: type, itype: type, from_bits, hi_bits: int, degree: int, bias: int,
              mantissa: int, exp_range: tuple[float, float], tanh_y_max: float):
    """``exp`` and ``tanh`` of one float width (``ftype``, its bits as ``itype``).

    ``hi_bits``: the significant bits of ln2's high part (``n * hi`` must be exact: float32
    |n| < 2**8 with 16 bits fits 24, float64 |n| < 2**11 with 32 bits fits 53); ``degree`` of
    the expm1 Taylor polynomial; ``bias``/``mantissa`` of the exponent field; ``exp_range``
    the clamps keeping both halves of 2**n normal (beyond them the result is 0 or inf);
    ``tanh_y_max`` where tanh has saturated (float32 past 9.1, float64 past 19.1)."""
    hi, lo = (ftype(v) for v in _ln2_split(hi_bits))
    inv_ln2, half, one, two = ftype(1 / math.log(2)), ftype(0.5), ftype(1.0), ftype(2.0)
    exp_lo, exp_hi = ftype(exp_range[0]), ftype(exp_range[1])
    y_max = ftype(tanh_y_max)
    # Taylor coefficients 1/k! of expm1, highest degree first, down to k = 2
    poly = _horner(tuple(ftype(1 / math.factorial(k)) for k in range(degree, 1, -1)))

    @njit(fastmath=_FLAGS, error_model="numpy")
    def expm1_poly(r):
        return r + r * r * poly(r)

    @njit(fastmath=_FLAGS, error_model="numpy")
    def reduce(y):
        """(r, 2**(n//2), 2**(n - n//2)) for ``y`` clamped already, ``y = n*ln2 + r``."""
        nf = np.floor(y * inv_ln2 + half)
        r = (y - nf * hi) - nf * lo
        n = itype(nf)
        n1 = n >> 1
        return r, from_bits(itype((n1 + bias) << mantissa)), \
            from_bits(itype((n - n1 + bias) << mantissa))

    @njit(fastmath=_FLAGS, error_model="numpy")
    def exp(x):
        y = x if x > exp_lo else exp_lo
        y = y if y < exp_hi else exp_hi  # nan becomes the upper clamp here...
        r, s1, s2 = reduce(y)
        e = ((one + expm1_poly(r)) * s1) * s2
        return e if x == x else x  # ...and comes back here

    @njit(fastmath=_FLAGS, error_model="numpy")
    def tanh(x):
        y = two * np.abs(x)
        y = y if y < y_max else y_max
        r, s1, s2 = reduce(y)
        s = s1 * s2  # y >= 0 keeps 2**n normal and small: one product is exact
        t = s * expm1_poly(r) + (s - one)
        h = np.copysign(t / (t + two), x)
        return h if x == x else x

    return exp, tanh


#: ``exp``/``tanh`` of a float32 and of a float64, each to within ``MAX_ULPS`` ulps.
exp_f32, tanh_f32 = _exp_tanh(np.float32, np.int32, _f32_from_bits, 16, 7, 127, 23,
                              (-104.0, 89.0), 20.0)
exp_f64, tanh_f64 = _exp_tanh(np.float64, np.int64, _f64_from_bits, 32, 12, 1023, 52,
                              (-746.0, 710.0), 40.0)

_LN2_HI_64, _LN2_LO_64 = _ln2_split(32)
# 2/(2k+1) for k = 11 .. 1, highest degree first: 2*atanh(s)/s - 2 = sum over k of these z**k.
_LOG_POLY = _horner(tuple(2.0 / (2 * k + 1) for k in range(11, 0, -1)))
_SQRT2 = math.sqrt(2.0)
_TINY_64 = 2.0**-1022  # the smallest normal float64
_SUBNORMAL_SCALE = 2.0**54
_MANTISSA = (1 << 52) - 1
_ONE_BITS = 1023 << 52
_DEFAULT_NAN_BITS = -(1 << 51)  # 0xFFF8000000000000 as an int64


@njit(fastmath=_FLAGS, error_model="numpy")
def log_f64(x):
    """``log`` of a float64, to within ``MAX_ULPS`` ulps."""
    sub = x < _TINY_64
    y = x * _SUBNORMAL_SCALE if sub else x
    bits = _f64_to_bits(y)
    e = ((bits >> 52) & 0x7FF) - 1023 - (54 if sub else 0)
    m = _f64_from_bits((bits & _MANTISSA) | _ONE_BITS)  # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    r = _LOG_POLY(z) * z
    half_f2 = 0.5 * f * f
    k = np.float64(e + 1 if big else e)
    result = k * _LN2_HI_64 - ((half_f2 - (s * (half_f2 + r) + k * _LN2_LO_64)) - f)
    if x > 0.0:
        return result if x < np.inf else x
    if x == 0.0:
        return -np.inf
    # x < 0: the x86 default nan (sign bit set), as NumPy gives
    return x if x != x else _f64_from_bits(np.int64(_DEFAULT_NAN_BITS))


@njit(fastmath=_FLAGS, error_model="numpy")
def log_f32(x):
    """``log`` of a float32: the float64 approximation rounded once (within ``MAX_ULPS``)."""
    return np.float32(log_f64(np.float64(x)))


#: (op name, dtype) -> the approximation the code generator calls.
APPROXIMATIONS = {
    ("exp", np.dtype(np.float32)): "exp_f32",
    ("exp", np.dtype(np.float64)): "exp_f64",
    ("tanh", np.dtype(np.float32)): "tanh_f32",
    ("tanh", np.dtype(np.float64)): "tanh_f64",
    ("log", np.dtype(np.float32)): "log_f32",
    ("log", np.dtype(np.float64)): "log_f64",
}
