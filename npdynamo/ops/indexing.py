"""Indexing ops: ``getitem`` (basic and integer-array indexing) and a functional ``setitem``.

The index is a tuple of static items (ints, slices, None, Ellipsis, Python bools, constant int
lists) and array operands (integer index arrays). Its result shape follows NumPy's rules,
including where the broadcast shape of the advanced indices lands. Boolean-array masks select a
data-dependent number of elements and are refused with ``UnsupportedArguments``.
``setitem(x, index, value)`` returns a new array equal to ``x`` after ``x[index] = value``; its
index may be one boolean mask (``x[x < 0] = 0``: the result's shape does not depend on the mask).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import Op, UnsupportedArguments, register
from npdynamo.ops.rules import (
    assignment_shape_check,
    broadcast_shapes,
    check_python_scalar_assignment,
    fmt_shape,
    is_py_scalar,
    to_meta,
)
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.unbacked import mentions_unbacked, slice_size

_BAD_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)
_ADVANCED = object()  # placeholder for the advanced-index block in the result shape


def _classify(opname: str, item: Any) -> tuple[str, Any]:
    """(kind, payload) for one index item; kinds: newaxis ellipsis bool int int0d slice array."""
    if item is None:
        return "newaxis", None
    if item is Ellipsis:
        return "ellipsis", None
    if type(item) is bool or isinstance(item, np.bool_):
        return "bool", bool(item)
    if type(item) is int or isinstance(item, np.integer):
        return "int", int(item)
    if isinstance(item, SymInt):
        return "int", item
    if isinstance(item, ScalarMeta) and item.type is int:
        # a Python int known at run time only (a loop's index): an int index whose bounds
        # NumPy checks when the graph runs, as for a 0-d integer array
        return "int0d", None
    if isinstance(item, slice):
        for field in (item.start, item.stop, item.step):
            if isinstance(field, ArrayMeta):
                raise UnsupportedArguments(f"{opname}: a slice bound computed from array data")
        return "slice", item
    if isinstance(item, list):
        values = np.asarray(item) if item else np.zeros(0, np.intp)
        return _classify_array(opname, ArrayMeta(values.shape, values.dtype), values)
    if isinstance(item, (np.ndarray, np.generic)):
        return _classify_array(opname, ArrayMeta.of(item), np.asarray(item))
    if isinstance(item, ArrayMeta):
        return _classify_array(opname, item, None)
    raise IndexError(f"{opname}: {_BAD_INDEX}")


def _classify_array(opname: str, meta: ArrayMeta, values: np.ndarray | None) -> tuple[str, Any]:
    if meta.dtype.kind == "b":
        raise UnsupportedArguments(
            f"{opname}: a boolean mask index selects a data-dependent number of elements"
        )
    if meta.dtype.kind not in "iu":
        raise IndexError(
            f"{opname}: arrays used as indices must be of integer (or boolean) type, "
            f"not {meta.dtype}"
        )
    if meta.ndim == 0:
        return ("int", int(values)) if values is not None else ("int0d", None)
    return "array", (meta, values)


def index_shape(
    opname: str,
    meta: ArrayMeta,
    index: Any,
    *,
    on_prepared: Callable[[], None] | None = None,
    on_shape: Callable[[tuple[int, ...], bool | None], None] | None = None,
) -> tuple[tuple[int, ...], bool]:
    """(shape of ``x[index]``, whether ``x[index]`` is a single element as a NumPy scalar).

    NumPy checks an index in stages and ``setitem`` interleaves its value checks with them:
    ``on_prepared`` runs once the plain items are validated (before advanced indices are
    broadcast), ``on_shape(shape, element)`` once the selection's shape is known (before index
    arrays are bounds-checked; ``element`` is None under advanced indexing).
    """
    items = [_classify(opname, it) for it in (index if isinstance(index, tuple) else (index,))]
    kinds = [k for k, _ in items]
    if kinds.count("ellipsis") > 1:
        raise IndexError(f"{opname}: an index can only have a single ellipsis ('...')")
    consumed = sum(k in ("int", "int0d", "slice", "array") for k in kinds)
    if consumed > meta.ndim:
        raise IndexError(
            f"{opname}: too many indices for array: array is {meta.ndim}-dimensional, but "
            f"{consumed} were indexed"
        )
    advanced = "array" in kinds or "bool" in kinds
    out: list[Any] = []
    adv_shapes: list[tuple[int, ...]] = []
    adv_positions: list[int] = []
    bounds_error: IndexError | None = None
    dim = 0
    for pos, (kind, payload) in enumerate(items):
        if kind == "ellipsis":
            n = meta.ndim - consumed
            out.extend(meta.shape[dim : dim + n])
            dim += n
        elif kind == "newaxis":
            out.append(1)
        elif kind == "slice":
            out.append(slice_length(payload, meta.shape[dim]))
            dim += 1
        elif kind in ("int", "int0d"):
            size = meta.shape[dim]
            if kind == "int" and not -size <= payload < size:
                raise IndexError(
                    f"{opname}: index {payload} is out of bounds for axis {dim} with size {size}"
                )
            if advanced:
                adv_shapes.append(())
                adv_positions.append(pos)
                out.append(_ADVANCED)
            dim += 1
        elif kind == "array":
            arr_meta, values = payload
            size = meta.shape[dim]
            if isinstance(size, SymInt) and values is not None and values.size:
                # Bounds of constant index arrays against a symbolic size: recorded facts.
                lo, hi = int(values.min()), int(values.max())
                if bounds_error is None and not (-size <= lo and hi < size):
                    bounds_error = IndexError(
                        f"{opname}: index {hi if hi >= size else lo} is out of bounds for axis "
                        f"{dim} with size {size}"
                    )
            elif values is not None and values.size and bounds_error is None:
                bad = values[(values < -size) | (values >= size)]
                if bad.size:
                    bounds_error = IndexError(
                        f"{opname}: index {bad.flat[0]} is out of bounds for axis {dim} with "
                        f"size {size}"
                    )
            adv_shapes.append(arr_meta.shape)
            adv_positions.append(pos)
            out.append(_ADVANCED)
            dim += 1
        else:  # a Python bool: a 0-d mask adding an axis of length 1 (True) or 0 (False)
            adv_shapes.append((1,) if payload else (0,))
            adv_positions.append(pos)
            out.append(_ADVANCED)
    out.extend(meta.shape[dim:])
    if on_prepared is not None:
        on_prepared()
    if not advanced:
        element = consumed == meta.ndim and all(k in ("int", "int0d") for k in kinds)
        shape = tuple(out)
    else:
        element = False
        shape = _place_advanced(opname, out, adv_shapes, adv_positions)
    if on_shape is not None:
        on_shape(shape, element if not advanced else None)
    if bounds_error is not None and not _selects_nothing(adv_shapes):
        raise bounds_error
    return shape, element


def _selects_nothing(adv_shapes: list[tuple]) -> bool:
    """Whether the index arrays broadcast to no element: NumPy then checks none of their
    values against the axis (``a[[], [5]]`` of a 1x1 array is empty, not an IndexError)."""
    dims = [d for shape in adv_shapes for d in shape]
    if not all(type(d) is int for d in dims):
        return False
    try:
        return 0 in np.broadcast_shapes(*adv_shapes)
    except ValueError:
        return False


def _place_advanced(opname: str, out: list[Any], adv_shapes: list[tuple[int, ...]],
                    adv_positions: list[int]) -> tuple[int, ...]:
    """Insert the advanced indices' broadcast shape: in place if they are adjacent, else first."""
    try:
        block = broadcast_shapes(opname, *adv_shapes)
    except ValueError:
        shapes = " ".join(fmt_shape(s) for s in adv_shapes)
        raise IndexError(
            f"{opname}: shape mismatch: indexing arrays could not be broadcast together with "
            f"shapes {shapes}"
        ) from None
    first = out.index(_ADVANCED)
    rest = [d for d in out if d is not _ADVANCED]
    adjacent = adv_positions == list(range(adv_positions[0], adv_positions[-1] + 1))
    return tuple(rest[:first] + list(block) + rest[first:] if adjacent else list(block) + rest)


