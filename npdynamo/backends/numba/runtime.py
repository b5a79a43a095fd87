"""Helpers the generated numba kernels call (the numba backend's small runtime library).

Kernels are compiled without fast-math flags so that every elementwise operation rounds exactly
as NumPy's does. Reductions still need to vectorise, so their accumulation step is a separate
``njit`` function that alone carries the ``reassoc`` flag: LLVM inlines it and the flag stays on
that one instruction (allowing the reassociation of the sum, never ``nnan``/``ninf``).
``maximum``/``minimum`` are LLVM's NaN-propagating intrinsics, which LLVM vectorises as
reductions where a compare-and-select chain stays scalar.

Signed 64-bit integer ``+``, ``-`` and ``*`` go through ``wrapping_add``/``sub``/``mul``: numba's
own operators tell LLVM that signed overflow cannot happen, so ``(x + 1) > x`` became True for
the largest int64 where NumPy wraps and says False. (Narrower integers are computed in int64 and
converted back, which wraps exactly.)

``floor_divide_f32``/``_f64`` and ``remainder_f32``/``_f64`` are NumPy's float ``//`` and ``%``
(its ``npy_divmod``: ``fmod``, the sign fixed to the divisor's, the quotient snapped to an
integer), step for step, so their results are NumPy's bit for bit.

Complex kernels call ``complex_multiply_*``, ``complex_divide_*`` and ``complex_abs_*``
(``_c64``/``_c128``), NumPy's complex loops step for step: a product's parts are fused
multiply-adds (``re = fma(ar, br, -(ai*bi))``, ``im = fma(ar, bi, ai*br)``, as NumPy's SIMD loop
on FMA CPUs; numba's own ``*`` rounds twice, and gives nan where an overflowing square gives
-inf), a quotient is Smith's method as NumPy's loop writes it (scaled by the reciprocal of the
denominator; ``x/0`` is the parts divided by ``|0|``, where numba's ``/`` raises), and ``abs`` is
``larger * sqrt(fma(r, r, 1))`` with ``r = smaller / larger`` (numba's calls ``hypot``, 1 ulp off
NumPy's on a third of values), inf where a part is inf even with a nan. ``complex_abs_compare_*``
decides ``abs(a) < c`` (and ``<=``, ``>``, ``>=``) without the division and square root where
``re*re + im*im`` is clearly on one side of ``c*c`` (``magnitudes``).

``prefer_wide_vectors()`` lets LLVM vectorise the function it is called in with the widest
vectors the CPU has. On AVX-512 CPUs LLVM prefers 256-bit vectors by default (wide ones may
lower the clock on some models), which suits memory-bound loops; the exp/tanh polynomials of
``approx`` are compute-bound, and their loops run about 1.4x faster with 512-bit vectors
(measured here on 4M float32 exps, one thread). Kernels that call them start with it.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from llvmlite import binding, ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_REASSOC = {"reassoc"}


@njit(fastmath=_REASSOC, error_model="numpy")
def radd(acc, value):
    """``acc + value`` that LLVM may reassociate (float sums and means)."""
    return acc + value


@njit(fastmath=_REASSOC, error_model="numpy")
def rmul(acc, value):
    """``acc * value`` that LLVM may reassociate (float products)."""
    return acc * value


def _same_type_binary(kind: type, build):
    """An intrinsic of two arguments of one numba type of ``kind``, whose value is
    ``build(context, builder, signature, args)``."""

    @intrinsic
    def call(typingctx, a, b):
        if not (isinstance(a, kind) and a == b):
            return None
        return a(a, b), build

    return call


def _llvm_float_call(llvm_name: str):
    def build(context, builder, signature, args):
        ty = context.get_value_type(signature.return_type)
        fnty = ir.FunctionType(ty, [ty, ty])
        suffix = "f32" if signature.return_type.bitwidth == 32 else "f64"
        fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{llvm_name}.{suffix}")
        return builder.call(fn, args)

    return build


#: NaN-propagating max of two floats of one type (IEEE 754-2019 ``maximum``).
fmaximum = _same_type_binary(types.Float, _llvm_float_call("maximum"))
#: NaN-propagating min of two floats of one type (IEEE 754-2019 ``minimum``).
fminimum = _same_type_binary(types.Float, _llvm_float_call("minimum"))


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``fma``: the instruction, or libm's exact emulation)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(signature.return_type)
        suffix = "f32" if signature.return_type.bitwidth == 32 else "f64"
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ty, [ty, ty, ty]),
                                            f"llvm.fma.{suffix}")
        return builder.call(fn, args)

    return a(a, a, a), codegen


# numba marks signed integer arithmetic ``nsw`` (overflow is undefined), which lets LLVM fold
# ``(a + 1) > a`` to True; the plain instructions wrap, as NumPy's loops do.
#: Integer ``a + b``, ``a - b``, ``a * b`` that wrap around on overflow (NumPy's semantics).
wrapping_add = _same_type_binary(types.Integer, lambda ctx, builder, sig, args: builder.add(*args))
wrapping_sub = _same_type_binary(types.Integer, lambda ctx, builder, sig, args: builder.sub(*args))
wrapping_mul = _same_type_binary(types.Integer, lambda ctx, builder, sig, args: builder.mul(*args))


#: The LLVM function attribute that overrides the CPU's preferred vector width for one function.
_WIDE = '"prefer-vector-width"="512"'


@intrinsic
def prefer_wide_vectors(typingctx):
    """Mark the calling function for 512-bit vectorisation (no code is emitted)."""

    def codegen(context, builder, signature, args):
        try:  # a string attribute: llvmlite's checked ``add`` knows only the keyword ones
            set.add(builder.function.attributes, _WIDE)
        except Exception:  # pragma: no cover - another llvmlite: the default width
            pass
        return context.get_dummy_value()

    return types.none(), codegen


@cache
def has_wide_vectors() -> bool:
    """Whether this machine's CPU has 512-bit vectors (AVX-512F)."""
    try:
        return bool(binding.get_host_cpu_features().get("avx512f"))
    except Exception:  # pragma: no cover - no feature query on this platform
        return False


