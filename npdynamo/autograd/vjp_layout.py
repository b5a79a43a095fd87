"""VJP rules of the reordering, selection, stacking and scan ops (flip, roll, sort, take, pad,
diag, hstack, cumsum, diff, ...).

Ops that pick elements of their operand send the cotangent back to the picked positions: by the
inverse movement when there is one (flip, roll, rot90, sort via the inverse permutation), else
by ``index_add`` into zeros at constant index arrays computed from the static shape (repeat,
tile, pad's non-constant modes, diag, diagonal, trace), so repeated picks accumulate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.autograd import vjp_reductions  # noqa: F401  (the rules reused here)
from npdynamo.autograd.backward_ops import index_add
from npdynamo.autograd.emitting import Emit, is_array, meta
from npdynamo.autograd.vjp_helpers import Math, expand_reduced, reduced_axes
from npdynamo.autograd.vjp_registry import RULES, vjp
from npdynamo.errors import GradError
from npdynamo.ops import REGISTRY, ArrayMeta
from npdynamo.ops.rules import normalize_axis
from npdynamo.ops.selection import _stacked_metas


def _scatter(emit: Emit, shape: tuple, index: tuple, g: Any) -> Any:
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated positions accumulate)."""
    zeros = Math(emit).zeros(shape, meta(g).dtype)
    return emit(index_add, zeros, index, g)


def _picked(emit: Emit, g: Any, xm: ArrayMeta, pick: Callable[[np.ndarray], np.ndarray]) -> Any:
    """Cotangent of ``out = pick(x)`` for a pick that only moves elements: ``pick`` applied to
    the flat positions of ``x`` says where each output element came from (filled zeros and
    constants come from nowhere)."""
    source = pick(np.arange(1, xm.size + 1).reshape(xm.shape)) - 1
    M = Math(emit)
    if (source < 0).any():
        kept = np.nonzero(source >= 0)
        g, source = M("getitem", g, kept), source[kept]
    flat = _scatter(emit, (xm.size,), (source,), g)
    return M.reshape(flat, xm.shape)


@vjp("flip")
def _flip(emit, g, out, m, *, axis=None):
    return (Math(emit)("flip", g, axis=axis),)


@vjp("roll")
def _roll(emit, g, out, a, *, shift, axis=None):
    back = -shift if isinstance(shift, int) else tuple(-s for s in shift)
    return (Math(emit)("roll", g, shift=back, axis=axis),)


@vjp("rot90")
def _rot90(emit, g, out, m, *, k=1, axes=(0, 1)):
    return (Math(emit)("rot90", g, k=-k, axes=axes),)


def _triangle_rule(name: str):
    def rule(emit, g, out, m, *, k=0):
        M = Math(emit)
        ct = M(name, g, k=k)
        if meta(m).ndim == 1:  # the vector was broadcast over the rows of the mask
            ct = M("sum", ct, axis=0)
        return (ct,)

    return rule


vjp("tril")(_triangle_rule("tril"))
vjp("triu")(_triangle_rule("triu"))


def _permuted(emit, g, x, perm_op: str, axis, **kw):
    M = Math(emit)
    xm = meta(x)
    if axis is None:
        perm = M(perm_op, M.reshape(x, (xm.size,)), axis=-1, **kw)
        inverse = M("argsort", perm)
        return M.reshape(M("take_along_axis", g, inverse, axis=-1), xm.shape)
    inverse = M("argsort", M(perm_op, x, axis=axis, **kw), axis=axis)
    return M("take_along_axis", g, inverse, axis=axis)


@vjp("sort")
def _sort(emit, g, out, a, *, axis=-1, stable=None):
    return (_permuted(emit, g, a, "argsort", axis, stable=True),)


@vjp("partition")
def _partition(emit, g, out, a, *, axis=-1, kth=None):
    return (_permuted(emit, g, a, "argpartition", axis, kth=kth),)


