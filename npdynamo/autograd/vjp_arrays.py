"""VJP rules of the ops that move data: shape ops, copies, indexing and filled creation.

Shape ops send the cotangent back through the inverse movement. ``getitem``'s cotangent is
scattered into zeros with ``index_add`` when the index holds arrays, so repeated indices
accumulate. ``setitem``'s value receives the cotangent of the positions it actually wrote:
with repeated indices NumPy keeps one of the writes, and the rule asks NumPy which one by
replaying the assignment with position ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.autograd.backward_ops import index_add
from npdynamo.autograd.emitting import Emit, is_array, map_handles, meta
from npdynamo.autograd.vjp_helpers import Math, unbroadcast
from npdynamo.autograd.vjp_registry import vjp
from npdynamo.ops import REGISTRY, ArrayMeta
from npdynamo.ops.indexing import boolean_mask
from npdynamo.ops.rules import normalize_axis, product


def _back_to_shape(emit: Emit, g: Any, out: Any, x: Any, **kwargs: Any) -> tuple:
    return (Math(emit).reshape(g, meta(x).shape),)


vjp("reshape", "expand_dims", "squeeze", "ravel", "flatten")(_back_to_shape)


def _identity(emit: Emit, g: Any, out: Any, x: Any, **kwargs: Any) -> tuple:
    return (g if is_array(x) else None,)


vjp("copy", "array", "asarray")(_identity)


def _chosen(emit: Emit, g: Any, out: Any, holds: Any, value: Any, otherwise: Any = None) -> tuple:
    return (None, g if is_array(value) else None)  # the test only decides whether it runs


vjp("chosen")(_chosen)


@vjp("transpose")
def _transpose(emit: Emit, g: Any, out: Any, x: Any, axes: Any = None) -> tuple:
    if axes is None:
        return (Math(emit)("transpose", g),)
    ndim = meta(x).ndim
    inverse = tuple(int(i) for i in np.argsort([normalize_axis("transpose", a, ndim)
                                                for a in axes]))
    return (Math(emit)("transpose", g, axes=inverse),)


@vjp("swapaxes")
def _swapaxes(emit: Emit, g: Any, out: Any, x: Any, *, axis1: int, axis2: int) -> tuple:
    return (Math(emit)("swapaxes", g, axis1=axis1, axis2=axis2),)


@vjp("moveaxis")
def _moveaxis(emit: Emit, g: Any, out: Any, x: Any, *, source: Any, destination: Any) -> tuple:
    return (Math(emit)("moveaxis", g, source=destination, destination=source),)


@vjp("broadcast_to", "broadcast_view")  # (np.broadcast_arrays' writeable views: the same)
def _broadcast_to(emit: Emit, g: Any, out: Any, array: Any, *, shape: Any) -> tuple:
    return (unbroadcast(emit, g, meta(array)) if is_array(array) else None,)


def _part_meta(a: Any) -> ArrayMeta:
    return meta(a) if is_array(a) else ArrayMeta.of(np.asarray(a))


@vjp("concatenate")
def _concatenate(emit: Emit, g: Any, out: Any, arrays: Any, *, axis: Any = 0) -> tuple:
    M = Math(emit)
    cts, offset = [], 0
    for a in arrays:
        m = _part_meta(a)
        if axis is None:
            piece = M("getitem", g, (slice(offset, offset + m.size),))
            cts.append(M.reshape(piece, m.shape) if is_array(a) else None)
            offset += m.size
            continue
        ax = normalize_axis("concatenate", axis, m.ndim)
        width = m.shape[ax]
        index = (slice(None),) * ax + (slice(offset, offset + width),)
        cts.append(M("getitem", g, index) if is_array(a) else None)
        offset += width
    return (tuple(cts),)


@vjp("stack")
def _stack(emit: Emit, g: Any, out: Any, arrays: Any, *, axis: int = 0) -> tuple:
    M = Math(emit)
    ax = normalize_axis("stack", axis, meta(out).ndim)
    return (tuple(
        M("getitem", g, (slice(None),) * ax + (i,)) if is_array(a) else None
        for i, a in enumerate(arrays)
    ),)


@vjp("full")
def _full(emit: Emit, g: Any, out: Any, fill_value: Any, **kwargs: Any) -> tuple:
    return (unbroadcast(emit, g, meta(fill_value)) if is_array(fill_value) else None,)


@vjp("full_like")
def _full_like(emit: Emit, g: Any, out: Any, a: Any, fill_value: Any, **kwargs: Any) -> tuple:
    return (None, unbroadcast(emit, g, meta(fill_value)) if is_array(fill_value) else None)


def _has_arrays(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, list) or is_array(i) for i in items)


@vjp("getitem")
def _getitem(emit: Emit, g: Any, out: Any, x: Any, index: Any) -> tuple:
    M = Math(emit)
    xm = meta(x)
    zeros = M.zeros(xm.shape, meta(g).dtype)
    scatter = index_add if _has_arrays(index) else None
    ct = emit(scatter, zeros, index, g) if scatter is not None else M("setitem", zeros, index, g)
    return ct, None


@vjp("setitem")
def _setitem(emit: Emit, g: Any, out: Any, x: Any, index: Any, value: Any) -> tuple:
    M = Math(emit)
    ct_x = M("setitem", g, index, 0.0)
    if not is_array(value):
        return ct_x, None, None
    if boolean_mask(map_handles(index, lambda h: meta(h) if is_array(h) else h)) is not None:
        return ct_x, None, _mask_value_ct(emit, g, index, value)
    picked = M("getitem", g, index)
    if _has_arrays(index):
        # Which positions of the selection won the write? Replay it with ids 0..k-1.
        target = meta(out)
        selection = REGISTRY["getitem"].infer(target, map_handles(index, meta))
        ids = M.reshape(M("arange", stop=product(selection.shape)), selection.shape)
        board = M("setitem", M("full", -1, shape=target.shape, dtype=np.dtype(np.int64)),
                  index, ids)
        won = M("equal", M("getitem", board, index), ids)
        picked = M.where(won, picked, 0.0)
    return ct_x, None, unbroadcast(emit, picked, meta(value))


def _mask_value_ct(emit: Emit, g: Any, index: Any, value: Any) -> Any:
    """``x[mask] = value`` broadcasts ``value`` into every selected row: its cotangent is the
    sum of ``g`` over the selected rows, summed back to the value's shape."""
    M = Math(emit)
    mask = index[0] if isinstance(index, tuple) else index
    gm, mk, vm = meta(g), meta(mask), meta(value)
    selected = M.reshape(mask, mk.shape + (1,) * (gm.ndim - mk.ndim))
    summed = M("sum", M.where(selected, g, 0.0), axis=tuple(range(mk.ndim)))
    core = vm.shape[max(0, vm.ndim - (gm.ndim - mk.ndim)):]  # leading 1s dropped
    return M.reshape(unbroadcast(emit, summed, ArrayMeta(core, vm.dtype)), vm.shape)


@vjp("index_add")
def _index_add(emit: Emit, g: Any, out: Any, x: Any, index: Any, value: Any) -> tuple:
    ct_value = None
    if is_array(value):
        ct_value = unbroadcast(emit, Math(emit)("getitem", g, index), meta(value))
    return g, None, ct_value



