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

#: Largest difference from NumPy's results in units in the last place (the tests check it).
MAX_ULPS = 8


@intrinsic
def _f32_from_bits(typingctx, bits):
    if bits != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return types.float32(types.int32), codegen


@intrinsic
def _f64_from_bits(typingctx, bits):
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@intrinsic
def _f64_to_bits(typingctx, value):
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


def _ln2_split(fraction_bits: int) -> tuple[float, float]:
    """ln 2 as ``hi + lo``: ``hi`` keeps ``fraction_bits`` bits so ``n * hi`` is exact."""
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        hi = math.floor(float(ln2) * 2**fraction_bits) / 2**fraction_bits
        lo = float(ln2 - Decimal(hi))
    return hi, lo


# float32: |n| < 2**8 and hi has 16 significant bits -> n*hi fits 24 bits.
_LN2_HI_32, _LN2_LO_32 = (np.float32(v) for v in _ln2_split(16))
# float64: |n| < 2**11 and hi has 32 significant bits -> n*hi fits 53 bits.
_LN2_HI_64, _LN2_LO_64 = _ln2_split(32)
_INV_LN2_32 = np.float32(1 / math.log(2))
_INV_LN2_64 = 1 / math.log(2)

# Taylor coefficients 1/k! of expm1, highest degree first (for Horner), from k = 2.
_C32 = tuple(np.float32(1 / math.factorial(k)) for k in range(7, 1, -1))
_C64 = tuple(1 / math.factorial(k) for k in range(12, 1, -1))

_F32_HALF, _F32_ONE, _F32_TWO = np.float32(0.5), np.float32(1.0), np.float32(2.0)
# Clamps keep n inside the range where both halves of 2**n are normal numbers; beyond them the
# result is already 0 or inf. tanh saturates to 1 in float32 past 9.1 and in float64 past 19.1.
_EXP_LO_32, _EXP_HI_32 = np.float32(-104.0), np.float32(89.0)
_EXP_LO_64, _EXP_HI_64 = -746.0, 710.0
_TANH_Y_MAX_32, _TANH_Y_MAX_64 = np.float32(20.0), 40.0

_FLAGS = {"contract"}


@njit(fastmath=_FLAGS, error_model="numpy")
def _expm1_poly_f32(r):
    c = _C32
    p = c[0]
    p = p * r + c[1]
    p = p * r + c[2]
    p = p * r + c[3]
    p = p * r + c[4]
    p = p * r + c[5]
    return r + r * r * p


@njit(fastmath=_FLAGS, error_model="numpy")
def _expm1_poly_f64(r):
    c = _C64
    p = c[0]
    p = p * r + c[1]
    p = p * r + c[2]
    p = p * r + c[3]
    p = p * r + c[4]
    p = p * r + c[5]
    p = p * r + c[6]
    p = p * r + c[7]
    p = p * r + c[8]
    p = p * r + c[9]
    p = p * r + c[10]
    return r + r * r * p


@njit(fastmath=_FLAGS, error_model="numpy")
def _reduce_f32(y):
    """(n, r, 2**(n//2), 2**(n - n//2)) for float32 ``y``; ``y`` must be clamped already."""
    nf = np.floor(y * _INV_LN2_32 + _F32_HALF)
    r = (y - nf * _LN2_HI_32) - nf * _LN2_LO_32
    n = np.int32(nf)
    n1 = n >> 1
    s1 = _f32_from_bits(np.int32((n1 + 127) << 23))
    s2 = _f32_from_bits(np.int32((n - n1 + 127) << 23))
    return r, s1, s2


@njit(fastmath=_FLAGS, error_model="numpy")
def _reduce_f64(y):
    nf = np.floor(y * _INV_LN2_64 + 0.5)
    r = (y - nf * _LN2_HI_64) - nf * _LN2_LO_64
    n = np.int64(nf)
    n1 = n >> 1
    s1 = _f64_from_bits(np.int64((n1 + 1023) << 52))
    s2 = _f64_from_bits(np.int64((n - n1 + 1023) << 52))
    return r, s1, s2


@njit(fastmath=_FLAGS, error_model="numpy")
def exp_f32(x):
    """``exp`` of a float32, to within ``MAX_ULPS`` ulps."""
    y = x if x > _EXP_LO_32 else _EXP_LO_32
    y = y if y < _EXP_HI_32 else _EXP_HI_32  # nan becomes the upper clamp here...
    r, s1, s2 = _reduce_f32(y)
    e = ((_F32_ONE + _expm1_poly_f32(r)) * s1) * s2
    return e if x == x else x  # ...and comes back here


@njit(fastmath=_FLAGS, error_model="numpy")
def exp_f64(x):
    """``exp`` of a float64, to within ``MAX_ULPS`` ulps."""
    y = x if x > _EXP_LO_64 else _EXP_LO_64
    y = y if y < _EXP_HI_64 else _EXP_HI_64
    r, s1, s2 = _reduce_f64(y)
    e = ((1.0 + _expm1_poly_f64(r)) * s1) * s2
    return e if x == x else x


@njit(fastmath=_FLAGS, error_model="numpy")
def tanh_f32(x):
    """``tanh`` of a float32, to within ``MAX_ULPS`` ulps."""
    a = np.abs(x)
    y = _F32_TWO * a
    y = y if y < _TANH_Y_MAX_32 else _TANH_Y_MAX_32
    r, s1, s2 = _reduce_f32(y)
    s = s1 * s2  # y >= 0 keeps 2**n normal and small: one product is exact
    t = s * _expm1_poly_f32(r) + (s - _F32_ONE)
    h = t / (t + _F32_TWO)
    h = np.copysign(h, x)
    return h if x == x else x


@njit(fastmath=_FLAGS, error_model="numpy")
def tanh_f64(x):
    """``tanh`` of a float64, to within ``MAX_ULPS`` ulps."""
    a = np.abs(x)
    y = 2.0 * a
    y = y if y < _TANH_Y_MAX_64 else _TANH_Y_MAX_64
    r, s1, s2 = _reduce_f64(y)
    s = s1 * s2
    t = s * _expm1_poly_f64(r) + (s - 1.0)
    h = t / (t + 2.0)
    h = np.copysign(h, x)
    return h if x == x else x


# 2/(2k+1) for k = 11 .. 1, highest degree first: 2*atanh(s)/s - 2 = sum over k of these z**k.
_LOG_C64 = tuple(2.0 / (2 * k + 1) for k in range(11, 0, -1))
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
    c = _LOG_C64
    r = c[0]
    r = r * z + c[1]
    r = r * z + c[2]
    r = r * z + c[3]
    r = r * z + c[4]
    r = r * z + c[5]
    r = r * z + c[6]
    r = r * z + c[7]
    r = r * z + c[8]
    r = r * z + c[9]
    r = r * z + c[10]
    r = r * z
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