@vjp("nan_to_num")
def _nan_to_num(emit, g, out, x, **kwargs):
    M = Math(emit)
    return (M.where(M("isfinite", x), g, 0.0),)


@vjp("take")
def _take(emit, g, out, a, indices, *, axis=None):
    am = meta(a)
    if axis is None:
        flat = _scatter(emit, (am.size,), (indices,), g)
        return Math(emit).reshape(flat, am.shape), None
    ax = normalize_axis("take", axis, am.ndim)
    return _scatter(emit, am.shape, (slice(None),) * ax + (indices,), g), None


@vjp("take_along_axis")
def _take_along_axis(emit, g, out, arr, indices, *, axis=-1):
    am = meta(arr)
    if axis is None:
        flat = _scatter(emit, (am.size,), (indices,), g)
        return Math(emit).reshape(flat, am.shape), None
    ax = normalize_axis("take_along_axis", axis, am.ndim)
    gm = meta(g)
    index = tuple(
        indices if i == ax else np.arange(d).reshape((-1,) + (1,) * (gm.ndim - i - 1))
        for i, d in enumerate(gm.shape)
    )
    return _scatter(emit, am.shape, index, g), None


@vjp("repeat")
def _repeat(emit, g, out, a, *, repeats, axis=None):
    xm = meta(a)
    return (_picked(emit, g, xm, lambda pos: np.repeat(pos, repeats, axis)),)


@vjp("tile")
def _tile(emit, g, out, A, *, reps):
    return (_picked(emit, g, meta(A), lambda pos: np.tile(pos, reps)),)


@vjp("pad")
def _pad(emit, g, out, array, *, pad_width, mode="constant", constant_values=0):
    extra = {"constant_values": 0} if mode == "constant" else {}
    return (_picked(emit, g, meta(array), lambda pos: np.pad(pos, pad_width, mode, **extra)),)


@vjp("diag")
def _diag(emit, g, out, v, *, k=0):
    vm = meta(v)
    if vm.ndim == 1:
        return (Math(emit)("diagonal", g, offset=k),)
    return (_picked(emit, g, vm, lambda pos: np.diag(pos, k)),)


@vjp("diagflat")
def _diagflat(emit, g, out, v, *, k=0):
    return (_picked(emit, g, meta(v), lambda pos: np.diagflat(pos, k)),)


@vjp("append")
def _append(emit, g, out, arr, values, *, axis=None):
    M = Math(emit)
    cts, offset = [], 0
    for a in (arr, values):
        m = meta(a) if is_array(a) else ArrayMeta.of(np.asarray(a))
        if axis is None:
            piece = M("getitem", g, (slice(offset, offset + m.size),))
            offset += m.size
        else:
            ax = normalize_axis("append", axis, m.ndim)
            index = (slice(None),) * ax + (slice(offset, offset + m.shape[ax]),)
            piece = M("getitem", g, index)
            offset += m.shape[ax]
        cts.append(M.reshape(piece, m.shape) if is_array(a) else None)
    return tuple(cts)


@vjp("ediff1d")
def _ediff1d(emit, g, out, ary):
    M = Math(emit)
    am = meta(ary)
    ct = M.sub(M("pad", g, pad_width=((1, 0),)), M("pad", g, pad_width=((0, 1),)))
    return (M.reshape(ct, am.shape) if am.size > 1 else M.zeros(am.shape, meta(g).dtype),)


@vjp("diagonal")
def _diagonal(emit, g, out, a, *, offset=0, axis1=0, axis2=1):
    return (_picked(emit, g, meta(a), lambda pos: np.diagonal(pos, offset, axis1, axis2)),)


@vjp("trace")
def _trace(emit, g, out, a, *, offset=0, axis1=0, axis2=1, dtype=None):
    M = Math(emit)
    am = meta(a)
    diag_shape = REGISTRY["diagonal"].infer(am, offset=offset, axis1=axis1, axis2=axis2).shape
    spread = M.broadcast_to(M.reshape(g, diag_shape[:-1] + (1,)), diag_shape)
    return (_picked(emit, spread, am, lambda pos: np.diagonal(pos, offset, axis1, axis2)),)


