"""The ONNX form of the elementwise math ONNX has no single op for (see ``onnx_ops.py``).

Each is written from ONNX ops as NumPy computes it, so results are NumPy's within the export's
tolerance: ``floor_divide``/``remainder``/``divmod`` on floats follow NumPy's ``npy_divmod``
(C ``fmod``, then the floor correction), on integers truncating division corrected to the
floor, with NumPy's results for a zero divisor (0) and ``MIN // -1`` (wrapping) instead of
the crash C division would give; ``expm1``/``log1p`` use Kahan's and Goldberg's corrections
(accurate near 0, where ``exp(x) - 1`` is not); float64 ``arctan``/``arctan2``/``arcsin``/
``arccos`` use Cephes' ``atan``, ``sinh`` and the inverse hyperbolics ``expm1``/``log1p``
(ONNX Runtime has these only for float32); ``gcd``/``lcm``
run Euclid's algorithm in a ``Loop``; the Python-number ops of the graph (``py_*``) compute
on int64/float64 as CPython does. Not here: ``signbit``/``copysign`` (ONNX cannot read the
sign bit of a NaN) and ``nextafter`` (no bit casts in opset 18).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_ops import _compute, _out, extreme
from npdynamo.export.onnx_writer import Lowering, Scope
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node

LOWERINGS: dict[str, Callable[..., Any]] = {}


def where(L: Lowering, cond: str, a: str, b: str) -> str:
    return L.add("Where", [cond, a, b])


def _eq(L: Lowering, a: str, value: Any, t: np.dtype) -> str:
    return L.add("Equal", [a, L.const(value, t)])


# -- integer and float division ------------------------------------------------------------------
def int_divmod(L: Lowering, a: str, b: str, t: np.dtype) -> tuple[str, str]:
    """NumPy's floor division and remainder of integers ``a``, ``b`` of dtype ``t``."""
    zero = _eq(L, b, 0, t)
    guards = zero
    if t.kind == "i":
        minus_one = _eq(L, b, -1, t)
        guards = L.add("Or", [zero, minus_one])
    safe = where(L, guards, L.const(1, t), b)
    q = L.add("Div", [a, safe])  # truncates toward zero
    r = L.add("Sub", [a, L.add("Mul", [q, safe])])
    if t.kind == "i":
        nonzero = L.add("Not", [_eq(L, r, 0, t)])
        signs = L.add("Xor", [L.add("Less", [r, L.const(0, t)]),
                              L.add("Less", [safe, L.const(0, t)])])
        fix = L.add("And", [nonzero, signs])
        q = L.add("Sub", [q, L.cast(fix, np.bool_, t)])
        r = where(L, fix, L.add("Add", [r, safe]), r)
        q = where(L, minus_one, L.add("Sub", [L.const(0, t), a]), q)  # wraps as NumPy's
        r = where(L, minus_one, L.const(0, t), r)
    return where(L, zero, L.const(0, t), q), where(L, zero, L.const(0, t), r)


def float_divmod(L: Lowering, a: str, b: str, t: np.dtype) -> tuple[str, str]:
    """NumPy's ``npy_divmod``: floor quotient and remainder of floats (``b == 0``: a / b and
    fmod(a, 0))."""
    mod = L.add("Mod", [a, b], fmod=1)
    div = L.add("Div", [L.add("Sub", [a, mod]), b])
    zero = L.const(0, t)
    fix = L.add("And", [L.add("Not", [L.add("Equal", [mod, zero])]),
                        L.add("Xor", [L.add("Less", [b, zero]), L.add("Less", [mod, zero])])])
    mod = where(L, fix, L.add("Add", [mod, b]), mod)
    div = where(L, fix, L.add("Sub", [div, L.const(1, t)]), div)
    floor = L.add("Floor", [div])
    up = L.add("Greater", [L.add("Sub", [div, floor]), L.const(0.5, t)])
    floor = where(L, up, L.add("Add", [floor, L.const(1, t)]), floor)
    floor = where(L, L.add("Equal", [div, zero]), zero, floor)
    b_zero = L.add("Equal", [b, zero])
    return where(L, b_zero, L.add("Div", [a, b]), floor), mod


