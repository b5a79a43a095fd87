"""Canonical argument values: the conversions ``normalize`` applies to each bound argument.

Array operands are opaque here (the translator passes its own tracked values): anything that is
not a Python builtin in an operand slot is an array. Static parameters are turned into one
spelling each (dtypes to ``np.dtype``, axes to ints or tuples, shapes to tuples) so that
equivalent calls give equal canonical forms, which is what CSE relies on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.ops.registry import REQUIRED, Op, UnsupportedArguments
from npdynamo.ops.rules import NUMERIC_KINDS, as_index, as_size
from npdynamo.ops.symbolic import SymInt

#: NumPy's "argument not given" marker in signatures.
NO_VALUE: Any = np._NoValue

_BUILTIN_TYPES = (
    bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, slice, range,
    type(None), type(Ellipsis),
)


def is_array_value(x: object) -> bool:
    """True for anything in an operand slot that is not a Python builtin value."""
    return not isinstance(x, _BUILTIN_TYPES)


def _is_static(x: object) -> bool:
    return not is_array_value(x) or isinstance(x, (np.generic, np.dtype, type))


def _freeze(name: str, x: object) -> object:
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(name, v) for v in x)
    if is_array_value(x):
        raise UnsupportedArguments(
            f"{name}: a list holding array values is not supported (use np.stack)"
        )
    return x


def operand(name: str, x: object) -> object:
    """A data operand: arrays and Python scalars unchanged, constant lists as nested tuples."""
    if isinstance(x, (list, tuple)):
        return _freeze(name, x)
    return x


def operand_sequence(name: str, arrays: object) -> tuple:
    """The ``arrays`` argument of concatenate/stack: a tuple of operands."""
    if not isinstance(arrays, (list, tuple)):
        raise UnsupportedArguments(
            f"{name}: the arrays must be given as a list or tuple, not as one array to iterate"
        )
    return tuple(operand(name, a) for a in arrays)


def static(name: str, param: str, value: object) -> object:
    """Refuse a static parameter that is itself a graph value (its value is unknown)."""
    if not _is_static(value):
        raise UnsupportedArguments(f"{name}: {param} computed from array data is not supported")
    if isinstance(value, (list, tuple)):
        for v in value:
            static(name, param, v)
    return value


def dtype(name: str, value: object) -> np.dtype | None:
    if value is None:
        return None
    dt = np.dtype(static(name, "dtype", value))  # type: ignore[call-overload]
    if dt.kind not in NUMERIC_KINDS:
        raise UnsupportedArguments(f"{name}: dtype {dt} is not supported (numeric dtypes only)")
    return dt


def axis(name: str, value: object) -> int | tuple[int, ...] | None:
    """``None``, an int, or a tuple of ints (lists become tuples)."""
    static(name, "axis", value)
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return tuple(as_index(a, "axis") for a in value)
    return as_index(value, "axis")


def int_axis(name: str, value: object) -> int | None:
    static(name, "axis", value)
    return None if value is None else as_index(value, "axis")


def shape(name: str, value: object) -> tuple[int, ...]:
    # symbolic sizes (``x.reshape(y.shape)`` under dynamic shapes) are sizes the rules know
    sizes = value if isinstance(value, (list, tuple)) else (value,)
    static(name, "shape", tuple(d for d in sizes if not isinstance(d, SymInt)))
    if isinstance(value, (list, tuple)):
        return tuple(as_size(d, "shape") for d in value)
    try:
        return (as_size(value, "shape"),)
    except TypeError:
        raise TypeError(
            f"{name}: expected a sequence of integers or a single integer, got {value!r}"
        ) from None


def flag(name: str, param: str, value: object) -> bool:
    return bool(static(name, param, value))


def index(name: str, idx: object) -> tuple:
    """An index as a tuple of canonical items; array operands stay as they are."""
    items = idx if isinstance(idx, tuple) else (idx,)
    return tuple(_index_item(name, it) for it in items)


def _index_item(name: str, item: object) -> object:
    if isinstance(item, np.bool_):
        return bool(item)
    if isinstance(item, np.integer):
        return int(item)
    if isinstance(item, slice):
        return slice(*(_slice_field(name, f) for f in (item.start, item.stop, item.step)))
    if isinstance(item, (list, tuple)):
        # Inside an index a nested sequence is an index array (a tuple too): keep it a list.
        return [_index_list_item(name, v) for v in item]
    return item


def _index_list_item(name: str, item: object) -> object:
    if isinstance(item, (list, tuple)):
        return [_index_list_item(name, v) for v in item]
    if isinstance(item, (np.bool_, np.integer)):
        return item.item()
    if is_array_value(item):
        raise UnsupportedArguments(f"{name}: an index list holding array values")
    return item


def _slice_field(name: str, field: object) -> object:
    if isinstance(field, np.integer):
        return int(field)
    if is_array_value(field):
        raise UnsupportedArguments(f"{name}: a slice bound computed from array data")
    return field


def no_out(name: str, out: object) -> None:
    if out is None or out is NO_VALUE:
        return
    if isinstance(out, tuple) and all(o is None for o in out):
        return
    raise UnsupportedArguments(f"{name}: out= is not supported in a graph")


def require_default(name: str, **params: tuple[object, object]) -> None:
    """Each ``param=(value, neutral)``: refuse values other than the neutral one."""
    for param, (value, neutral) in params.items():
        if value is NO_VALUE or value is neutral:
            continue
        if type(value) is type(neutral) and value == neutral:
            continue
        raise UnsupportedArguments(f"{name}: {param}={value!r} is not supported in a graph")


def _same(value: object, default: object) -> bool:
    if default is REQUIRED:
        return False
    if value is default:
        return True
    return type(value) is type(default) and bool(value == default)


def canon(op: Op, args: tuple | list, **static_kwargs: object) -> tuple[Op, tuple, dict]:
    """(op, args, kwargs) with kwargs in the op's order, dropping those equal to the default."""
    unknown = set(static_kwargs) - set(op.defaults)
    if unknown:
        raise AssertionError(f"{op!r} has no static parameter(s) {sorted(unknown)}")
    kwargs = {
        k: static_kwargs[k]
        for k, default in op.defaults.items()
        if k in static_kwargs and not _same(static_kwargs[k], default)
    }
    return op, tuple(args), kwargs