@vjp("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(emit, g, out, a):
    return (Math(emit).reshape(g, meta(a).shape) if is_array(a) else None,)


def _stacking(name: str):
    def rule(emit, g, out, arrays, *, dtype=None):
        M = Math(emit)
        metas = _stacked_metas(name, [meta(a) if is_array(a) else a for a in arrays])
        axis = {"vstack": 0, "dstack": 2, "column_stack": 1}.get(
            name, 0 if metas[0].ndim == 1 else 1)
        cts, offset = [], 0
        for a, m in zip(arrays, metas):
            width = m.shape[axis]
            piece = M("getitem", g, (slice(None),) * axis + (slice(offset, offset + width),))
            offset += width
            cts.append(M.reshape(piece, meta(a).shape) if is_array(a) else None)
        return (tuple(cts),)

    return rule


for _name in ("hstack", "vstack", "dstack", "column_stack"):
    vjp(_name)(_stacking(_name))


# -- scans ----------------------------------------------------------------------------------


def _reverse_cumsum(emit, g, x, axis, include_initial=False):
    M = Math(emit)
    xm = meta(x)
    if axis is None or xm.ndim == 0:
        flat = M("flip", M("cumsum", M("flip", g, axis=0), axis=0), axis=0)
        if include_initial:
            flat = M("getitem", flat, (slice(1, None),))
        return M.reshape(flat, xm.shape)
    ax = normalize_axis("cumsum", axis, xm.ndim)
    ct = M("flip", M("cumsum", M("flip", g, axis=ax), axis=ax), axis=ax)
    if include_initial:
        ct = M("getitem", ct, (slice(None),) * ax + (slice(1, None),))
    return ct


@vjp("cumsum", "cumulative_sum")
def _cumsum(emit, g, out, a, *, axis=None, dtype=None, include_initial=False):
    return (_reverse_cumsum(emit, g, a, axis, include_initial),)


@vjp("nancumsum")
def _nancumsum(emit, g, out, a, *, axis=None, dtype=None, include_initial=False):
    M = Math(emit)
    return (M.where(M("isnan", a), 0.0, _reverse_cumsum(emit, g, a, axis)),)


@vjp("diff")
def _diff(emit, g, out, a, *, n=1, axis=-1, prepend=None, append=None):
    M = Math(emit)
    am = meta(a)
    ax = normalize_axis("diff", axis, am.ndim)
    widths = [(0, 0)] * am.ndim
    ct = g
    for _ in range(n):  # out[i] = y[i + 1] - y[i]
        before, after = list(widths), list(widths)
        before[ax], after[ax] = (1, 0), (0, 1)
        ct = M.sub(M("pad", ct, pad_width=tuple(before)), M("pad", ct, pad_width=tuple(after)))
    start = int(prepend is not None)
    index = (slice(None),) * ax + (slice(start, start + am.shape[ax]),)
    return (M("getitem", ct, index),)


# -- nan-aware reductions -------------------------------------------------------------------


@vjp("nansum")
def _nansum(emit, g, out, a, *, axis=None, dtype=None, keepdims=False):
    M = Math(emit)
    xm = meta(a)
    gk = M.broadcast_to(expand_reduced(emit, g, xm, reduced_axes(xm, axis)), xm.shape)
    return (M.where(M("isnan", a), 0.0, gk),)


@vjp("nanmean")
def _nanmean(emit, g, out, a, *, axis=None, dtype=None, keepdims=False):
    M = Math(emit)
    xm = meta(a)
    axes = reduced_axes(xm, axis)
    present = M("logical_not", M("isnan", a))
    count = M.astype(M("sum", present, axis=axes, keepdims=True), meta(g).dtype)
    gk = M.div(expand_reduced(emit, g, xm, axes), count)
    return (M.where(present, M.broadcast_to(gk, xm.shape), 0.0),)


def _nan_moment(std: bool):
    def rule(emit, g, out, a, *, axis=None, dtype=None, ddof=0, keepdims=False):
        M = Math(emit)
        xm = meta(a)
        axes = reduced_axes(xm, axis)
        present = M("logical_not", M("isnan", a))
        count = M.astype(M("sum", present, axis=axes, keepdims=True), meta(g).dtype)
        centered = M.sub(a, M("nanmean", a, axis=axes, keepdims=True))
        gk = expand_reduced(emit, g, xm, axes)
        scale = M.div(2.0, M.sub(count, float(ddof)))
        if std:  # d sqrt(v) = dv / (2 sqrt(v))
            scale = M.div(scale, M.mul(expand_reduced(emit, out, xm, axes), 2.0))
        return (M.where(present, M.mul(M.mul(gk, centered), scale), 0.0),)

    return rule


vjp("nanvar")(_nan_moment(False))
vjp("nanstd")(_nan_moment(True))

def _order_statistic(name: str):
    # The linear method interpolates between two sorted neighbours (virtual index q (n - 1)):
    # their weights go back to the elements' original positions through the inverse sort.
    def rule(emit, g, out, a, *, q=0.5, axis=None, keepdims=False):
        M = Math(emit)
        xm = meta(a)
        if not (axis is None or isinstance(axis, int)):
            raise GradError(f"np.{name} over several axes has no gradient rule")
        x = M.reshape(a, (xm.size,)) if axis is None else a
        ax = -1 if axis is None else normalize_axis(name, axis, xm.ndim)
        xs = meta(x)
        n = xs.shape[ax]
        qs = np.asarray(q, dtype=np.float64) / (100.0 if "percentile" in name else 1.0)
        weights = np.zeros(qs.shape + (n,))
        for pos in np.ndindex(qs.shape):
            vi = qs[pos] * (n - 1)
            lo = int(np.floor(vi))
            hi = min(lo + 1, n - 1)
            weights[pos + (lo,)] += 1.0 - (vi - lo)
            weights[pos + (hi,)] += vi - lo
        # g: q's axes first, then the reduced result (keepdims or not)
        rest = tuple(d for i, d in enumerate(xs.shape) if i != ax % xs.ndim)
        gq = M.reshape(g, qs.shape + rest[: ax % xs.ndim] + (1,) + rest[ax % xs.ndim:])
        w = weights.reshape(qs.shape + (1,) * (ax % xs.ndim) + (n,)
                            + (1,) * (xs.ndim - 1 - ax % xs.ndim))
        sorted_ct = M.mul(gq, w)
        if qs.ndim:
            sorted_ct = M("sum", sorted_ct, axis=tuple(range(qs.ndim)))
        inverse = M("argsort", M("argsort", x, axis=ax, stable=True), axis=ax)
        ct = M("take_along_axis", sorted_ct, inverse, axis=ax)
        return (M.reshape(ct, xm.shape),)

    return rule


for _name in ("median", "percentile", "quantile"):
    vjp(_name)(_order_statistic(_name))

for _name, _plain in (("nanmax", "max"), ("nanmin", "min"), ("average", "mean")):
    vjp(_name)(RULES[_plain])


@vjp("ptp")
def _ptp(emit, g, out, a, *, axis=None, keepdims=False):
    M = Math(emit)
    hi = M("max", a, axis=axis, keepdims=keepdims)
    lo = M("min", a, axis=axis, keepdims=keepdims)
    (ct_hi,) = RULES["max"](emit, g, hi, a, axis=axis, keepdims=keepdims)
    (ct_lo,) = RULES["min"](emit, g, lo, a, axis=axis, keepdims=keepdims)
    return (M.sub(ct_hi, ct_lo),)