def _float_divmod(dtype: type):
    """NumPy's ``npy_divmod`` for floats of ``dtype``: ``(a // b, a % b)`` for ``b != 0``."""
    zero, one, half = dtype(0.0), dtype(1.0), dtype(0.5)

    @njit(error_model="numpy")
    def divmod_(a, b):
        mod = np.fmod(a, b)
        div = (a - mod) / b
        if mod != zero:
            if (b < zero) != (mod < zero):
                mod += b
                div -= one
        else:
            mod = np.copysign(zero, b)
        if div != zero:
            floordiv = np.floor(div)
            if div - floordiv > half:
                floordiv += one
        else:
            floordiv = np.copysign(zero, a / b)
        return floordiv, mod

    @njit(error_model="numpy")
    def floor_divide(a, b):
        return a / b if b == zero else divmod_(a, b)[0]

    @njit(error_model="numpy")
    def remainder(a, b):
        return np.fmod(a, b) if b == zero else divmod_(a, b)[1]

    return floor_divide, remainder


floor_divide_f32, remainder_f32 = _float_divmod(np.float32)
floor_divide_f64, remainder_f64 = _float_divmod(np.float64)


def _complex_loops(ctor: type, part: type):
    """NumPy's complex ``a * b``, ``a / b`` and ``abs(a)`` for complex ``ctor`` (float parts of
    ``part``)."""
    zero, one, inf = part(0.0), part(1.0), part(np.inf)

    @njit(error_model="numpy")
    def multiply(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return ctor(complex(fma(ar, br, -(ai * bi)), fma(ar, bi, ai * br)))

    @njit(error_model="numpy")
    def absolute(a):
        re, im = abs(a.real), abs(a.imag)
        if re == inf or im == inf:
            return inf
        if re != re or im != im:
            return re + im  # a nan
        larger, smaller = (re, im) if re >= im else (im, re)
        if larger == zero:
            return zero
        r = smaller / larger
        return larger * np.sqrt(fma(r, r, one))

    @njit(error_model="numpy")
    def divide(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        br_abs, bi_abs = abs(br), abs(bi)
        if br_abs >= bi_abs:
            if br_abs == zero and bi_abs == zero:  # a complex inf or nan, as NumPy gives
                return ctor(complex(ar / br_abs, ai / br_abs))
            rat = bi / br
            scl = one / (br + bi * rat)
            return ctor(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
        rat = br / bi  # also where a part of b is nan
        scl = one / (bi + br * rat)
        return ctor(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))

    # |a| against c from re*re + im*im where that is clear of c*c by a margin far wider than
    # both roundings (``magnitudes``); NumPy's abs where it is not, or where c's square could
    # overflow or lose digits to underflow (c outside [lowest, highest]: also a nan c)
    wide = part is np.float64
    margin = part(2.0 ** -30) if wide else part(2.0 ** -12)
    below, above = one - margin, one + margin
    lowest, highest = (part(2.0 ** -250), part(2.0 ** 250)) if wide else (part(2.0 ** -30),
                                                                          part(2.0 ** 30))

    @njit(error_model="numpy")
    def abs_compare(a, c, code):  # code: abs(a) < c, <=, >, >= (a constant: folded)
        if c >= lowest and c <= highest:
            re, im = a.real, a.imag
            squared, bound = re * re + im * im, c * c
            if squared < bound * below:
                return code < 2
            if squared > bound * above:
                return code >= 2
        m = absolute(a)
        if code == 0:
            return m < c
        if code == 1:
            return m <= c
        return m > c if code == 2 else m >= c

    return multiply, divide, absolute, abs_compare


(complex_multiply_c64, complex_divide_c64, complex_abs_c64,
 complex_abs_compare_c64) = _complex_loops(np.complex64, np.float32)
(complex_multiply_c128, complex_divide_c128, complex_abs_c128,
 complex_abs_compare_c128) = _complex_loops(np.complex128, np.float64)
