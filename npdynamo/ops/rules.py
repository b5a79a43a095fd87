"""Shared pieces of the meta rules: operands, broadcasting, axes and Python-scalar conversion.

Every rule in ``ops/`` works on ``ArrayMeta``s and static Python values only. Shapes are handled
with plain integer arithmetic (no ``np.empty(shape)`` probes), so sizes can later become
symbolic; dtypes come from NumPy's own promotion functions. Error messages start with the op's
name and use NumPy's exception types.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.exceptions import AxisError

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import UnsupportedArguments
from npdynamo.ops.symbolic import SymInt

#: Python scalar types NumPy treats as "weak" (NEP 50) when mixed with arrays; bool is strong.
PY_SCALARS = (bool, int, float, complex)
NUMERIC_KINDS = "biufc"
_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1

Operand = ArrayMeta | ScalarMeta | bool | int | float | complex


def is_py_scalar(x: object) -> bool:
    # Exact types: np.float64 subclasses float but is a (strong) NumPy scalar.
    return type(x) in PY_SCALARS


def fmt_shape(shape: Sequence[int]) -> str:
    return str(tuple(shape))


def scalar_dtype(x: bool | int | float | complex) -> np.dtype:
    """The dtype ``np.asarray`` gives a Python scalar (int64, then uint64 for big ints)."""
    if type(x) is int and not _INT64_MIN <= x < 2**63:
        if 0 <= x <= _UINT64_MAX:
            return np.dtype(np.uint64)
        raise UnsupportedArguments(f"the Python int {x} needs an object array")
    return np.dtype(type(x))


def operand(opname: str, x: object) -> Operand:
    """An operand as rules see it: a meta, or a Python scalar kept weak.

    A dynamic scalar (``ScalarMeta``) stays weak; so does a symbolic size used as a number
    (``x / x.shape[0]``): at run time it is the Python int the shape holds.
    """
    if isinstance(x, (ArrayMeta, ScalarMeta)) or is_py_scalar(x):
        return x  # type: ignore[return-value]
    if isinstance(x, SymInt):
        return ScalarMeta(int)
    return to_meta(opname, x)


def to_meta(opname: str, x: object) -> ArrayMeta:
    """The meta of ``np.asarray(x)``: Python scalars and constant lists become strong arrays."""
    if isinstance(x, ArrayMeta):
        return x
    if isinstance(x, ScalarMeta):
        return ArrayMeta((), x.array_dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        meta = ArrayMeta.of(x)
    elif is_py_scalar(x):
        return ArrayMeta((), scalar_dtype(x))  # type: ignore[arg-type]
    elif isinstance(x, (list, tuple)):
        arr = np.asarray(x)
        meta = ArrayMeta(arr.shape, arr.dtype)
    elif isinstance(x, SymInt):
        return ArrayMeta((), np.dtype(np.int64))  # a size is an int below 2**63
    else:
        raise TypeError(f"{opname}: unsupported operand of type {type(x).__name__}")
    if meta.dtype.kind not in NUMERIC_KINDS:
        raise UnsupportedArguments(f"{opname}: arrays of dtype {meta.dtype} are not supported")
    return meta


def shape_of(x: Operand) -> tuple[int, ...]:
    return x.shape if isinstance(x, ArrayMeta) else ()


def promotion_key(x: Operand) -> Any:
    """What ``ufunc.resolve_dtypes`` takes for ``x``: a dtype, or a weak Python type."""
    if isinstance(x, ArrayMeta):
        return x.dtype
    if isinstance(x, ScalarMeta):
        return x.type
    if type(x) is bool:
        return np.dtype(bool)
    return type(x)


def identical(a: object, b: object) -> bool:
    """The same size without a decision: equal ints, or the same symbolic expression (a size
    that depends on a loop index may be 1 in some iterations, ``ops.loop_index``)."""
    if type(a) is int and type(b) is int:
        return a == b
    return getattr(a, "terms", None) is not None and a.terms == getattr(b, "terms", None)


def broadcast_shapes(opname: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes``; ValueError naming the op and shapes when they clash."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = None
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if size is None or identical(d, size) or identical(size, 1):
                    size = d  # 1 broadcasts to any size, a size to itself (1 or not)
                    continue
                if not identical(d, 1) and d != 1:
                    if size != 1 and d != size:
                        listed = " ".join(fmt_shape(s) for s in shapes)
                        raise ValueError(
                            f"{opname}: operands could not be broadcast together with shapes "
                            f"{listed}"
                        )
                    size = d
        out.append(1 if size is None else size)
    return tuple(out)


def assignment_shape_check(opname: str, value: Sequence[int], target: Sequence[int]) -> None:
    """Check that ``value`` broadcasts into ``target`` as an assignment does.

    Assignment is one-directional and lets the value carry extra leading size-1 dimensions.
    """
    value = tuple(value)
    while len(value) > len(target) and value[0] == 1:
        value = value[1:]
    ok = len(value) <= len(target) and all(
        identical(v, t) or v in (1, t) for v, t in zip(reversed(value), reversed(tuple(target)))
    )
    if not ok:
        raise ValueError(
            f"{opname}: could not broadcast input array from shape {fmt_shape(value)} into "
            f"shape {fmt_shape(target)}"
        )


def normalize_axis(opname: str, axis: int, ndim: int, what: str | None = None) -> int:
    """``axis`` in ``range(ndim)``; AxisError when out of bounds."""
    if not -ndim <= axis < ndim:
        prefix = f"{opname}: {what}" if what else opname
        raise AxisError(axis, ndim, prefix)
    return axis % ndim


def normalize_axes(
    opname: str,
    axis: int | Iterable[int] | None,
    ndim: int,
    *,
    legacy_0d: bool = False,
    in_order: bool = False,
    duplicate: str = "duplicate value in 'axis'",
) -> tuple[int, ...]:
    """The reduced/selected axes as sorted non-negative ints (``None`` = all axes).

    ``legacy_0d``: NumPy's ufunc reductions and ``squeeze`` accept a plain ``axis=0`` or
    ``axis=-1`` on 0-d arrays and treat it as "no axis". Out-of-bounds axes are reported before
    duplicates unless ``in_order`` (then the first problem in the sequence wins).
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        if legacy_0d and ndim == 0 and axis in (0, -1):
            return ()
        return (normalize_axis(opname, axis, ndim),)
    out: list[int] = []
    for a in axis:
        out.append(normalize_axis(opname, a, ndim))
        if in_order and out[-1] in out[:-1]:
            raise ValueError(f"{opname}: {duplicate}")
    if len(set(out)) != len(out):
        raise ValueError(f"{opname}: {duplicate}")
    return tuple(sorted(out))