def _getitem_rule(x: object, index: Any) -> ArrayMeta:
    meta = to_meta("getitem", x)
    shape, element = index_shape("getitem", meta, index)
    return ArrayMeta(shape, meta.dtype, scalar=element)


def boolean_mask(index: Any) -> ArrayMeta | None:
    """The mask's meta when ``index`` is one boolean array of at least one dimension."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) != 1:
        return None
    item = items[0]
    meta = ArrayMeta.of(item) if isinstance(item, (np.ndarray, np.generic)) else item
    if isinstance(meta, ArrayMeta) and meta.dtype.kind == "b" and meta.ndim >= 1:
        return meta
    return None


def _mask_setitem_rule(meta: ArrayMeta, mask: ArrayMeta, value: object) -> None:
    """``x[mask] = value``: the result's shape is static, whatever the mask selects; a value
    whose fit depends on how many elements the mask selects is refused."""
    if mask.ndim > meta.ndim:
        raise IndexError(f"setitem: too many indices for array: array is {meta.ndim}-"
                         f"dimensional, but {mask.ndim} were indexed")
    for axis, (m, d) in enumerate(zip(mask.shape, meta.shape)):
        if m != d:
            raise IndexError(f"setitem: boolean index did not match indexed array along axis "
                             f"{axis}; size of axis is {d} but size of corresponding boolean "
                             f"axis is {m}")
    rest = meta.shape[mask.ndim:]
    if is_py_scalar(value):
        check_python_scalar_assignment("setitem", value, meta.dtype)
        return
    if isinstance(value, (list, tuple)):
        raise UnsupportedArguments("setitem: a sequence assigned through a boolean mask")
    vmeta = to_meta("setitem", value)
    if mask.ndim == meta.ndim and vmeta.ndim > 1:
        raise TypeError(f"setitem: NumPy boolean array indexing assignment requires a 0 or "
                        f"1-dimensional input, input has {vmeta.ndim} dimensions")
    try:
        # Any number of selected elements takes a value that broadcasts into (1, *rest).
        assignment_shape_check("setitem", to_meta("setitem", value).shape, (1, *rest))
    except ValueError:
        raise UnsupportedArguments(
            "setitem: a value whose fit depends on how many elements the mask selects"
        ) from None


def _setitem_rule(x: object, index: Any, value: object) -> ArrayMeta:
    meta = to_meta("setitem", x)
    if meta.scalar:
        raise TypeError(f"setitem: a NumPy scalar ({meta.dtype}) does not support item assignment")
    result = ArrayMeta(meta.shape, meta.dtype)
    mask = boolean_mask(index)
    if mask is not None:
        _mask_setitem_rule(meta, mask, value)
        return result
    if is_py_scalar(value):
        # A Python scalar is converted to the array's dtype before advanced indices are used.
        index_shape("setitem", meta, index,
                    on_prepared=lambda: check_python_scalar_assignment("setitem", value,
                                                                       meta.dtype))
        return result
    if isinstance(value, ScalarMeta):  # its value is checked by NumPy at run time
        index_shape("setitem", meta, index)
        return result
    index_shape("setitem", meta, index,
                on_shape=lambda target, element: _check_value(meta, value, target, element))
    return result


def _check_value(
    meta: ArrayMeta, value: object, target: tuple[int, ...], element: bool | None
) -> None:
    """What NumPy checks when it writes an array (or constant sequence) into ``target``."""
    if isinstance(value, (list, tuple)):
        if element:
            # NumPy's answer depends on the dtype (bool takes the list's truth value).
            raise UnsupportedArguments("setitem: assigning a sequence to a single element")
        # A constant: converting it to the target dtype raises exactly what NumPy raises.
        vmeta = to_meta("setitem", np.asarray(value, dtype=meta.dtype))
        if vmeta.ndim > len(target):
            # NumPy converts a sequence with at most as many dimensions as the target has.
            raise ValueError(
                f"setitem: setting an array element with a sequence: a {vmeta.ndim}-d sequence "
                f"into a {len(target)}-d selection"
            )
    else:
        vmeta = to_meta("setitem", value)
    if element and vmeta.ndim > 0:
        # One element takes a non-0-d array only as a truth value (bool, size 1); complex
        # elements fail in the complex() conversion instead.
        if meta.dtype.kind == "b" and vmeta.size == 1:
            return
        error = TypeError if meta.dtype.kind == "c" else ValueError
        raise error(
            f"setitem: setting an array element with a sequence (value of shape "
            f"{fmt_shape(vmeta.shape)})."
        )
    if element is None and 0 in target and len(vmeta.shape) > len(target) and all(
            v in (1, t) for v, t in zip(reversed(vmeta.shape), reversed(target))):
        # Advanced indexing into an empty selection takes a value with extra leading
        # dimensions when its trailing ones fit (found by the rule's property test).
        return
    assignment_shape_check("setitem", vmeta.shape, target)


def _getitem(x, index):
    return x[index]


def _setitem(x, index, value):
    out = x.copy(order="K")
    out[index] = value
    return out


register(Op("getitem", _getitem, _getitem_rule, view=True, cost="free",
            recomputable=True))  # (a view for basic indexing; integer arrays copy)
register(Op("setitem", _setitem, _setitem_rule))


# -- slice lengths (sizes and bounds may be symbolic) ---------------------------------------
def slice_length(slc: slice, n: int | SymInt) -> int | SymInt:
    """``len(range(*slc.indices(n)))`` for sizes and bounds that may be symbolic.

    Follows CPython's clamping (``PySlice_AdjustIndices``) step by step; each clamp compares
    sizes, so a symbolic bound records the fact its branch relied on (``x[:3]`` of ``s0``
    records ``s0 >= 3``). The step must be a constant. A bound from a rolled loop's index
    (``ops.loop_index``) is decided for every iteration or refused; ``start == stop`` and
    ``stop == n`` take the branch that gives the same result either way, so ``x[:i]`` and
    ``x[i + 1:]`` need no decision that differs at the range's ends.
    """
    start, stop, step = slc.start, slc.stop, slc.step
    if type(n) is int and not any(isinstance(v, SymInt) for v in (start, stop, step)):
        return len(range(*slc.indices(n)))
    if isinstance(step, SymInt):
        raise UnsupportedArguments("getitem: a slice step that is a symbolic size")
    step = 1 if step is None else _slice_index(step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if mentions_unbacked((start, stop, n)):  # known at run time only (``ops.unbacked``)
        start, stop = (None if v is None else _slice_index(v) for v in (start, stop))
        return slice_size(start, stop, step, n)
    neg = step < 0
    start = (n - 1 if neg else 0) if start is None else _clamp(_slice_index(start), n, neg)
    stop = (-1 if neg else n) if stop is None else _clamp(_slice_index(stop), n, neg)
    if step == -1:  # as for step 1: start == stop gives 0 either way
        return start - stop if stop <= start else 0
    if neg:
        return (start - stop - 1) // -step + 1 if stop < start else 0
    if step == 1:  # start == stop gives 0 either way: the form that decides one case fewer
        return stop - start if start <= stop else 0
    return (stop - start - 1) // step + 1 if start < stop else 0


def _slice_index(v: object) -> int | SymInt:
    if isinstance(v, SymInt):
        return v
    if not hasattr(type(v), "__index__"):
        raise TypeError("slice indices must be integers or None or have an __index__ method")
    return v.__index__()  # type: ignore[attr-defined]


def _clamp(i: int | SymInt, n: int | SymInt, neg: bool) -> int | SymInt:
    if i < 0:
        i = i + n
        if i < 0:
            return -1 if neg else 0
        return i
    if (i >= n) if neg else (i > n):  # a stop of n clamps to n: itself, no decision needed
        return n - 1 if neg else n
    return i
