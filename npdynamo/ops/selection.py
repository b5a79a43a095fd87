"""Selection and layout ops: take, take_along_axis, searchsorted, repeat, tile, pad, diag,
diagonal, trace and the stacking helpers (hstack, vstack, dstack, column_stack, atleast_*d),
with their binders.

All run as NumPy calls inside the graph. Index operands may be graph values (their bounds are
then NumPy's runtime check, as for ``getitem``); counts, reps and pad widths are static.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions, methods, view_functions
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.reductions import _sum_dtype
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import fmt_shape, normalize_axis, product, to_meta
from npdynamo.ops.shape_ops import _concatenate_rule

_INTP = np.dtype(np.intp)


def _index_meta(name: str, indices: object) -> ArrayMeta:
    if isinstance(indices, (list, tuple)) and not indices:  # [] converts to an empty intp array
        return ArrayMeta((0,), _INTP)
    meta = to_meta(name, indices)
    if meta.dtype.kind not in "biu":
        raise TypeError(f"{name}: Cannot cast array data from {meta.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    return meta


def _const_bounds(name: str, indices: object, size: int, outer: int, result: int) -> None:
    """NumPy checks constant indices against ``size`` once per outer slice (none if ``outer``
    is 0: the axes before the taken one hold no element), and an empty axis only when the
    result (``result`` elements) is not empty."""
    values = np.asarray(indices) if isinstance(indices, (list, tuple, int)) else None
    if values is not None and values.size:
        if size == 0 and result:
            raise IndexError(f"{name}: cannot do a non-empty take from an empty axes.")
        if outer and (values.min() < -size or values.max() >= size):
            raise IndexError(f"{name}: index out of range for an axis of size {size}")


def _take_rule(a: object, indices: object, *, axis: int | None = None) -> ArrayMeta:
    meta = to_meta("take", a)
    if axis is not None and meta.ndim:
        normalize_axis("take", axis, meta.ndim)
    idx = _index_meta("take", indices)
    if axis is None:
        _const_bounds("take", indices, meta.size, 1, idx.size)
        return ArrayMeta(idx.shape, meta.dtype, scalar=idx.ndim == 0)
    if meta.ndim == 0:
        raise UnsupportedArguments("take along an axis of a 0-d value")
    ax = normalize_axis("take", axis, meta.ndim)
    shape = meta.shape[:ax] + idx.shape + meta.shape[ax + 1:]
    _const_bounds("take", indices, meta.shape[ax], product(meta.shape[:ax]), product(shape))
    return ArrayMeta(shape, meta.dtype, scalar=shape == ())


def _take_along_axis_rule(arr: object, indices: object, *, axis: int | None = -1) -> ArrayMeta:
    meta, idx = to_meta("take_along_axis", arr), to_meta("take_along_axis", indices)
    if idx.dtype.kind not in "iu":
        raise IndexError("take_along_axis: `indices` must be an integer array")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("take_along_axis: when axis=None, `indices` must have a single "
                             "dimension.")
        return ArrayMeta(idx.shape, meta.dtype)
    ax = normalize_axis("take_along_axis", axis, meta.ndim)
    if idx.ndim != meta.ndim:
        raise ValueError("take_along_axis: `indices` and `arr` must have the same number of "
                         "dimensions")
    shape = []
    for i, (d, e) in enumerate(zip(meta.shape, idx.shape)):
        if i == ax:
            shape.append(e)
        elif d != e and 1 not in (d, e):
            raise IndexError(f"take_along_axis: shape mismatch: indexing arrays could not be "
                             f"broadcast together with shapes {fmt_shape(meta.shape)} "
                             f"{fmt_shape(idx.shape)}")
        else:
            shape.append(d if e == 1 else e)
    return ArrayMeta(tuple(shape), meta.dtype)


def _searchsorted_rule(a: object, v: object, *, side: str = "left") -> ArrayMeta:
    meta, vm = to_meta("searchsorted", a), to_meta("searchsorted", v)
    if meta.ndim != 1:
        raise ValueError("searchsorted: object too deep for desired array")
    return ArrayMeta(vm.shape, _INTP, scalar=vm.ndim == 0)


def _repeat_rule(a: object, *, repeats: int | tuple[int, ...],
                 axis: int | None = None) -> ArrayMeta:
    meta = to_meta("repeat", a)
    if meta.ndim == 0:
        raise UnsupportedArguments("repeat of a 0-d value")
    shape = [meta.size] if axis is None else list(meta.shape)
    ax = 0 if axis is None else normalize_axis("repeat", axis, meta.ndim)
    counts = (repeats,) if isinstance(repeats, int) else repeats
    if any(r < 0 for r in counts):
        if meta.size == 0:
            raise UnsupportedArguments("repeat: negative repeats of an empty array")
        raise ValueError("repeat: repeats may not contain negative values.")
    if len(counts) == 1:
        shape[ax] *= counts[0]
    elif len(counts) != shape[ax]:
        raise ValueError(f"repeat: operands could not be broadcast together with shape "
                         f"({shape[ax]},) ({len(counts)},)")
    else:
        shape[ax] = sum(counts)
    return ArrayMeta(tuple(shape), meta.dtype)


def _tile_rule(A: object, *, reps: tuple[int, ...]) -> ArrayMeta:
    meta = to_meta("tile", A)
    if any(r < 0 for r in reps):
        if meta.size == 0:
            raise UnsupportedArguments("tile: negative reps of an empty array")
        raise ValueError("tile: negative dimensions are not allowed")
    ndim = max(meta.ndim, len(reps))
    dims = (1,) * (ndim - meta.ndim) + meta.shape
    reps = (1,) * (ndim - len(reps)) + reps
    return ArrayMeta(tuple(d * r for d, r in zip(dims, reps)), meta.dtype)


_PAD_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def _pad_rule(array: object, *, pad_width: tuple, mode: str = "constant",
              constant_values: object = 0) -> ArrayMeta:
    meta = to_meta("pad", array)
    if meta.ndim == 0:
        raise UnsupportedArguments("pad of a 0-d value")
    widths = np.asarray(pad_width, dtype=np.intp)
    if widths.size == 1:
        widths = np.broadcast_to(widths.reshape(()), (meta.ndim, 2))
    elif widths.size == 2 and widths.shape != (2, 1):
        widths = np.broadcast_to(widths.reshape(2), (meta.ndim, 2))
    else:
        try:
            widths = np.broadcast_to(widths, (meta.ndim, 2))
        except ValueError:
            raise ValueError(f"pad: pad_width of shape {widths.shape} does not fit an array of "
                             f"{meta.ndim} dimensions") from None
    if (widths < 0).any():
        raise ValueError("pad: index can't contain negative values")
    if mode != "constant":
        for d, (lo, hi) in zip(meta.shape, widths.tolist()):
            if d == 0 and (lo or hi):
                raise UnsupportedArguments(f"pad: mode={mode!r} on an empty axis")
    shape = tuple(d + int(lo) + int(hi) for d, (lo, hi) in zip(meta.shape, widths))
    return ArrayMeta(shape, meta.dtype)


def _diag_length(rows: int, cols: int, k: int) -> int:
    return max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))


def _diag_rule(v: object, *, k: int = 0) -> ArrayMeta:
    meta = to_meta("diag", v)
    if meta.ndim == 1:
        n = meta.shape[0] + abs(k)
        return ArrayMeta((n, n), meta.dtype)
    if meta.ndim == 2:
        return ArrayMeta((_diag_length(*meta.shape, k),), meta.dtype)
    raise ValueError("diag: Input must be 1- or 2-d.")


def _diagonal_shape(name: str, meta: ArrayMeta, offset: int, axis1: int,
                    axis2: int) -> tuple[int, ...]:
    if meta.ndim < 2:
        raise ValueError(f"{name}: diag requires an array of at least two dimensions")
    i = normalize_axis(name, axis1, meta.ndim, "axis1")
    j = normalize_axis(name, axis2, meta.ndim, "axis2")
    if i == j:
        raise ValueError(f"{name}: axis1 and axis2 cannot be the same")
    rest = tuple(d for n, d in enumerate(meta.shape) if n not in (i, j))
    return rest + (_diag_length(meta.shape[i], meta.shape[j], offset),)


def _diagonal_rule(a: object, *, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ArrayMeta:
    meta = to_meta("diagonal", a)
    return ArrayMeta(_diagonal_shape("diagonal", meta, offset, axis1, axis2), meta.dtype)


def _trace_rule(a: object, *, offset: int = 0, axis1: int = 0, axis2: int = 1,
                dtype: np.dtype | None = None) -> ArrayMeta:
    meta = to_meta("trace", a)
    shape = _diagonal_shape("trace", meta, offset, axis1, axis2)[:-1]
    out = _sum_dtype(meta.dtype) if dtype is None else dtype
    return ArrayMeta(shape, out, scalar=shape == ())


def _atleast(meta: ArrayMeta, n: int) -> ArrayMeta:
    shape = meta.shape
    if len(shape) < n:
        if len(shape) == 0:
            shape = (1,) * n
        elif len(shape) == 1:
            shape = (1, shape[0], 1)[:n] if n == 3 else (1, shape[0])
        else:
            shape = shape + (1,)
    return ArrayMeta(shape, meta.dtype)


def _atleast_rule(name: str, n: int):
    def rule(a: object) -> ArrayMeta:
        return _atleast(to_meta(name, a), n)

    return rule


def _stacked_metas(name: str, arrays) -> list[ArrayMeta]:
    metas = [to_meta(name, a) for a in arrays]
    if name == "hstack":
        return [_atleast(m, 1) for m in metas]
    if name == "vstack":
        return [_atleast(m, 2) for m in metas]
    if name == "dstack":
        return [_atleast(m, 3) for m in metas]
    # column_stack: 0-d and 1-d inputs become columns
    return [ArrayMeta((m.size, 1) if m.ndim < 2 else m.shape, m.dtype) for m in metas]


def _stacking_rule(name: str):
    def rule(arrays: tuple, *, dtype: np.dtype | None = None) -> ArrayMeta:
        metas = _stacked_metas(name, arrays)
        if not metas:
            raise ValueError(f"{name}: need at least one array to concatenate")
        axis = {"vstack": 0, "dstack": 2, "column_stack": 1}.get(
            name, 0 if metas[0].ndim == 1 else 1)
        out = _concatenate_rule(metas, axis=axis)
        if dtype is None:
            return out
        for m in metas:
            if not np.can_cast(m.dtype, dtype, casting="same_kind"):
                raise TypeError(f"{name}: Cannot cast array data from {m.dtype!r} to "
                                f"{dtype!r} according to the rule 'same_kind'")
        return ArrayMeta(out.shape, dtype)

    return rule


def _append_rule(arr: object, values: object, *, axis: int | None = None) -> ArrayMeta:
    am, vm = to_meta("append", arr), to_meta("append", values)
    if axis is None:
        return ArrayMeta((am.size + vm.size,), np.result_type(am.dtype, vm.dtype))
    return _concatenate_rule([am, vm], axis=axis)


def _diagflat_rule(v: object, *, k: int = 0) -> ArrayMeta:
    meta = to_meta("diagflat", v)
    n = meta.size + abs(k)
    return ArrayMeta((n, n), meta.dtype)


def _ediff1d_rule(ary: object) -> ArrayMeta:
    meta = to_meta("ediff1d", ary)
    if meta.dtype.kind == "b":
        raise TypeError("ediff1d: numpy boolean subtract, the `-` operator, is not supported")
    return ArrayMeta((max(meta.size - 1, 0),), meta.dtype)


def _kwargs_impl(fn):
    def impl(*args, **kwargs):
        return fn(*args, **kwargs)

    impl.__name__ = fn.__name__
    return impl


def _tile(A, *, reps):
    return np.tile(A, reps)


def _repeat(a, *, repeats, axis=None):
    return np.repeat(a, repeats, axis)


def _pad(array, *, pad_width, mode="constant", constant_values=0):
    if mode == "constant":
        return np.pad(array, pad_width, mode, constant_values=constant_values)
    return np.pad(array, pad_width, mode)


for _op in (
    Op("take", np.take, _take_rule, defaults={"axis": None}),
    Op("take_along_axis", np.take_along_axis, _take_along_axis_rule, defaults={"axis": -1}),
    Op("searchsorted", np.searchsorted, _searchsorted_rule, differentiable=False,
       defaults={"side": "left"}),
    Op("repeat", _repeat, _repeat_rule, defaults={"repeats": REQUIRED, "axis": None}),
    Op("tile", _tile, _tile_rule, defaults={"reps": REQUIRED}),
    Op("pad", _pad, _pad_rule,
       defaults={"pad_width": REQUIRED, "mode": "constant", "constant_values": 0}),
    Op("diag", np.diag, _diag_rule, defaults={"k": 0}, view=True),
    Op("diagflat", np.diagflat, _diagflat_rule, defaults={"k": 0}),
    Op("append", np.append, _append_rule, defaults={"axis": None}),
    Op("ediff1d", np.ediff1d, _ediff1d_rule),
    Op("diagonal", np.diagonal, _diagonal_rule, defaults={"offset": 0, "axis1": 0, "axis2": 1},
       view=True),
    Op("trace", np.trace, _trace_rule,
       defaults={"offset": 0, "axis1": 0, "axis2": 1, "dtype": None}),
    *(Op(f"atleast_{n}d", getattr(np, f"atleast_{n}d"), _atleast_rule(f"atleast_{n}d", n))
      for n in (1, 2, 3)),
    *(Op(name, _kwargs_impl(getattr(np, name)), _stacking_rule(name), defaults={"dtype": None})
      for name in ("hstack", "vstack")),
    *(Op(name, getattr(np, name), _stacking_rule(name)) for name in ("dstack", "column_stack")),
):
    register(_op)


# -- binders --------------------------------------------------------------------------------


def _take_binder(a, indices, axis=None, out=None, mode="raise"):
    C.no_out("take", out)
    C.require_default("take", mode=(mode, "raise"))
    return C.canon(REGISTRY["take"], [C.operand("take", a), C.operand("take", indices)],
                   axis=C.int_axis("take", axis))


functions("take")(_take_binder)
methods("take")(_take_binder)


@functions("take_along_axis")
def _take_along_axis(arr, indices, axis=-1):
    return C.canon(REGISTRY["take_along_axis"], [C.operand("take_along_axis", arr),
                                                 C.operand("take_along_axis", indices)],
                   axis=C.int_axis("take_along_axis", axis))


def _searchsorted_binder(a, v, side="left", sorter=None):
    C.require_default("searchsorted", sorter=(sorter, None))
    C.static("searchsorted", "side", side)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right' (got {side!r})")
    return C.canon(REGISTRY["searchsorted"],
                   [C.operand("searchsorted", a), C.operand("searchsorted", v)], side=side)


functions("searchsorted")(_searchsorted_binder)
methods("searchsorted")(_searchsorted_binder)


def _repeat_binder(a, repeats, axis=None):
    C.static("repeat", "repeats", repeats)
    reps = (tuple(C.as_index(r, "repeats") for r in repeats)
            if isinstance(repeats, (list, tuple)) else C.as_index(repeats, "repeats"))
    return C.canon(REGISTRY["repeat"], [C.operand("repeat", a)], repeats=reps,
                   axis=C.int_axis("repeat", axis))


functions("repeat")(_repeat_binder)
methods("repeat")(_repeat_binder)


@functions("tile")
def _tile_binder(A, reps):
    C.static("tile", "reps", reps)
    reps = tuple(reps) if isinstance(reps, (list, tuple)) else (reps,)
    return C.canon(REGISTRY["tile"], [C.operand("tile", A)],
                   reps=tuple(C.as_index(r, "reps") for r in reps))


def _pad_width(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_pad_width(v) for v in value)
    return C.as_index(value, "pad_width")


@functions("pad")
def _pad_binder(array, pad_width, mode="constant", **kwargs):
    C.static("pad", "pad_width", pad_width)
    C.static("pad", "mode", mode)
    if mode not in ("constant", "edge", "wrap", "reflect", "symmetric"):
        raise UnsupportedArguments(f"pad: mode={mode!r} is not supported")
    allowed = {"constant": {"constant_values"}}.get(mode, set())
    for key in kwargs:
        if key not in allowed:
            raise UnsupportedArguments(f"pad: {key}= with mode={mode!r} is not supported")
    fill = kwargs.get("constant_values", 0)
    if type(fill) not in (int, float, bool):
        raise UnsupportedArguments("pad: constant_values must be a Python number")
    return C.canon(REGISTRY["pad"], [C.operand("pad", array)], pad_width=_pad_width(pad_width),
                   mode=mode, constant_values=fill)


@functions("diag")  # of a matrix a read-only view (Op.view), else a new array
def _diag_binder(v, k=0):
    return C.canon(REGISTRY["diag"], [C.operand("diag", v)], k=C.as_index(k, "k"))


@functions("diagflat")
def _diagflat_binder(v, k=0):
    return C.canon(REGISTRY["diagflat"], [C.operand("diagflat", v)], k=C.as_index(k, "k"))


@functions("append")
def _append_binder(arr, values, axis=None):
    return C.canon(REGISTRY["append"], [C.operand("append", arr), C.operand("append", values)],
                   axis=C.int_axis("append", axis))


@functions("ediff1d")
def _ediff1d_binder(ary, to_end=None, to_begin=None):
    C.require_default("ediff1d", to_end=(to_end, None), to_begin=(to_begin, None))
    return C.canon(REGISTRY["ediff1d"], [C.operand("ediff1d", ary)])


def _diagonal_binder(a, offset=0, axis1=0, axis2=1):
    return C.canon(REGISTRY["diagonal"], [C.operand("diagonal", a)],
                   offset=C.as_index(offset, "offset"), axis1=C.as_index(axis1, "axis1"),
                   axis2=C.as_index(axis2, "axis2"))


functions("diagonal")(_diagonal_binder)
methods("diagonal")(_diagonal_binder)


def _trace_binder(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    C.no_out("trace", out)
    return C.canon(REGISTRY["trace"], [C.operand("trace", a)],
                   offset=C.as_index(offset, "offset"), axis1=C.as_index(axis1, "axis1"),
                   axis2=C.as_index(axis2, "axis2"), dtype=C.dtype("trace", dtype))


functions("trace")(_trace_binder)
methods("trace")(_trace_binder)


def _atleast_binder(n: int):
    name = f"atleast_{n}d"

    def binder(*arys):
        if len(arys) != 1:
            raise UnsupportedArguments(f"{name}: several arrays give a tuple of results")
        return C.canon(REGISTRY[name], [C.operand(name, arys[0])])

    return binder


for _n in (1, 2, 3):
    view_functions(f"atleast_{_n}d")(_atleast_binder(_n))


def _stacking_binder(name: str):
    def binder(tup, *, dtype=None, casting="same_kind"):
        C.require_default(name, casting=(casting, "same_kind"))
        return C.canon(REGISTRY[name], [C.operand_sequence(name, tup)],
                       dtype=C.dtype(name, dtype))

    return binder


for _name in ("hstack", "vstack"):
    functions(_name)(_stacking_binder(_name))


def _tuple_only(name: str, tup):
    return C.canon(REGISTRY[name], [C.operand_sequence(name, tup)])


for _name in ("dstack", "column_stack"):
    functions(_name)(partial(_tuple_only, _name))  # its signature is ``(tup)``, as NumPy's