def check_python_int(opname: str, value: int, dtype: np.dtype, *, bounds: bool = True) -> None:
    """Raise what NumPy raises when the Python int ``value`` is converted to ``dtype`` (NEP 50).

    Values outside C long range fail first (except non-negative ones for uint64); then the
    dtype's own bounds (``bounds=False`` skips that step, for paths that wrap silently). Any
    value in range converts to bool.
    """
    if dtype.kind in "biu":
        fits_long = _INT64_MIN <= value < 2**63
        # Without the bounds step any value a 64-bit integer holds is accepted (and wrapped).
        fits_ulong = (dtype == np.uint64 or not bounds) and 0 <= value <= _UINT64_MAX
        if not (fits_long or fits_ulong):
            raise OverflowError(f"{opname}: Python int too large to convert to C long")
        if dtype.kind == "b" or not bounds:
            return
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise OverflowError(f"{opname}: Python integer {value} out of bounds for {dtype}")
    elif dtype.kind in "fc":
        try:
            float(value)
        except OverflowError:
            raise OverflowError(f"{opname}: int too large to convert to float") from None


def check_python_scalar_assignment(opname: str, value: object, dtype: np.dtype) -> None:
    """Raise what NumPy raises when a Python scalar is stored into an array of ``dtype``."""
    if dtype.kind == "b":
        return  # anything converts to bool by truth value
    if type(value) is int:
        check_python_int(opname, value, dtype)
    elif type(value) is float and dtype.kind in "iu":
        if value != value:
            raise ValueError(f"{opname}: cannot convert float NaN to integer")
        if value in (float("inf"), float("-inf")):
            raise OverflowError(f"{opname}: cannot convert float infinity to integer")
        check_python_int(opname, int(value), dtype)
    elif type(value) is complex and dtype.kind != "c":
        raise TypeError(
            f"{opname}: cannot store a complex value in an array of dtype {dtype} "
            "(float() argument must be a string or a real number, not 'complex')"
        )


def as_index(x: object, what: str = "value") -> int:
    """``operator.index(x)``, refusing bools the way NumPy's axis/shape parsers do."""
    if type(x) is bool:
        raise TypeError(f"{what}: an integer is required, not bool")
    if isinstance(x, SymInt):
        raise UnsupportedArguments(f"{what}: a symbolic size is not supported here")
    return operator.index(x)


def as_size(x: object, what: str = "shape") -> int | SymInt:
    """A shape entry: ``as_index``, letting symbolic sizes through."""
    return x if isinstance(x, SymInt) else as_index(x, what)


def product(shape: Iterable[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def output_casting_error(ufunc_name: str, from_: np.dtype, to: np.dtype) -> Exception:
    """The error NumPy raises when a ufunc's result cannot be written into an ``out`` array."""
    ufunc = getattr(np, ufunc_name, None)
    cls = getattr(np._core._exceptions, "_UFuncOutputCastingError", None)
    if isinstance(ufunc, np.ufunc) and cls is not None:
        return cls(ufunc, "same_kind", from_, to, 0)
    return TypeError(
        f"Cannot cast ufunc {ufunc_name!r} output from {from_!r} to {to!r} with casting rule "
        "'same_kind'"
    )
