"""Elementwise ops: NumPy's ufuncs, ``where``, ``clip`` and ``astype``, with their meta rules.

These are the ops the numba backend fuses into single loops (``kind="elementwise"``). Result
shapes follow broadcasting; result dtypes come from the ufunc's own resolver, with Python
scalars kept weak (NEP 50) and checked the way NumPy converts them. A 0-d result of a ufunc is
a NumPy scalar (``ArrayMeta.scalar``), as NumPy returns it.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import (
    Operand,
    broadcast_shapes,
    check_python_int,
    fmt_shape,
    operand,
    output_casting_error,
    promotion_key,
    shape_of,
    to_meta,
)

# name -> differentiable. Piecewise-constant ops (floor, sign...) count as differentiable with a
# zero gradient, as in other autodiff systems; predicates and integer-only ops do not.
UNARY_UFUNCS = {
    **dict.fromkeys(
        "negative positive absolute fabs sign square sqrt cbrt reciprocal exp exp2 expm1 log "
        "log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh "
        "arctanh deg2rad rad2deg floor ceil trunc rint conjugate".split(),
        True,
    ),
    **dict.fromkeys("isnan isinf isfinite signbit logical_not invert".split(), False),
}
BINARY_UFUNCS = {
    **dict.fromkeys(
        "add subtract multiply divide power float_power maximum minimum fmax fmin arctan2 hypot "
        "logaddexp logaddexp2 copysign fmod remainder".split(),
        True,
    ),
    **dict.fromkeys(
        "floor_divide divmod equal not_equal less less_equal greater greater_equal logical_and "
        "logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift "
        "right_shift heaviside gcd lcm nextafter".split(),
        False,
    ),
}
#: Ufuncs that compute a transcendental function per element (``Op.cost == "expensive"``).
_EXPENSIVE = frozenset(
    "exp tanh log sin cos tan arcsin arccos arctan sinh cosh arcsinh arccosh arctanh log2 log10 "
    "log1p expm1 exp2 cbrt arctan2 hypot logaddexp logaddexp2 fmod float_power".split())
#: When a ufunc's results are >= +0.0 or nan (``Op.nonnegative``): for any operands, or when
#: both operands are.
_NONNEGATIVE = {
    **dict.fromkeys("absolute fabs square exp exp2 cosh".split(), "always"),
    **dict.fromkeys("add multiply divide maximum fmax hypot".split(), "operands"),
}
COMPARISONS = frozenset("equal not_equal less less_equal greater greater_equal".split())
_CLIP_UFUNC: np.ufunc = np._core.umath.clip  # np.clip is a Python wrapper around this ufunc


def _where_checks_int_bounds() -> bool:
    # NumPy 2.5 started to reject out-of-bounds Python ints in np.where (2.4 wraps them).
    try:
        np.where(np.True_, np.zeros((), np.int8), 1000)
    except OverflowError:
        return True
    return False


_WHERE_CHECKS_INT_BOUNDS = _where_checks_int_bounds()


def ufunc_meta(
    ufunc: np.ufunc, opname: str, operands: tuple[Operand, ...], dtype: np.dtype | None = None
) -> ArrayMeta | tuple[ArrayMeta, ...]:
    """The result meta(s) of ``ufunc(*operands, dtype=dtype)``."""
    if not any(isinstance(x, ArrayMeta) for x in operands):
        # Without an array, NumPy converts huge Python ints by value (to uint64 or object
        # arrays) and some legacy loop resolvers treat Python ints as int64 under dtype=.
        if dtype is not None or any(
            type(x) is int and not -(2**63) <= x < 2**63 for x in operands  # type: ignore[operator]
        ):
            raise UnsupportedArguments(f"{opname}: this call on Python numbers only")
    keys = tuple(promotion_key(x) for x in operands) + (None,) * ufunc.nout
    extra = {} if dtype is None else {"signature": (None,) * ufunc.nin + (dtype,) * ufunc.nout}
    try:
        resolved = ufunc.resolve_dtypes(keys, casting="same_kind", **extra)
    except TypeError:
        # NumPy converts Python ints to the loop's dtypes before it checks the casting rule.
        try:
            loop = ufunc.resolve_dtypes(keys, casting="unsafe", **extra)
        except TypeError:
            loop = None
        if loop is not None:
            _check_python_ints(ufunc, opname, operands, loop)
        raise
    _check_python_ints(ufunc, opname, operands, resolved)
    out_dtypes = resolved[ufunc.nin :]
    if ufunc is np.power and out_dtypes[0].kind in "iu" and type(operands[1]) is int:
        if operands[1] < 0:
            raise ValueError(f"{opname}: Integers to negative integer powers are not allowed.")
    shape = broadcast_shapes(opname, *(shape_of(x) for x in operands))
    metas = tuple(ArrayMeta(shape, dt, scalar=shape == ()) for dt in out_dtypes)
    return metas[0] if len(metas) == 1 else metas


def _check_python_ints(ufunc: np.ufunc, opname: str, operands: tuple[Operand, ...],
                       dtypes: tuple[np.dtype, ...]) -> None:
    # Comparisons of Python ints with integer arrays give exact answers for any value.
    exact = ufunc.__name__ in COMPARISONS and any(
        isinstance(x, ArrayMeta) and x.dtype.kind in "iu" for x in operands
    )
    for x, dt in zip(operands, dtypes):
        if type(x) is int and not (exact and dt.kind in "iu"):
            check_python_int(opname, x, dt)


def _ufunc_rule(ufunc: np.ufunc, name: str):
    def rule(*operands: object, dtype: np.dtype | None = None):
        if len(operands) != ufunc.nin:
            raise TypeError(f"{name}: expected {ufunc.nin} operands, got {len(operands)}")
        return ufunc_meta(ufunc, name, tuple(operand(name, x) for x in operands), dtype)

    rule.__name__ = f"{name}_rule"
    return rule


def _make_ufunc_ops() -> dict[str, Op]:
    made = {}
    for name, differentiable in {**UNARY_UFUNCS, **BINARY_UFUNCS}.items():
        ufunc = getattr(np, name)
        made[name] = register(
            Op(
                name,
                ufunc,
                _ufunc_rule(ufunc, name),
                kind="elementwise",
                differentiable=differentiable,
                defaults={"dtype": None},
                cost="expensive" if name in _EXPENSIVE else "pass",
                nonnegative=_NONNEGATIVE.get(name),
            )
        )
    return made


UFUNC_OPS = _make_ufunc_ops()


# -- ** between NumPy scalars --------------------------------------------------------------


def _scalar_power(x, y):
    # NumPy scalars' own ``**`` (scalar math: pow() per value), which differs from np.power's
    # loops in the last digit for some inputs; a backend may pass 0-d arrays: make them scalars
    return (x[()] if isinstance(x, np.ndarray) else x) ** (y[()] if isinstance(y, np.ndarray)
                                                          else y)


def _scalar_power_rule(x: object, y: object) -> ArrayMeta:
    a, b = operand("power", x), operand("power", y)
    if any(isinstance(v, ArrayMeta) and v.shape != () for v in (a, b)) or not any(
            isinstance(v, ArrayMeta) for v in (a, b)):
        raise UnsupportedArguments("scalar_power: a NumPy scalar and a NumPy or Python scalar")
    meta = ufunc_meta(np.power, "power", (a, b))
    if meta.dtype.kind not in "fc":  # type: ignore[union-attr]
        # integer scalar math overflows and converts Python ints unlike np.power's loops
        raise UnsupportedArguments("** between integer NumPy scalars is left to Python")
    return meta  # type: ignore[return-value]


scalar_power = register(Op("scalar_power", _scalar_power, _scalar_power_rule, kind="opaque"))


# -- where ----------------------------------------------------------------------------------


def _where_rule(condition: object, x: object, y: object) -> ArrayMeta:
    cond, a, b = (operand("where", v) for v in (condition, x, y))
    # NumPy checks the shapes first: a mismatch wins over an out-of-range Python int
    shape = broadcast_shapes("where", *(shape_of(v) for v in (cond, a, b)))
    # np.result_type takes Python scalars by value and keeps them weak, like np.where does.
    dtype = np.result_type(*(v.dtype if isinstance(v, ArrayMeta) else
                             v.type(0) if isinstance(v, ScalarMeta) else v for v in (a, b)))
    for v in (a, b):
        if type(v) is int:
            check_python_int("where", v, dtype, bounds=_WHERE_CHECKS_INT_BOUNDS)
    return ArrayMeta(shape, dtype)  # np.where returns a 0-d array, never a NumPy scalar


where = register(
    Op("where", lambda condition, x, y: np.where(condition, x, y), _where_rule,
       kind="elementwise")
)


# -- clip -----------------------------------------------------------------------------------


def _clip_rule(a: object, a_min: object, a_max: object) -> ArrayMeta:
    arr = to_meta("clip", a)
    lo = None if a_min is None else operand("clip", a_min)
    hi = None if a_max is None else operand("clip", a_max)
    if arr.dtype.kind in "iu":
        # Python-int bounds beyond the integer dtype's range clip nothing: NumPy drops them.
        info = np.iinfo(arr.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    if lo is None and hi is None:
        return ufunc_meta(np.positive, "clip", (arr,))  # type: ignore[return-value]
    if lo is None:
        return ufunc_meta(np.minimum, "clip", (arr, hi))  # type: ignore[return-value,arg-type]
    if hi is None:
        return ufunc_meta(np.maximum, "clip", (arr, lo))  # type: ignore[return-value]
    return ufunc_meta(_CLIP_UFUNC, "clip", (arr, lo, hi))  # type: ignore[return-value]


clip = register(
    Op("clip", lambda a, a_min, a_max: np.clip(a, a_min, a_max), _clip_rule, kind="elementwise")
)


# -- astype ---------------------------------------------------------------------------------


def _astype(x, *, dtype):
    return x.astype(dtype)


def _astype_rule(x: object, *, dtype: np.dtype) -> ArrayMeta:
    if not isinstance(x, (ArrayMeta, np.ndarray, np.generic)):
        raise AttributeError(f"astype: {type(x).__name__!r} object has no attribute 'astype'")
    meta = to_meta("astype", x)
    return ArrayMeta(meta.shape, dtype, scalar=meta.scalar)


astype = register(
    Op("astype", _astype, _astype_rule, kind="elementwise", defaults={"dtype": REQUIRED})
)


# -- in-place operators ---------------------------------------------------------------------


def infer_inplace(op: Op, target: ArrayMeta, *others: object) -> ArrayMeta:
    """The meta of ``op(target, *others)`` for ``target op= other`` on an array.

    NumPy computes the op as usual and writes the result back into ``target``: it raises when
    the result would not fit ``target``'s shape or cannot be cast to its dtype with
    ``same_kind`` casting. When the returned dtype differs from ``target.dtype`` the stored
    value is ``astype(result, target.dtype)``.
    """
    result = op.infer(target, *others)
    assert isinstance(result, ArrayMeta)
    if result.shape != target.shape:
        raise ValueError(
            f"{op.name}: non-broadcastable output operand with shape {fmt_shape(target.shape)} "
            f"doesn't match the broadcast shape {fmt_shape(result.shape)}"
        )
    if not np.can_cast(result.dtype, target.dtype, casting="same_kind"):
        raise output_casting_error(op.name, result.dtype, target.dtype)
    return result
