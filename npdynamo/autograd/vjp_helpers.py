"""Shared vocabulary of the VJP rules: arithmetic through ``emit`` and broadcast bookkeeping.

Rules are written against ``M = Math(emit)`` (``M.mul(g, x)``, ``M.where(c, g, 0.0)``...) so
they read like the formulas they implement while every operation still goes through ``emit``.
``unbroadcast`` sums a cotangent back to the shape of an input that NumPy broadcast;
``expand_reduced`` gives a reduction's cotangent back its reduced axes.
"""

from __future__ import annotations

from typing import Any

from npdynamo.autograd.emitting import Emit, meta
from npdynamo.ops import REGISTRY, ArrayMeta
from npdynamo.ops.rules import normalize_axes, product
from npdynamo.ops.symbolic_code import is_one, same_shape

OPS = REGISTRY


class Math:
    """Thin named wrappers over ``emit`` for the ops rules use most."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.emit(OPS[name], *args, **kwargs)

    def add(self, a: Any, b: Any) -> Any:
        return self("add", a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self("subtract", a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self("multiply", a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self("divide", a, b)

    def neg(self, a: Any) -> Any:
        return self("negative", a)

    def square(self, a: Any) -> Any:
        return self("square", a)

    def sqrt(self, a: Any) -> Any:
        return self("sqrt", a)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        return self("where", cond, a, b)

    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        if same_shape(meta(a).shape, tuple(shape)):
            return a
        return self("reshape", a, shape=tuple(shape))

    def broadcast_to(self, a: Any, shape: tuple[int, ...]) -> Any:
        if same_shape(meta(a).shape, tuple(shape)):
            return a
        return self("broadcast_to", a, shape=tuple(shape))

    def astype(self, a: Any, dtype: Any) -> Any:
        if meta(a).dtype == dtype:
            return a
        return self("astype", a, dtype=dtype)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self("zeros", shape=tuple(shape), dtype=dtype)


def unbroadcast(emit: Emit, ct: Any, target: ArrayMeta) -> Any:
    """``ct`` summed over the axes NumPy broadcast ``target`` along, reshaped to its shape.

    Shapes compare structurally (symbolic sizes: a symbol is never 1; two different
    expressions get a reshape, a no-op where the guards make them equal)."""
    shape = meta(ct).shape
    if same_shape(shape, target.shape):
        return ct
    lead = len(shape) - len(target.shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target.shape) if is_one(d) and not is_one(shape[lead + i])
    )
    if axes:
        ct = emit(OPS["sum"], ct, axis=axes)
        shape = tuple(d for i, d in enumerate(shape) if i not in axes)
    if not same_shape(shape, target.shape):
        ct = emit(OPS["reshape"], ct, shape=target.shape)
    return ct


def reduced_axes(x: ArrayMeta, axis: Any) -> tuple[int, ...]:
    """The axes a reduction with this canonical ``axis`` reduces (all for None)."""
    if x.ndim == 0:
        return ()
    return tuple(normalize_axes("reduction", axis, x.ndim, legacy_0d=True))


def keepdims_shape(x: ArrayMeta, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


def expand_reduced(emit: Emit, g: Any, x: ArrayMeta, axes: tuple[int, ...]) -> Any:
    """A reduction's result (or cotangent) reshaped so it broadcasts against the input."""
    return Math(emit).reshape(g, keepdims_shape(x, axes))


def reduced_size(x: ArrayMeta, axes: tuple[int, ...]) -> int:
    return product(x.shape[i] for i in axes)
