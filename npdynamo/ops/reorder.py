"""Reordering ops: flip, roll, rot90, tril/triu, sort/argsort/partition, nan_to_num, with binders.

Each keeps the number of elements and (except the arg- variants) the dtype of its operand; rules
are integer arithmetic on the shape. All run as NumPy calls inside the graph (opaque to fusion).
The binders below mirror NumPy's signatures and refuse what a graph cannot hold (``out=``,
``copy=False``, record ``order=``).
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions, methods
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import normalize_axes, normalize_axis, to_meta

_INTP = np.dtype(np.intp)


def _flip_rule(m: object, *, axis: int | tuple[int, ...] | None = None) -> ArrayMeta:
    meta = to_meta("flip", m)
    normalize_axes("flip", axis, meta.ndim)
    # m[(slice(None, None, -1),) * 0] on a 0-d value is m[()]: a NumPy scalar.
    return ArrayMeta(meta.shape, meta.dtype, scalar=meta.ndim == 0)


def _roll_rule(a: object, *, shift: int | tuple[int, ...],
               axis: int | tuple[int, ...] | None = None) -> ArrayMeta:
    meta = to_meta("roll", a)
    if axis is not None:
        axes = (axis,) if isinstance(axis, int) else axis
        shifts = (shift,) if isinstance(shift, int) else shift
        if len(axes) != len(shifts) and 1 not in (len(axes), len(shifts)):
            raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences")
        for ax in axes:
            normalize_axis("roll", ax, meta.ndim)
    elif not isinstance(shift, int) and len(shift) != 1:
        # Rolling the flattened array by several shifts broadcasts to a 2-D index: refused.
        raise UnsupportedArguments("roll: a sequence of shifts without axis")
    return ArrayMeta(meta.shape, meta.dtype)


def _rot90_rule(m: object, *, k: int = 1, axes: tuple[int, int] = (0, 1)) -> ArrayMeta:
    meta = to_meta("rot90", m)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == meta.ndim:
        raise ValueError("rot90: Axes must be different.")
    if not all(-meta.ndim <= ax < meta.ndim for ax in axes):
        raise ValueError(f"rot90: Axes={axes} out of range for array of ndim={meta.ndim}.")
    shape = list(meta.shape)
    if k % 2:
        i, j = (ax % meta.ndim for ax in axes)
        shape[i], shape[j] = shape[j], shape[i]
    return ArrayMeta(tuple(shape), meta.dtype)


def _triangle_rule(name: str):
    def rule(m: object, *, k: int = 0) -> ArrayMeta:
        meta = to_meta(name, m)
        if meta.ndim == 0:
            raise TypeError(f"{name}: the input must be at least 1-dimensional")
        if meta.ndim == 1:  # the (n, n) mask broadcasts a vector to a square
            return ArrayMeta(meta.shape * 2, meta.dtype)
        return ArrayMeta(meta.shape, meta.dtype)

    return rule


def _sort_rule(name: str, dtype: np.dtype | None):
    def rule(a: object, *, axis: int | None = -1, kth: int | tuple[int, ...] | None = None,
             stable: bool | None = None) -> ArrayMeta:
        meta = to_meta(name, a)
        if meta.ndim == 0:
            raise UnsupportedArguments(f"{name} of a 0-d value")
        out = meta.dtype if dtype is None else dtype
        if axis is None:
            shape: tuple = (meta.size,)
            ax_size = meta.size
        else:
            ax = normalize_axis(name, axis, meta.ndim)
            shape, ax_size = meta.shape, meta.shape[ax]
        if kth is not None and meta.size == 0:
            raise UnsupportedArguments(f"{name} of an empty axis")
        for kv in () if kth is None else ((kth,) if isinstance(kth, int) else kth):
            if not -ax_size <= kv < ax_size:
                raise ValueError(f"{name}: kth(={kv}) out of bounds ({ax_size})")
        return ArrayMeta(shape, out)

    return rule


def _nan_to_num_rule(x: object, *, nan: float = 0.0, posinf: float | None = None,
                     neginf: float | None = None) -> ArrayMeta:
    meta = to_meta("nan_to_num", x)
    return ArrayMeta(meta.shape, meta.dtype, scalar=meta.ndim == 0)


def _flip(m, *, axis=None):
    return np.flip(m, axis)


def _roll(a, *, shift, axis=None):
    return np.roll(a, shift, axis)


def _rot90(m, *, k=1, axes=(0, 1)):
    return np.rot90(m, k, axes)


def _sorting(fn):
    def impl(a, *, axis=-1, kth=None, stable=None):
        if kth is not None:
            return fn(a, kth, axis)
        return fn(a, axis, stable=stable)

    return impl


for _op in (
    Op("flip", _flip, _flip_rule, defaults={"axis": None}, view=True),
    Op("roll", _roll, _roll_rule, defaults={"shift": REQUIRED, "axis": None}),
    Op("rot90", _rot90, _rot90_rule, defaults={"k": 1, "axes": (0, 1)}, view=True),
    Op("tril", np.tril, _triangle_rule("tril"), defaults={"k": 0}, allocates=True),
    Op("triu", np.triu, _triangle_rule("triu"), defaults={"k": 0}, allocates=True),
    Op("sort", _sorting(np.sort), _sort_rule("sort", None), defaults={"axis": -1, "stable": None}),
    Op("argsort", _sorting(np.argsort), _sort_rule("argsort", _INTP), differentiable=False,
       defaults={"axis": -1, "stable": None}),
    Op("partition", _sorting(np.partition), _sort_rule("partition", None),
       defaults={"axis": -1, "kth": None}),
    Op("argpartition", _sorting(np.argpartition), _sort_rule("argpartition", _INTP),
       differentiable=False, defaults={"axis": -1, "kth": None}),
    Op("nan_to_num", np.nan_to_num, _nan_to_num_rule,
       defaults={"nan": 0.0, "posinf": None, "neginf": None}),
):
    register(_op)


# -- binders --------------------------------------------------------------------------------


def _ints(name: str, param: str, value: object) -> int | tuple[int, ...]:
    C.static(name, param, value)
    if isinstance(value, (list, tuple)):
        return tuple(C.as_index(v, param) for v in value)
    return C.as_index(value, param)


@functions("flip")
def _flip_binder(m, axis=None):
    return C.canon(REGISTRY["flip"], [C.operand("flip", m)], axis=C.axis("flip", axis))


@functions("fliplr")
def _fliplr(m):
    return _flip_binder(m, 1)


@functions("flipud")
def _flipud(m):
    return _flip_binder(m, 0)


@functions("roll")
def _roll_binder(a, shift, axis=None):
    return C.canon(REGISTRY["roll"], [C.operand("roll", a)], shift=_ints("roll", "shift", shift),
                   axis=C.axis("roll", axis))


@functions("rot90")
def _rot90_binder(m, k=1, axes=(0, 1)):
    axes = _ints("rot90", "axes", axes)
    if isinstance(axes, int):
        raise TypeError("rot90: axes must be a sequence of two ints")
    return C.canon(REGISTRY["rot90"], [C.operand("rot90", m)], k=_ints("rot90", "k", k),
                   axes=axes)


def _triangle(name: str):
    def binder(m, k=0):
        return C.canon(REGISTRY[name], [C.operand(name, m)], k=C.as_index(k, "k"))

    return binder


functions("tril")(_triangle("tril"))
functions("triu")(_triangle("triu"))


def _sort_binder(name: str):
    def binder(a, axis=-1, kind=None, order=None, *, stable=None):
        C.require_default(name, order=(order, None))
        if kind is not None and stable is not None:
            raise ValueError(f"{name}: `kind` and `stable` parameters can't be provided at the "
                             "same time. Use only one of them.")
        if kind is not None:
            C.static(name, "kind", kind)
            if kind not in ("quicksort", "mergesort", "heapsort", "stable"):
                raise ValueError(f"{name}: sort kind must be one of 'quick', 'heap', or "
                                 f"'stable' (got {kind!r})")
            stable = True if kind in ("mergesort", "stable") else None
        return C.canon(REGISTRY[name], [C.operand(name, a)], axis=C.int_axis(name, axis),
                       stable=None if stable is None else C.flag(name, "stable", stable))

    return binder


functions("sort")(_sort_binder("sort"))
functions("argsort")(_sort_binder("argsort"))
methods("argsort")(_sort_binder("argsort"))


def _partition_binder(name: str):
    def binder(a, kth, axis=-1, kind="introselect", order=None):
        C.require_default(name, kind=(kind, "introselect"), order=(order, None))
        return C.canon(REGISTRY[name], [C.operand(name, a)], axis=C.int_axis(name, axis),
                       kth=_ints(name, "kth", kth))

    return binder


functions("partition")(_partition_binder("partition"))
functions("argpartition")(_partition_binder("argpartition"))
methods("argpartition")(_partition_binder("argpartition"))


def _number(name: str, param: str, value: object) -> object:
    C.static(name, param, value)
    if value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise UnsupportedArguments(f"{name}: {param}={value!r} is not supported")


@functions("nan_to_num")
def _nan_to_num_binder(x, copy=True, nan=0.0, posinf=None, neginf=None):
    C.require_default("nan_to_num", copy=(bool(copy), True))
    return C.canon(REGISTRY["nan_to_num"], [C.operand("nan_to_num", x)],
                   nan=_number("nan_to_num", "nan", nan),
                   posinf=_number("nan_to_num", "posinf", posinf),
                   neginf=_number("nan_to_num", "neginf", neginf))
