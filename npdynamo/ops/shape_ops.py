"""Shape ops (reshape, transpose, squeeze, concatenate, stack, broadcast_to, ...) and copies.

These ops move or copy data without arithmetic; their rules are pure integer arithmetic on
shapes. Several of them return views in NumPy: the graph treats every op as functional, and the
capture stage is responsible for aliasing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REQUIRED, Op, register
from npdynamo.ops.rules import (
    check_python_scalar_assignment,
    fmt_shape,
    is_py_scalar,
    normalize_axes,
    normalize_axis,
    product,
    to_meta,
)

AxisArg = int | tuple[int, ...]


def _reshape_rule(a: object, *, shape: tuple[int, ...]) -> ArrayMeta:
    meta = to_meta("reshape", a)
    unknown = [i for i, d in enumerate(shape) if d < 0]
    if len(unknown) > 1:
        raise ValueError("reshape: can only specify one unknown dimension")
    known = product(d for d in shape if d >= 0)
    bad = ValueError(
        f"reshape: cannot reshape array of size {meta.size} into shape {fmt_shape(shape)}"
    )
    if unknown:
        if known == 0 or meta.size % known:
            raise bad
        shape = tuple(meta.size // known if d < 0 else d for d in shape)
    elif known != meta.size:
        raise bad
    # A NumPy scalar reshaped to () stays a scalar (the method round-trips through 0-d).
    return ArrayMeta(shape, meta.dtype, scalar=meta.scalar and shape == ())


def _transpose_rule(a: object, *, axes: tuple[int, ...] | None = None) -> ArrayMeta:
    meta = to_meta("transpose", a)
    if axes is None:
        perm: Sequence[int] = range(meta.ndim - 1, -1, -1)
    else:
        if len(axes) != meta.ndim:
            raise ValueError(
                f"transpose: axes don't match array: {len(axes)} axes for an array of shape "
                f"{fmt_shape(meta.shape)}"
            )
        perm = []
        for ax in axes:
            perm.append(normalize_axis("transpose", ax, meta.ndim))
            if perm[-1] in perm[:-1]:
                raise ValueError("transpose: repeated axis in transpose")
    return ArrayMeta(tuple(meta.shape[i] for i in perm), meta.dtype, scalar=meta.scalar)


def _expand_dims_rule(a: object, *, axis: AxisArg) -> ArrayMeta:
    meta = to_meta("expand_dims", a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = meta.ndim + len(axes)
    new = normalize_axes("expand_dims", axes, ndim, duplicate="repeated axis")
    dims = iter(meta.shape)
    return ArrayMeta(tuple(1 if i in new else next(dims) for i in range(ndim)), meta.dtype)


def _squeeze_rule(a: object, *, axis: AxisArg | None = None) -> ArrayMeta:
    meta = to_meta("squeeze", a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(meta.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, meta.ndim, legacy_0d=True, in_order=True)
        if any(meta.shape[i] != 1 for i in axes):
            raise ValueError(
                "squeeze: cannot select an axis to squeeze out which has size not equal to one"
            )
    shape = tuple(d for i, d in enumerate(meta.shape) if i not in axes)
    return ArrayMeta(shape, meta.dtype, scalar=meta.scalar)


def _concatenate_rule(arrays: Sequence[object], *, axis: int | None = 0) -> ArrayMeta:
    metas = [to_meta("concatenate", x) for x in arrays]
    if not metas:
        raise ValueError("concatenate: need at least one array to concatenate")
    dtype = np.result_type(*(m.dtype for m in metas))
    if axis is None:
        return ArrayMeta((sum(m.size for m in metas),), dtype)
    first = metas[0]
    if first.ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis("concatenate", axis, first.ndim)
    for i, m in enumerate(metas[1:], 1):
        if m.ndim != first.ndim:
            raise ValueError(
                "concatenate: all the input arrays must have same number of dimensions, but the "
                f"array at index 0 has {first.ndim} dimension(s) and the array at index {i} has "
                f"{m.ndim} dimension(s)"
            )
        for d in range(first.ndim):
            if d != ax and m.shape[d] != first.shape[d]:
                raise ValueError(
                    "concatenate: all the input array dimensions except for the concatenation "
                    f"axis must match exactly, but along dimension {d}, the array at index 0 "
                    f"has size {first.shape[d]} and the array at index {i} has size {m.shape[d]}"
                )
    shape = list(first.shape)
    shape[ax] = sum(m.shape[ax] for m in metas)
    return ArrayMeta(tuple(shape), dtype)


def _stack_rule(arrays: Sequence[object], *, axis: int = 0) -> ArrayMeta:
    metas = [to_meta("stack", x) for x in arrays]
    if not metas:
        raise ValueError("stack: need at least one array to stack")
    shape = metas[0].shape
    if any(m.shape != shape for m in metas):
        shapes = ", ".join(fmt_shape(m.shape) for m in metas)
        raise ValueError(f"stack: all input arrays must have the same shape, got {shapes}")
    ax = normalize_axis("stack", axis, len(shape) + 1)
    out = shape[:ax] + (len(metas),) + shape[ax:]
    return ArrayMeta(out, np.result_type(*(m.dtype for m in metas)))


def _broadcast_to_rule(array: object, *, shape: tuple[int, ...]) -> ArrayMeta:
    meta = to_meta("broadcast_to", array)
    if any(d < 0 for d in shape):
        raise ValueError("broadcast_to: all elements of broadcast shape must be non-negative")
    if meta.ndim > len(shape):
        raise ValueError(
            f"broadcast_to: input operand has more dimensions than allowed by the axis "
            f"remapping: {fmt_shape(meta.shape)} into {fmt_shape(shape)}"
        )
    if any(m not in (1, s) for m, s in zip(reversed(meta.shape), reversed(shape))):
        raise ValueError(
            f"broadcast_to: operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {fmt_shape(meta.shape)} and requested shape "
            f"{fmt_shape(shape)}"
        )
    return ArrayMeta(shape, meta.dtype)


def _flat_rule(name: str):
    def rule(a: object) -> ArrayMeta:
        meta = to_meta(name, a)
        return ArrayMeta((meta.size,), meta.dtype)

    return rule


def _copy_rule(a: object) -> ArrayMeta:
    return to_meta("copy", a)


def _array_rule(name: str):
    def rule(a: object, *, dtype: np.dtype | None = None) -> ArrayMeta:
        if isinstance(a, (list, tuple)):
            # A constant: converting it is how NumPy reports bad elements, so do exactly that.
            arr = np.asarray(a, dtype=dtype)
            return to_meta(name, arr)
        if dtype is not None and is_py_scalar(a):
            check_python_scalar_assignment(name, a, dtype)
        meta = to_meta(name, a)
        return ArrayMeta(meta.shape, meta.dtype if dtype is None else dtype)

    return rule


def _swapaxes_rule(a: object, *, axis1: int, axis2: int) -> ArrayMeta:
    meta = to_meta("swapaxes", a)
    i = normalize_axis("swapaxes", axis1, meta.ndim, "axis1")
    j = normalize_axis("swapaxes", axis2, meta.ndim, "axis2")
    shape = list(meta.shape)
    shape[i], shape[j] = shape[j], shape[i]
    return ArrayMeta(tuple(shape), meta.dtype)


def _moveaxis_rule(a: object, *, source: AxisArg, destination: AxisArg) -> ArrayMeta:
    meta = to_meta("moveaxis", a)
    picked = []
    for what, axes in (("source", source), ("destination", destination)):
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        norm = [normalize_axis("moveaxis", ax, meta.ndim, what) for ax in axes]
        if len(set(norm)) != len(norm):
            raise ValueError(f"moveaxis: repeated axis in `{what}` argument")
        picked.append(norm)
    src, dst = picked
    if len(src) != len(dst):
        raise ValueError(
            "moveaxis: `source` and `destination` arguments must have the same number of "
            "elements"
        )
    order = [i for i in range(meta.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return ArrayMeta(tuple(meta.shape[i] for i in order), meta.dtype, scalar=meta.scalar)


# The methods np.reshape/np.transpose forward to, called directly for NumPy values (the
# functions' wrapper frames cost about a microsecond each in small graphs).
def _reshape(a, *, shape):
    if isinstance(a, (np.ndarray, np.generic)):
        return a.reshape(shape)
    return np.reshape(a, shape)


def _transpose(a, *, axes=None):
    if isinstance(a, (np.ndarray, np.generic)):
        return a.transpose(axes)
    return np.transpose(a, axes)


def _copy(a):
    # Method semantics: a NumPy scalar stays a scalar (np.copy maps to ``array`` instead).
    return a.copy()


def _array(a, *, dtype=None):
    return np.array(a, dtype=dtype)


def _asarray(a, *, dtype=None):
    return np.asarray(a, dtype=dtype)


def _flatten(a):
    return a.flatten()


#: A view of its operand, or a new shape of it (``Op`` traits): no pass over the data, cheap
#: enough for a backward to redo.
_VIEW = {"view": True, "cost": "free", "recomputable": True}

for _op in (
    Op("reshape", _reshape, _reshape_rule, defaults={"shape": REQUIRED}, **_VIEW),
    Op("transpose", _transpose, _transpose_rule, defaults={"axes": None}, **_VIEW),
    Op("expand_dims", np.expand_dims, _expand_dims_rule, defaults={"axis": REQUIRED}, **_VIEW),
    Op("squeeze", np.squeeze, _squeeze_rule, defaults={"axis": None}, **_VIEW),
    Op("concatenate", np.concatenate, _concatenate_rule, defaults={"axis": 0}, recomputable=True),
    Op("stack", np.stack, _stack_rule, defaults={"axis": 0}, recomputable=True),
    Op("broadcast_to", np.broadcast_to, _broadcast_to_rule, defaults={"shape": REQUIRED}, **_VIEW),
    Op("ravel", np.ravel, _flat_rule("ravel"), **_VIEW),
    Op("flatten", _flatten, _flat_rule("flatten"), recomputable=True),
    Op("copy", _copy, _copy_rule, allocates=True, recomputable=True),
    Op("array", _array, _array_rule("array"), defaults={"dtype": None}, recomputable=True),
    Op("asarray", _asarray, _array_rule("asarray"), defaults={"dtype": None}, recomputable=True),
    Op("swapaxes", np.swapaxes, _swapaxes_rule,
       defaults={"axis1": REQUIRED, "axis2": REQUIRED}, **_VIEW),
    Op("moveaxis", np.moveaxis, _moveaxis_rule,
       defaults={"source": REQUIRED, "destination": REQUIRED}, **_VIEW),
):
    register(_op)
