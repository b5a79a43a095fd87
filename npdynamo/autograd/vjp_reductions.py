"""VJP rules of the reductions: sum, mean, prod, max, min, var, std (any axis, keepdims).

The cotangent of a reduction gets its reduced axes back (``expand_reduced``) and is broadcast
over them. ``max``/``min`` split the cotangent equally among the elements tied for the extremum,
the way JAX does, so the gradient of ``max`` of a constant array is uniform. ``prod`` handles
zeros exactly (no division by zero).
"""

from __future__ import annotations

from typing import Any

from npdynamo.autograd.emitting import Emit, meta
from npdynamo.autograd.vjp_helpers import (
    Math,
    expand_reduced,
    reduced_axes,
    reduced_size,
)
from npdynamo.autograd.vjp_registry import vjp


def _setup(emit: Emit, x: Any, axis: Any) -> tuple:
    """What every reduction rule starts from: the emitter's math, x's meta, the reduced axes."""
    xm = meta(x)
    return Math(emit), xm, reduced_axes(xm, axis)


@vjp("sum")
def _sum(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None, dtype: Any = None,
         keepdims: bool = False) -> tuple:
    xm = meta(x)
    gk = expand_reduced(emit, g, xm, reduced_axes(xm, axis))
    return (Math(emit).broadcast_to(gk, xm.shape),)


@vjp("mean")
def _mean(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None, dtype: Any = None,
          keepdims: bool = False) -> tuple:
    M, xm, axes = _setup(emit, x, axis)
    gk = M.div(expand_reduced(emit, g, xm, axes), reduced_size(xm, axes))
    return (M.broadcast_to(gk, xm.shape),)


@vjp("prod")
def _prod(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None, dtype: Any = None,
          keepdims: bool = False) -> tuple:
    # d prod / d x_i is the product of the other elements: out / x_i when no element is zero;
    # with exactly one zero, only that element gets the product of the rest; with two, none.
    M, xm, axes = _setup(emit, x, axis)
    if not axes:
        return (g,)
    gk = expand_reduced(emit, g, xm, axes)
    outk = expand_reduced(emit, out, xm, axes)
    is_zero = M("equal", x, 0)
    zeros = M("sum", is_zero, axis=axes, keepdims=True)
    safe = M.where(is_zero, 1.0, x)
    rest = M("prod", safe, axis=axes, keepdims=True)
    lone_zero = M("logical_and", is_zero, M("equal", zeros, 1))
    others = M.where(M("equal", zeros, 0), M.div(outk, safe), M.where(lone_zero, rest, 0.0))
    return (M.mul(gk, others),)


def _extremum(name: str):
    def rule(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None,
             keepdims: bool = False) -> tuple:
        M, xm, axes = _setup(emit, x, axis)
        if not axes:
            return (g,)
        gk = expand_reduced(emit, g, xm, axes)
        hit = M("equal", x, expand_reduced(emit, out, xm, axes))
        count = M("sum", hit, axis=axes, keepdims=True)
        share = M.div(gk, M.astype(count, meta(g).dtype))
        return (M.where(hit, share, 0.0),)

    vjp(name)(rule)


_extremum("max")
_extremum("min")


def _centered(emit: Emit, x: Any, axes: tuple[int, ...]) -> Any:
    M = Math(emit)
    return M.sub(x, M("mean", x, axis=axes, keepdims=True)) if axes else M.mul(x, 0.0)


@vjp("var")
def _var(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None, dtype: Any = None,
         ddof: Any = 0, keepdims: bool = False) -> tuple:
    M, xm, axes = _setup(emit, x, axis)
    gk = expand_reduced(emit, g, xm, axes)
    scale = 2.0 / (reduced_size(xm, axes) - ddof)
    return (M.mul(M.mul(gk, _centered(emit, x, axes)), scale),)


@vjp("std")
def _std(emit: Emit, g: Any, out: Any, x: Any, *, axis: Any = None, dtype: Any = None,
         ddof: Any = 0, keepdims: bool = False) -> tuple:
    M, xm, axes = _setup(emit, x, axis)
    gk = expand_reduced(emit, g, xm, axes)
    outk = expand_reduced(emit, out, xm, axes)
    denominator = M.mul(outk, float(reduced_size(xm, axes) - ddof))
    return (M.div(M.mul(gk, _centered(emit, x, axes)), denominator),)