def divmod_names(L: Lowering, x: str, y: str, t: np.dtype) -> tuple[str, str]:
    """NumPy's floor quotient and remainder of the ONNX values ``x``, ``y`` of dtype ``t``."""
    if t.kind not in "iuf":
        raise ExportError(f"floor division of {t}")
    return float_divmod(L, x, y, t) if t.kind == "f" else int_divmod(L, x, y, t)


def divmod_of(L: Lowering, a: Any, b: Any, t: np.dtype) -> tuple[str, str]:
    return divmod_names(L, L.value(a, t), L.value(b, t), t)


def _work(node: Node, dtype: Any) -> np.dtype:
    """The dtype an op computes in: its ``dtype=`` argument, or its result's."""
    out = _out(node)
    if isinstance(out, tuple):
        raise ExportError("a result that is not an array")
    return np.dtype(dtype) if dtype is not None else out


def _floor_divide(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
    t = _work(node, dtype)
    return L.cast(divmod_of(L, a, b, t)[0], t, _out(node))


def _remainder(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
    t = _work(node, dtype)
    return L.cast(divmod_of(L, a, b, t)[1], t, _out(node))


def _divmod(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> tuple:
    metas = node.meta["val"]
    t = np.dtype(dtype) if dtype is not None else metas[0].dtype
    q, r = divmod_of(L, a, b, t)
    return (q, r)


def _fmod(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
    t = _work(node, dtype)
    if t.kind not in "fiu":
        raise ExportError(f"fmod of {t}")
    x, y = L.value(a, t), L.value(b, t)
    if t.kind == "f":
        return L.cast(L.add("Mod", [x, y], fmod=1), t, _out(node))
    # NumPy: 0 for a zero divisor; C's % would crash there and on MIN % -1 (which is 0)
    bad = _eq(L, y, 0, t)
    if t.kind == "i":
        bad = L.add("Or", [bad, _eq(L, y, -1, t)])
    rem = L.add("Mod", [x, where(L, bad, L.const(1, t), y)], fmod=1)
    return L.cast(where(L, bad, L.const(0, t), rem), t, _out(node))


LOWERINGS.update(floor_divide=_floor_divide, remainder=_remainder, divmod=_divmod, fmod=_fmod)


def _shift(direction: str) -> Callable:
    def lower(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
        t = _out(node)
        if t.kind not in "iu":
            raise ExportError(f"a shift of {t}")
        x, n = L.value(a, t), L.value(b, t)
        bits = t.itemsize * 8
        # 2**(bits - 1) overflows a signed int: a right shift that far is the sign alone
        limit = bits - 1 if direction == "RIGHT" and t.kind == "i" else bits
        big = L.add("GreaterOrEqual", [n, L.const(limit, t)])
        if t.kind == "i":
            big = L.add("Or", [big, L.add("Less", [n, L.const(0, t)])])
        safe = where(L, big, L.const(0, t), n)
        power = L.add("Pow", [L.const(2, np.int64), L.cast(safe, t, np.int64)])
        power = L.cast(power, np.int64, t)
        if direction == "LEFT":  # x * 2**n wraps as a shift does
            return where(L, big, L.const(0, t), L.add("Mul", [x, power]))
        shifted = int_divmod(L, x, power, t)[0]  # an arithmetic shift floors
        fill = L.const(0, t) if t.kind == "u" else where(
            L, L.add("Less", [x, L.const(0, t)]), L.const(-1, t), L.const(0, t))
        return where(L, big, fill, shifted)
    return lower


LOWERINGS.update(left_shift=_shift("LEFT"), right_shift=_shift("RIGHT"))


# -- NaN-aware and piecewise ---------------------------------------------------------------------
def _fminmax(op: str) -> Callable:
    def lower(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
        t = _work(node, dtype)
        x, y = L.value(a, t), L.value(b, t)
        if t.kind != "f":
            return L.cast(extreme(L, op, [x, y], t), t, _out(node))
        both = L.add(op, [x, y])
        out = where(L, L.add("IsNaN", [x]), y, where(L, L.add("IsNaN", [y]), x, both))
        return L.cast(out, t, _out(node))
    return lower


def _heaviside(L: Lowering, node: Node, x: Any, h: Any, dtype: Any = None) -> str:
    t = _work(node, dtype)
    if t.kind != "f":
        raise ExportError(f"heaviside into {t}")
    v, hv = L.value(x, t), L.value(h, t)
    zero = L.const(0, t)
    out = where(L, L.add("Less", [v, zero]), zero,
                where(L, L.add("Greater", [v, zero]), L.const(1, t),
                      where(L, L.add("Equal", [v, zero]), hv, v)))
    return L.cast(out, t, _out(node))


def _nan_to_num(L: Lowering, node: Node, x: Any, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> str:
    t = _out(node)
    v = L.value(x, t)
    if t.kind != "f":
        return L.add("Identity", [v])
    info = np.finfo(t)
    big = L.const(info.max if posinf is None else posinf, t)
    small = L.const(info.min if neginf is None else neginf, t)
    out = where(L, L.add("IsNaN", [v]), L.const(nan, t), v)
    out = where(L, L.add("IsInf", [v], detect_negative=0), big, out)
    return where(L, L.add("IsInf", [v], detect_positive=0), small, out)


LOWERINGS.update(fmax=_fminmax("Max"), fmin=_fminmax("Min"), heaviside=_heaviside,
                 nan_to_num=_nan_to_num)


# -- exp, log and trigonometry -------------------------------------------------------------------
def expm1(L: Lowering, x: str, t: np.dtype) -> str:
    """Kahan: (u - 1) * x / log(u) with u = exp(x), exact where u rounds to 1 or 0."""
    u = L.add("Exp", [x])
    um1 = L.add("Sub", [u, L.const(1, t)])
    ratio = L.add("Div", [L.add("Mul", [um1, x]), L.add("Log", [u])])
    out = where(L, L.add("Equal", [um1, L.const(-1, t)]), L.const(-1, t), ratio)
    out = where(L, L.add("IsInf", [u]), u, out)
    return where(L, _eq(L, u, 1, t), x, out)


def log1p(L: Lowering, x: str, t: np.dtype) -> str:
    """Goldberg: log(u) * (x / (u - 1)) with u = 1 + x, exact where u rounds to 1 (the
    quotient first: ``log(u) * x`` overflows for x near the largest float)."""
    u = L.add("Add", [x, L.const(1, t)])
    log = L.add("Log", [u])
    ratio = L.add("Mul", [log, L.add("Div", [x, L.add("Sub", [u, L.const(1, t)])])])
    out = where(L, L.add("IsInf", [u], detect_negative=0), u, ratio)
    out = where(L, _eq(L, u, 0, t), log, out)
    return where(L, _eq(L, u, 1, t), x, out)


# Cephes atan.c: rational approximation on [0, 0.66] after reducing the argument
_ATAN_P = [-8.750608600031904122785e-01, -1.615753718733365076637e01,
           -7.500855792314704667340e01, -1.228866684490136173410e02,
           -6.485021904942025371773e01]
_ATAN_Q = [2.485846490142306297962e01, 1.650270098316988542046e02,
           4.328810604912902668951e02, 4.853903996359136964868e02,
           1.945506571482613964425e02]
_MOREBITS = 6.123233995736765886130e-17


def _poly(L: Lowering, z: str, coeffs: list[float], t: np.dtype, monic: bool = False) -> str:
    acc = L.const(1.0 if monic else coeffs[0], t)
    for c in (coeffs if monic else coeffs[1:]):
        acc = L.add("Add", [L.add("Mul", [acc, z]), L.const(c, t)])
    return acc


def atan64(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Atan", [x])
    a = L.add("Abs", [x])
    big = L.add("Greater", [a, L.const(2.414213562373095, t)])  # tan(3 pi / 8)
    mid = L.add("And", [L.add("Not", [big]), L.add("Greater", [a, L.const(0.66, t)])])
    one = L.const(1, t)
    r = where(L, big, L.add("Div", [L.const(-1, t), a]),
              where(L, mid, L.add("Div", [L.add("Sub", [a, one]), L.add("Add", [a, one])]), a))
    base = where(L, big, L.const(np.pi / 2, t),
                 where(L, mid, L.const(np.pi / 4, t), L.const(0, t)))
    extra = where(L, big, L.const(_MOREBITS, t),
                  where(L, mid, L.const(0.5 * _MOREBITS, t), L.const(0, t)))
    z = L.add("Mul", [r, r])
    frac = L.add("Div", [L.add("Mul", [z, _poly(L, z, _ATAN_P, t)]),
                         _poly(L, z, _ATAN_Q, t, monic=True)])
    z = L.add("Add", [L.add("Mul", [r, frac]), r])
    y = L.add("Add", [base, L.add("Add", [z, extra])])
    y = where(L, L.add("IsNaN", [x]), x, y)
    return where(L, L.add("Less", [x, L.const(0, t)]), L.add("Neg", [y]), y)


def atan2(L: Lowering, y: str, x: str, t: np.dtype) -> str:
    zero = L.const(0, t)
    pi = L.const(np.pi, t)
    base = atan64(L, L.add("Div", [y, x]), t)
    # the sign of a zero: 1 / -0.0 is -inf
    x_neg = L.add("Or", [L.add("Less", [x, zero]), L.add("Less", [L.add("Div", [
        L.const(1, t), x]), zero])])
    y_neg = L.add("Or", [L.add("Less", [y, zero]), L.add("Less", [L.add("Div", [
        L.const(1, t), y]), zero])])
    turned = where(L, y_neg, L.add("Sub", [base, pi]), L.add("Add", [base, pi]))
    out = where(L, x_neg, turned, base)
    half = where(L, y_neg, L.const(-np.pi / 2, t), L.const(np.pi / 2, t))
    x_zero = L.add("Equal", [x, zero])
    y_zero = L.add("Equal", [y, zero])
    out = where(L, L.add("And", [x_zero, L.add("Not", [y_zero])]), half, out)
    signed_zero = where(L, y_neg, L.add("Neg", [zero]), zero)
    at_zero = where(L, x_neg, where(L, y_neg, L.add("Neg", [pi]), pi), signed_zero)
    out = where(L, L.add("And", [x_zero, y_zero]), at_zero, out)
    both_inf = L.add("And", [L.add("IsInf", [x]), L.add("IsInf", [y])])
    corner = where(L, x_neg, L.const(3 * np.pi / 4, t), L.const(np.pi / 4, t))
    corner = where(L, y_neg, L.add("Neg", [corner]), corner)
    out = where(L, both_inf, corner, out)
    y_inf = L.add("And", [L.add("IsInf", [y]), L.add("Not", [L.add("IsInf", [x])])])
    out = where(L, y_inf, half, out)
    either_nan = L.add("Or", [L.add("IsNaN", [x]), L.add("IsNaN", [y])])
    return where(L, either_nan, L.const(np.nan, t), out)


def _float_unary(fn: Callable) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, dtype: Any = None) -> str:
        t = _work(node, dtype)
        if t.kind != "f":
            raise ExportError(f"dtype {t} has no exact ONNX form here")
        return L.cast(fn(L, L.value(x, t), t), t, _out(node))
    return lower


def _float_binary(fn: Callable) -> Callable:
    def lower(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
        t = _work(node, dtype)
        if t.kind != "f":
            raise ExportError(f"dtype {t} has no exact ONNX form here")
        return L.cast(fn(L, L.value(a, t), L.value(b, t), t), t, _out(node))
    return lower


def _sqrt_one_minus_square(L: Lowering, x: str, t: np.dtype) -> str:
    one = L.const(1, t)
    return L.add("Sqrt", [L.add("Mul", [L.add("Sub", [one, x]), L.add("Add", [one, x])])])


def _arcsin(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Asin", [x])
    out = atan2(L, x, _sqrt_one_minus_square(L, x, t), t)
    return where(L, L.add("Greater", [L.add("Abs", [x]), L.const(1, t)]), L.const(np.nan, t), out)


def _arccos(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Acos", [x])
    out = atan2(L, _sqrt_one_minus_square(L, x, t), x, t)
    return where(L, L.add("Greater", [L.add("Abs", [x]), L.const(1, t)]), L.const(np.nan, t), out)


def _sinh(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Sinh", [x])
    u = expm1(L, L.add("Abs", [x]), t)  # sinh|x| = (u + u / (u + 1)) / 2, no cancellation
    s = L.add("Mul", [L.add("Add", [u, L.add("Div", [u, L.add("Add", [u, L.const(1, t)])])]),
                      L.const(0.5, t)])
    a = L.add("Abs", [x])  # far out, (h/2) * h with h = exp(|x| / 2): no early overflow
    h = L.add("Exp", [L.add("Mul", [a, L.const(0.5, t)])])
    s = where(L, L.add("Greater", [a, L.const(20, t)]),
              L.add("Mul", [L.add("Mul", [h, L.const(0.5, t)]), h]), s)
    return where(L, L.add("Less", [x, L.const(0, t)]), L.add("Neg", [s]), s)


def _big(L: Lowering, a: str, t: np.dtype) -> str:
    """Where ``a * a`` would overflow (the inverse hyperbolics take log(a) + log(2) there)."""
    return L.add("Greater", [a, L.const(np.sqrt(np.finfo(t).max) / 2, t)])


def _log_twice(L: Lowering, a: str, t: np.dtype) -> str:
    return L.add("Add", [L.add("Log", [a]), L.const(np.log(2.0), t)])


def _arcsinh(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Asinh", [x])
    a = L.add("Abs", [x])  # asinh|x| = log1p(a + a^2 / (1 + sqrt(1 + a^2)))
    one = L.const(1, t)
    sq = L.add("Mul", [a, a])
    inner = L.add("Add", [a, L.add("Div", [sq, L.add("Add", [one, L.add("Sqrt", [
        L.add("Add", [one, sq])])])])])
    r = where(L, _big(L, a, t), _log_twice(L, a, t), log1p(L, inner, t))
    return where(L, L.add("Less", [x, L.const(0, t)]), L.add("Neg", [r]), r)


def _arccosh(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Acosh", [x])
    u = L.add("Sub", [x, L.const(1, t)])  # log1p(u + sqrt(2u + u^2)), u = x - 1
    inner = L.add("Add", [u, L.add("Sqrt", [L.add("Add", [L.add("Mul", [L.const(2, t), u]),
                                                          L.add("Mul", [u, u])])])])
    r = where(L, _big(L, x, t), _log_twice(L, x, t), log1p(L, inner, t))
    return where(L, L.add("Less", [x, L.const(1, t)]), L.const(np.nan, t), r)


def _arctanh(L: Lowering, x: str, t: np.dtype) -> str:
    if t == np.float32:
        return L.add("Atanh", [x])
    one = L.const(1, t)  # log1p(2x / (1 - x)) / 2
    ratio = L.add("Div", [L.add("Mul", [L.const(2, t), x]), L.add("Sub", [one, x])])
    r = L.add("Mul", [log1p(L, ratio, t), L.const(0.5, t)])
    return where(L, L.add("Greater", [L.add("Abs", [x]), one]), L.const(np.nan, t), r)


def _logaddexp(L: Lowering, a: str, b: str, t: np.dtype) -> str:
    """NumPy's: max + log1p(exp(-|a - b|)); a + log 2 where a == b (infinities included)."""
    top = L.add("Max", [a, b])
    gap = L.add("Exp", [L.add("Neg", [L.add("Abs", [L.add("Sub", [a, b])])])])
    out = L.add("Add", [top, log1p(L, gap, t)])
    out = where(L, L.add("Equal", [a, b]), L.add("Add", [a, L.const(np.log(2.0), t)]), out)
    return where(L, L.add("IsNaN", [L.add("Sub", [a, b])]), L.add("Add", [a, b]), out)


def _hypot(L: Lowering, a: str, b: str, t: np.dtype) -> str:
    """big * sqrt(1 + (small / big)^2): no overflow or underflow in the squares; inf when
    either is infinite (even with a NaN), as C's hypot."""
    x, y = L.add("Abs", [a]), L.add("Abs", [b])
    big, small = L.add("Max", [x, y]), L.add("Min", [x, y])
    ratio = L.add("Div", [small, where(L, _eq(L, big, 0, t), L.const(1, t), big)])
    out = L.add("Mul", [big, L.add("Sqrt", [L.add("Add", [L.const(1, t), L.add(
        "Mul", [ratio, ratio])])])])
    out = where(L, L.add("IsNaN", [L.add("Add", [x, y])]), L.add("Add", [x, y]), out)
    inf = L.add("Or", [L.add("IsInf", [x]), L.add("IsInf", [y])])
    return where(L, inf, L.const(np.inf, t), out)


def _logaddexp2(L: Lowering, a: str, b: str, t: np.dtype) -> str:
    top = L.add("Max", [a, b])
    low = L.add("Min", [a, b])
    gap = L.add("Pow", [L.const(2, t), L.add("Sub", [low, top])])
    out = L.add("Add", [top, L.add("Mul", [log1p(L, gap, t), L.const(1 / np.log(2), t)])])
    out = where(L, L.add("Equal", [a, b]), L.add("Add", [a, L.const(1, t)]), out)
    return where(L, L.add("IsNaN", [L.add("Sub", [a, b])]), L.add("Add", [a, b]), out)


def _cbrt(L: Lowering, x: str, t: np.dtype) -> str:
    root = L.add("Pow", [L.add("Abs", [x]), L.const(1 / 3, t)])
    return L.add("Mul", [L.add("Sign", [x]), root])


def _sinc(L: Lowering, x: str, t: np.dtype) -> str:
    y = L.add("Mul", [L.const(np.pi, t), where(L, _eq(L, x, 0, t), L.const(1e-20, t), x)])
    return L.add("Div", [L.add("Sin", [y]), y])


LOWERINGS.update(
    expm1=_float_unary(expm1), log1p=_float_unary(log1p), arctan=_float_unary(atan64),
    arcsin=_float_unary(_arcsin), arccos=_float_unary(_arccos), sinh=_float_unary(_sinh),
    arctan2=_float_binary(atan2), logaddexp2=_float_binary(_logaddexp2),
    logaddexp=_float_binary(_logaddexp), hypot=_float_binary(_hypot),
    cbrt=_float_unary(_cbrt), sinc=_float_unary(_sinc), arcsinh=_float_unary(_arcsinh),
    arccosh=_float_unary(_arccosh), arctanh=_float_unary(_arctanh),
)


# -- gcd and lcm: Euclid in a Loop ---------------------------------------------------------------
def raw_loop(L: Lowering, trips: str, first: str, carried: list[tuple[str, np.dtype]],
             body: Callable) -> list[str]:
    """An ONNX ``Loop`` over ONNX values: ``body(L, iteration, names)`` returns (condition,
    new values, scan outputs as (name, dtype)); returns the final values then the scans."""
    outer = L.scope
    inner = Scope(outer.graph, outer.env)
    inner.symbols = dict(outer.symbols)
    it, flag = L.fresh("iter"), L.fresh("cond_in")
    names = [L.fresh("carried") for _ in carried]
    infos = [L.helper.make_tensor_value_info(it, L.elem_type(np.int64), []),
             L.helper.make_tensor_value_info(flag, L.elem_type(np.bool_), [])]
    infos += [L.helper.make_tensor_value_info(n, L.elem_type(t), None)
              for n, (_, t) in zip(names, carried)]
    L.scope = inner
    try:
        test, new, scans = body(L, it, names)
        outputs = [L.helper.make_tensor_value_info(L.add("Identity", [test]),
                                                   L.elem_type(np.bool_), [])]
        for value, t in [*((v, t) for v, (_, t) in zip(new, carried)), *scans]:
            outputs.append(L.helper.make_tensor_value_info(L.add("Identity", [value]),
                                                           L.elem_type(t), None))
    finally:
        L.scope = outer
    graph = L.helper.make_graph(inner.nodes, L.fresh("loop_body"), infos, outputs)
    count = len(carried) + len(scans)
    outs = L.add("Loop", [trips, first, *(n for n, _ in carried)], outputs=count, body=graph)
    return [outs] if count == 1 else list(outs)


def _unsigned_abs(L: Lowering, a: str, t: np.dtype) -> tuple[str, np.dtype]:
    """|a| as the unsigned int of the same size (NumPy's gcd and lcm work there: |MIN| fits)."""
    u = np.dtype(f"u{t.itemsize}")
    if t.kind == "u":
        return a, u
    return L.cast(L.add("Abs", [a]), t, u), u  # Abs(MIN) wraps to MIN: 2**(bits-1) unsigned


def _where_u(L: Lowering, cond: str, a: str, b: str, u: np.dtype) -> str:
    """Where on unsigned ints (ORT has no such kernel): on the signed int of the same bits."""
    s = np.dtype(f"i{u.itemsize}")
    return L.cast(where(L, cond, L.cast(a, u, s), L.cast(b, u, s)), s, u)


def gcd_of(L: Lowering, a: str, b: str, t: np.dtype) -> str:
    """Euclid's algorithm on |a|, |b| (unsigned), in an ONNX Loop; the result in ``t``."""
    x, u = _unsigned_abs(L, a, t)
    y, _ = _unsigned_abs(L, b, t)
    x, y = L.add("Add", [x, L.add("Mul", [y, L.const(0, u)])]), L.add("Add", [
        y, L.add("Mul", [x, L.const(0, u)])])  # broadcast both to the result's shape

    def any_nonzero(v: str) -> str:  # a sum: an empty array gives False
        flags = L.cast(L.add("Not", [_eq(L, v, 0, u)]), np.bool_, np.int64)
        count = L.add("ReduceSum", [L.add("Reshape", [flags, L.ints([-1])])], keepdims=0)
        return L.add("Greater", [count, L.const(0, np.int64)])

    def step(L: Lowering, it: str, names: list[str]):
        p, q = names
        done = _eq(L, q, 0, u)
        rem = _where_u(L, done, L.const(0, u), L.add(
            "Mod", [p, _where_u(L, done, L.const(1, u), q, u)], fmod=0), u)
        return any_nonzero(rem), [_where_u(L, done, p, q, u), rem], []

    return L.cast(raw_loop(L, "", any_nonzero(y), [(x, u), (y, u)], step)[0], u, t)


def _gcd(L: Lowering, node: Node, a: Any, b: Any) -> str:
    t = _out(node)
    if t.kind not in "iu":
        raise ExportError(f"gcd of {t}")
    return gcd_of(L, L.value(a, t), L.value(b, t), t)


def _lcm(L: Lowering, node: Node, a: Any, b: Any) -> str:
    """NumPy's: |a| / gcd * |b| in the unsigned int (wrapping), 0 when gcd is 0."""
    t = _out(node)
    if t.kind not in "iu":
        raise ExportError(f"lcm of {t}")
    x, y = L.value(a, t), L.value(b, t)
    ux, u = _unsigned_abs(L, x, t)
    uy, _ = _unsigned_abs(L, y, t)
    g = L.cast(gcd_of(L, x, y, t), t, u)
    zero = _eq(L, g, 0, u)
    q = L.add("Div", [ux, _where_u(L, zero, L.const(1, u), g, u)])
    return L.cast(_where_u(L, zero, L.const(0, u), L.add("Mul", [q, uy]), u), u, t)


LOWERINGS.update(gcd=_gcd, lcm=_lcm)


# -- Python numbers of the graph -----------------------------------------------------------------
def _py_unary(op: str) -> Callable:
    def lower(L: Lowering, node: Node, a: Any) -> str:
        t = _out(node)
        return L.add(op, [L.value(a, t)])
    return lower


def _py_convert(L: Lowering, node: Node, a: Any) -> str:
    t = _out(node)
    source = _compute(L, (a,))
    if t.kind in "iu" and source.kind == "f":  # int() truncates toward zero, as Cast does
        return L.cast(L.value(a, source), source, t)
    return L.value(a, t)


def _py_floordiv(L: Lowering, node: Node, a: Any, b: Any) -> str:
    # a zero divisor raises in Python; ONNX cannot raise and returns NumPy's value
    return divmod_of(L, a, b, _out(node))[0]


def _py_mod(L: Lowering, node: Node, a: Any, b: Any) -> str:
    return divmod_of(L, a, b, _out(node))[1]


def _py_float_binary(op: str) -> Callable:
    def lower(L: Lowering, node: Node, a: Any, b: Any) -> str:
        t = _out(node)
        if t.kind not in "iuf":
            raise ExportError(f"Python arithmetic on {t}")
        return L.add(op, [L.value(a, t), L.value(b, t)])
    return lower


def _py_sqrt(L: Lowering, node: Node, a: Any) -> str:
    # math.sqrt of a negative raises in Python; ONNX cannot raise and returns NaN (as for a
    # zero divisor above)
    t = _out(node)
    return L.add("Sqrt", [L.value(a, t)])


def _scalar_power(L: Lowering, node: Node, a: Any, b: Any) -> str:
    t = _out(node)
    if t.kind != "f":
        raise ExportError(f"** into {t}")
    return L.add("Pow", [L.value(a, t), L.value(b, t)])


LOWERINGS.update(
    py_neg=_py_unary("Neg"), py_pos=_py_unary("Identity"), py_abs=_py_unary("Abs"),
    py_int=_py_convert, py_float=_py_convert, py_item=_py_convert, py_floordiv=_py_floordiv,
    py_mod=_py_mod, py_truediv=_py_float_binary("Div"), py_pow=_py_float_binary("Pow"),
    py_sqrt=_py_sqrt, scalar_power=_scalar_power,
)
