"""Handles and emitters: the two-faced values VJP rules compute with.

A VJP rule never calls NumPy directly. It calls ``emit(op, *args, **kwargs)`` with canonical
ops and gets back a *handle*: a concrete array when the tape runs the rule eagerly, an fx
``Node`` when reverse mode builds a joint graph. ``meta(handle)`` gives its shape and dtype in
both cases, so one rule serves the dynamic and the static graph.

Rules run against a ``LazyEmitter``: every emitted op becomes a ``Deferred`` record, and the
driver (``backprop_step``) materialises only the cotangents an input actually needs. That is how
``x @ w`` with only ``w`` tracked computes one matmul in the backward, not two, and how reverse
mode emits nothing for inputs off the differentiated path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from npdynamo.errors import GradError
from npdynamo.fx.node import Node
from npdynamo.ops import REGISTRY, ArrayMeta, Op
from npdynamo.ops.symbolic import hint_of
from npdynamo.ops.symbolic_code import same_shape

Emit = Callable[..., Any]

_PY_SCALARS = (bool, int, float, complex)
_PY_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
              complex: np.dtype(np.complex128)}


class Deferred:
    """An op a rule asked for but that has not run yet; ``value`` is set once materialised."""

    __slots__ = ("op", "args", "kwargs", "_meta", "value")

    def __init__(self, op: Op, args: tuple, kwargs: dict) -> None:
        self.op = op
        self.args = args
        self.kwargs = kwargs
        self._meta: ArrayMeta | None = None
        self.value: Any = _UNSET

    @property
    def meta(self) -> ArrayMeta:
        if self._meta is None:
            inferred = self.op.infer(*map_handles(self.args, meta), **self.kwargs)
            if not isinstance(inferred, ArrayMeta):
                raise GradError(f"a VJP rule emitted {self.op!r}, which has several results")
            self._meta = inferred
        return self._meta

    def __repr__(self) -> str:
        return f"Deferred({self.op.name})"


_UNSET: Any = object()


def is_array(h: object) -> bool:
    """Whether ``h`` is an array handle (as opposed to a Python number, None, a string...)."""
    return isinstance(h, (np.ndarray, np.generic, Node, Deferred)) or hasattr(h, "__array_ufunc__")


def meta(h: object) -> ArrayMeta:
    """Shape and dtype of a handle: concrete arrays, fx nodes, deferred ops, Python numbers."""
    if isinstance(h, Deferred):
        return h.meta
    if isinstance(h, Node):
        val = h.meta.get("val")
        if isinstance(val, tuple) and all(isinstance(v, ArrayMeta) for v in val):
            return val  # type: ignore[return-value]  # an op with several results: its rule
            #             reads them through tuple_item
        if not isinstance(val, ArrayMeta):
            raise GradError(f"graph value {h.name} has no array meta (meta['val'] = {val!r})")
        return val
    if isinstance(h, (np.ndarray, np.generic)):
        return ArrayMeta.of(h)
    if type(h) in _PY_DTYPES:
        return ArrayMeta((), _PY_DTYPES[type(h)], scalar=True)
    inner = getattr(h, "value", None)  # a tape tracer of an enclosing grad
    if inner is not None and hasattr(h, "__array_ufunc__"):
        return meta(inner)
    raise TypeError(f"not an array handle: {type(h).__name__}")


def map_handles(a: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every array handle inside tuples, lists and slices of ``a``."""
    if isinstance(a, (tuple, list)):
        items = [map_handles(x, fn) for x in a]
        # a named tuple (np.linalg's results) becomes a plain one: rules index it
        return tuple(items) if hasattr(a, "_fields") else type(a)(items)
    if isinstance(a, slice):
        return slice(map_handles(a.start, fn), map_handles(a.stop, fn), map_handles(a.step, fn))
    if is_array(a):
        return fn(a)
    return a


class LazyEmitter:
    """The ``emit`` a rule receives: records ops as ``Deferred``; folds Python-number math.

    Arithmetic on Python numbers alone (``y - 1`` for a constant exponent) is done at once and
    stays a Python number, so NumPy's weak scalar typing keeps the cotangent in the input's
    dtype. Everything else, array creation included, becomes a node of the backward.
    """

    def __call__(self, op: Op, *args: Any, **kwargs: Any) -> Any:
        if args and all(type(a) in _PY_SCALARS for a in args) and not kwargs:
            result = op.impl(*args)
            return result.item() if isinstance(result, np.generic) else result
        return Deferred(op, args, kwargs)


def materialise(h: Any, emit: Emit) -> Any:
    """Run the deferred ops ``h`` depends on through the real ``emit``; returns a handle."""
    if not isinstance(h, Deferred):
        return map_handles(h, lambda x: materialise(x, emit)) if isinstance(h, (tuple, list)) else h
    if h.value is _UNSET:
        args = map_handles(h.args, lambda x: materialise(x, emit))
        kwargs = {k: map_handles(v, lambda x: materialise(x, emit)) for k, v in h.kwargs.items()}
        h.value = emit(h.op, *args, **kwargs)
    return h.value


def backprop_step(
    op: Op,
    g: Any,
    out: Any,
    args: Sequence[Any],
    kwargs: dict,
    keys: Sequence[Any],
    emit: Emit,
) -> Iterator[tuple[Any, Any]]:
    """Run ``op``'s VJP rule for one recorded call; yields (key, materialised cotangent).

    ``keys`` mirrors ``args``: the key of an input that wants a gradient (a tape variable, an
    fx node), else None. Only those inputs' cotangents are materialised through ``emit``, and
    each comes back in the input's dtype.
    """
    rule = op.vjp
    if rule is None:
        raise GradError(f"{op!r} has no VJP rule, so no gradient can flow through it")
    cotangents = rule(LazyEmitter(), g, out, *args, **kwargs)
    if not isinstance(cotangents, tuple) or len(cotangents) != len(args):
        raise GradError(
            f"the VJP rule of {op!r} returned {cotangents!r}; expected a tuple of {len(args)}"
        )
    for (key, value), ct in zip(_keyed(keys, args), _leaves_of(keys, cotangents)):
        if key is None or ct is None:
            continue
        ct = materialise(ct, emit)
        want, got = meta(value), meta(ct)
        if not same_shape(got.shape, want.shape) and \
                tuple(map(hint_of, got.shape)) != tuple(map(hint_of, want.shape)):
            raise GradError(
                f"internal error: the VJP rule of {op!r} gave a cotangent of shape {got.shape} "
                f"for an input of shape {want.shape}"
            )
        if got.dtype != want.dtype and want.dtype.kind in "fc":
            ct = emit(REGISTRY["astype"], ct, dtype=want.dtype)
        yield key, ct


def _keyed(keys: Any, args: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(keys, (tuple, list)):
        for k, a in zip(keys, args):
            yield from _keyed(k, a)
    else:
        yield keys, args


def _leaves_of(keys: Any, cts: Any) -> Iterator[Any]:
    """The cotangents aligned with ``_keyed``'s leaves (None where a sequence got None)."""
    if isinstance(keys, (tuple, list)):
        if cts is not None and (not isinstance(cts, (tuple, list)) or len(cts) != len(keys)):
            raise GradError(f"a VJP rule returned {cts!r} for a sequence of {len(keys)} inputs")
        for i, k in enumerate(keys):
            yield from _leaves_of(k, None if cts is None else cts[i])
    else:
        yield cts
