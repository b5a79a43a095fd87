"""NumPy functions that return several arrays built from existing ops: the split family,
``np.meshgrid`` and ``np.broadcast_arrays``.

A binder here returns a ``Composite`` instead of one ``(op, args, kwargs)``: the capture stage
calls its ``build`` with a ``Builder`` that records each op as a graph node (and the views among
them, as for a single call) and collects the pieces into the list or tuple NumPy returns. The
pieces are exactly the arrays NumPy makes: ``np.split`` gives basic-index views of its operand,
``np.broadcast_arrays`` gives the operand itself where its shape already matches and a writeable
broadcast view elsewhere, ``np.meshgrid`` copies unless ``copy=False``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.shape_ops import _broadcast_to_rule


class Builder(Protocol):
    """What a composite needs from the stage that records it."""

    def call(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """Record ``op(*args, **kwargs)``; returns the tracked result."""

    def shape(self, value: Any) -> tuple[int, ...]:
        """The concrete shape of a tracked array (a symbolic size is specialised)."""

    def meta(self, value: Any) -> ArrayMeta:
        """The meta of a tracked array."""

    def write(self, target: Any, value: Any) -> None:
        """``target`` (a tracked array from the call's arguments) now holds ``value``'s data,
        as after an in-place NumPy call: written back to the caller's array."""


@dataclass(frozen=True)
class Composite:
    """A NumPy call made of several ops; ``build(builder)`` returns the list or tuple NumPy
    returns, holding tracked values, one tracked array (``np.array`` of nested lists), or None
    (a function that writes into its argument)."""

    name: str
    build: Callable[[Builder], list | tuple | None]


def _as_array(b: Builder, name: str, x: object) -> Any:
    """``np.asanyarray(x)``: arrays unchanged, constants through the ``asarray`` op."""
    if C.is_array_value(x) and not isinstance(x, (np.generic, np.dtype)):
        return x
    return b.call(REGISTRY["asarray"], (C.operand(name, x),), {})


# -- the split family ------------------------------------------------------------------------
def _split(name: str, ary: object, indices_or_sections: object, axis: object,
           equal: bool) -> Composite:
    if not C.is_array_value(ary) or isinstance(ary, np.generic):
        raise UnsupportedArguments(f"{name}: splitting a Python sequence is not captured")
    C.static(name, "indices_or_sections", indices_or_sections)
    axis = C.static(name, "axis", axis)

    def build(b: Builder) -> list:
        shape = b.shape(ary)
        total = shape[axis]  # NumPy reads ary.shape[axis] first: same IndexError
        if isinstance(indices_or_sections, (list, tuple, range)):
            count = len(indices_or_sections) + 1
            points = [0, *indices_or_sections, total]
        else:
            if equal and total % indices_or_sections:
                raise ValueError("array split does not result in an equal division")
            count = int(indices_or_sections)  # type: ignore[call-overload]
            if count <= 0:
                raise ValueError("number sections must be larger than 0.")
            each, extras = divmod(total, count)
            sizes = [0] + extras * [each + 1] + (count - extras) * [each]
            points = [int(p) for p in np.cumsum(sizes)]
        ax = axis + len(shape) if axis < 0 else axis
        if not 0 <= ax < len(shape):
            raise np.exceptions.AxisError(axis, len(shape))
        getitem = REGISTRY["getitem"]
        lead = (slice(None),) * ax
        return [
            b.call(getitem, (ary, C.index(name, (*lead, slice(points[i], points[i + 1])))), {})
            for i in range(count)
        ]

    return Composite(name, build)


@functions("array_split")
def _array_split_binder(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


@functions("split")
def _split_binder(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, equal=True)


def _hvd_split(name: str, min_ndim: int, axis_of: Callable[[int], int]):
    def binder(ary, indices_or_sections):
        if not C.is_array_value(ary) or isinstance(ary, np.generic):
            raise UnsupportedArguments(f"{name}: splitting a Python sequence is not captured")

        def build(b: Builder) -> list:
            ndim = len(b.shape(ary))
            if ndim < min_ndim:
                raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
            return _split(name, ary, indices_or_sections, axis_of(ndim), True).build(b)

        return Composite(name, build)

    return binder


functions("hsplit")(_hvd_split("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0))
functions("vsplit")(_hvd_split("vsplit", 2, lambda ndim: 0))
functions("dsplit")(_hvd_split("dsplit", 3, lambda ndim: 2))


# -- broadcast_arrays ------------------------------------------------------------------------
def _broadcast_view(array: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    # np.broadcast_arrays' own views: writeable (NumPy warns on a write), unlike broadcast_to's
    target = np.broadcast_to(array, shape)  # broadcast_to's checks and errors
    return np.broadcast_arrays(array, np.broadcast_to(np.zeros((), np.int8), target.shape))[0]


register(Op("broadcast_view", _broadcast_view, _broadcast_to_rule, defaults={"shape": REQUIRED},
            view=True))


def _broadcast_all(b: Builder, name: str, arrays: list) -> tuple:
    metas = [b.meta(a) for a in arrays]
    # NumPy's own shape logic and error text, on zero-stride stand-ins (nothing is allocated)
    dummies = [np.broadcast_to(np.zeros((), m.dtype), b.shape(a)) for a, m in zip(arrays, metas)]
    shape = np.broadcast_arrays(*dummies)[0].shape if dummies else ()
    view = REGISTRY["broadcast_view"]
    return tuple(a if b.shape(a) == shape else b.call(view, (a,), {"shape": shape})
                 for a in arrays)


@functions("broadcast_arrays")
def _broadcast_arrays_binder(*args, subok=False):
    C.static("broadcast_arrays", "subok", subok)

    def build(b: Builder) -> tuple:
        return _broadcast_all(b, "broadcast_arrays",
                              [_as_array(b, "broadcast_arrays", a) for a in args])

    return Composite("broadcast_arrays", build)


# -- meshgrid --------------------------------------------------------------------------------
@functions("meshgrid")
def _meshgrid_binder(*xi, copy=True, sparse=False, indexing="xy"):
    for param, value in (("copy", copy), ("sparse", sparse), ("indexing", indexing)):
        C.static("meshgrid", param, value)

    def build(b: Builder) -> list | tuple:
        ndim = len(xi)
        if indexing not in ["xy", "ij"]:
            raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
        ones = (1,) * ndim
        shapes = [ones[:i] + (-1,) + ones[i + 1:] for i in range(ndim)]
        if indexing == "xy" and ndim > 1:
            shapes[0], shapes[1] = (1, -1) + ones[2:], (-1, 1) + ones[2:]
        reshape = REGISTRY["reshape"]
        output: list | tuple = [
            b.call(reshape, (_as_array(b, "meshgrid", x),), {"shape": s})
            for x, s in zip(xi, shapes)
        ]
        if not sparse:
            output = _broadcast_all(b, "meshgrid", list(output))
        if copy:
            output = tuple(b.call(REGISTRY["copy"], (x,), {}) for x in output)
        return output

    return Composite("meshgrid", build)


# -- np.array of nested lists holding graph values -------------------------------------------
def nested_array(name: str, items: list | tuple) -> Composite:
    """``np.array([[a, b], [c, d]])`` whose leaves are graph values (0-d arrays, NumPy scalars,
    Python floats the graph computes) and numbers: one ``stack`` of every leaf, in order, then
    a reshape to the lists' shape. NumPy discovers the dtype by promoting the leaves' dtypes one
    by one, which ``stack``'s result type equals for the dtypes checked here; ragged lists or
    leaves of different shapes (NumPy raises its own error) are left to NumPy."""
    outer: list[int] = []
    leaves: list = []
    leaf_depth: list[int] = []

    def walk(node: object, depth: int) -> None:
        if isinstance(node, (list, tuple)):
            if leaf_depth and depth >= leaf_depth[0]:
                raise UnsupportedArguments(f"{name}: nested lists of different depths")
            if depth == len(outer):
                outer.append(len(node))
            elif outer[depth] != len(node):
                raise UnsupportedArguments(f"{name}: nested lists of different lengths")
            for item in node:
                walk(item, depth + 1)
            return
        if not leaf_depth:
            leaf_depth.append(depth)
        if depth != leaf_depth[0] or depth != len(outer):
            raise UnsupportedArguments(f"{name}: nested lists of different depths")
        leaves.append(node)

    walk(list(items), 0)
    if not leaves or 0 in outer:
        raise UnsupportedArguments(f"{name}: an empty nested list")

    def build(b: Builder) -> Any:
        arrays = [_as_array(b, name, leaf) for leaf in leaves]
        metas = [b.meta(a) for a in arrays]
        shape = metas[0].shape
        if any(m.shape != shape for m in metas):
            raise UnsupportedArguments(f"{name}: nested items of different shapes")
        dtype = metas[0].dtype
        for m in metas[1:]:  # np.array's discovery: promoted one by one, in order
            dtype = np.promote_types(dtype, m.dtype)
        if dtype != np.result_type(*(m.dtype for m in metas)):
            raise UnsupportedArguments(f"{name}: leaves whose promotion depends on the order")
        flat = b.call(REGISTRY["stack"], (tuple(arrays),), {})
        return b.call(REGISTRY["reshape"], (flat,), {"shape": (*outer, *shape)})

    return Composite(name, build)
