"""Reduction ops (sum, mean, max, argmax, var, any, ...) and their shape/dtype rules.

The numba backend turns ``kind="reduction"`` ops into loops over the reduced axes. Rules mirror
NumPy's accumulator dtypes (small ints sum as int64, ints average as float64, complex variance
is real), its axis checks, and its refusal to reduce an empty selection without an identity.
A reduction whose result is 0-d returns a NumPy scalar.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import Op, register
from npdynamo.ops.rules import (
    normalize_axes,
    normalize_axis,
    output_casting_error,
    product,
    to_meta,
)

AxisArg = int | tuple[int, ...] | None

_AXIS_KEEPDIMS = {"axis": None, "keepdims": False}
_WITH_DTYPE = {"axis": None, "dtype": None, "keepdims": False}
_WITH_DDOF = {"axis": None, "dtype": None, "ddof": 0, "keepdims": False}


def _reduced_shape(
    name: str, meta: ArrayMeta, axis: AxisArg, keepdims: bool, *, legacy_0d: bool
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(result shape, reduced axes)."""
    axes = normalize_axes(name, axis, meta.ndim, legacy_0d=legacy_0d)
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(meta.shape))
    else:
        shape = tuple(d for i, d in enumerate(meta.shape) if i not in axes)
    return shape, axes


def _result(shape: tuple[int, ...], dtype: np.dtype) -> ArrayMeta:
    return ArrayMeta(shape, dtype, scalar=shape == ())


def _sum_dtype(dt: np.dtype) -> np.dtype:
    # Small integer kinds accumulate in the platform integer, as np.add.reduce does.
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < np.dtype(np.int_).itemsize):
        return np.dtype(np.int_)
    if dt.kind == "u" and dt.itemsize < np.dtype(np.uint).itemsize:
        return np.dtype(np.uint)
    return dt


def _mean_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt.kind in "biu" else dt  # float16 averages back to float16


def _var_dtype(dt: np.dtype, dtype: np.dtype | None) -> np.dtype:
    # np.var subtracts the mean (accumulated in `dtype`, float64 for ints) from the data, squares
    # the deviations (as reals for complex data) and sums them in `dtype`.
    if dtype is None and dt.kind in "biu":
        dtype = np.dtype(np.float64)
    mean_dtype = dtype if dtype is not None else _sum_dtype(dt)
    deviation = np.subtract.resolve_dtypes((dt, mean_dtype, None))[-1]
    if dtype is not None:
        return dtype
    return np.finfo(deviation).dtype if deviation.kind == "c" else deviation


def _accumulating_rule(name: str, result_dtype: Callable[[np.dtype], np.dtype], legacy: bool):
    def rule(a: object, *, axis: AxisArg = None, dtype: np.dtype | None = None,
             keepdims: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        shape, _ = _reduced_shape(name, meta, axis, keepdims, legacy_0d=legacy)
        return _result(shape, dtype if dtype is not None else result_dtype(meta.dtype))

    return rule


def _extremum_rule(name: str, ufunc_name: str):
    def rule(a: object, *, axis: AxisArg = None, keepdims: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        shape, axes = _reduced_shape(name, meta, axis, keepdims, legacy_0d=True)
        if product(meta.shape[i] for i in axes) == 0:
            raise ValueError(
                f"{name}: zero-size array to reduction operation {ufunc_name} which has no "
                "identity"
            )
        return _result(shape, meta.dtype)

    return rule


def _logical_rule(name: str):
    def rule(a: object, *, axis: AxisArg = None, keepdims: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        shape, _ = _reduced_shape(name, meta, axis, keepdims, legacy_0d=True)
        return _result(shape, np.dtype(bool))

    return rule


def _moment_rule(name: str):
    def rule(a: object, *, axis: AxisArg = None, dtype: np.dtype | None = None,
             ddof: float = 0, keepdims: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        shape, _ = _reduced_shape(name, meta, axis, keepdims, legacy_0d=False)
        out = _result(shape, _var_dtype(meta.dtype, dtype))
        if name.endswith("std") and not out.scalar:
            # np.std takes the square root in place, into the variance array.
            root = np.sqrt.resolve_dtypes((out.dtype, None))[-1]
            if not np.can_cast(root, out.dtype, casting="same_kind"):
                raise output_casting_error("sqrt", root, out.dtype)
        return out

    return rule


def _arg_rule(name: str):
    def rule(a: object, *, axis: int | None = None, keepdims: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        if axis is None:
            empty = meta.size == 0
            shape = (1,) * meta.ndim if keepdims else ()
        else:
            # A 0-d array is searched as if it were 1-d of length 1.
            ax = normalize_axis(name, axis, max(meta.ndim, 1))
            empty = meta.ndim > 0 and meta.shape[ax] == 0
            if meta.ndim == 0:
                shape = ()
            elif keepdims:
                shape = tuple(1 if i == ax else d for i, d in enumerate(meta.shape))
            else:
                shape = meta.shape[:ax] + meta.shape[ax + 1 :]
        if empty:
            raise ValueError(f"{name}: attempt to get {name} of an empty sequence")
        return _result(shape, np.dtype(np.intp))

    return rule


#: Reductions whose NumPy function only forwards to one ufunc's ``reduce``: the graph calls that
#: directly (``np.max`` costs three Python frames, ~0.6 us, before the C loop starts). Canonical
#: kwargs omit ``axis=None``, and ``reduce`` defaults to ``axis=0``, hence the bound keyword;
#: ``any``/``all`` reduce in bool, as NumPy's methods do.
_UFUNC_REDUCE = {
    "sum": partial(np.add.reduce, axis=None),
    "prod": partial(np.multiply.reduce, axis=None),
    "max": partial(np.maximum.reduce, axis=None),
    "min": partial(np.minimum.reduce, axis=None),
    "any": partial(np.logical_or.reduce, axis=None, dtype=bool),
    "all": partial(np.logical_and.reduce, axis=None, dtype=bool),
}


def _by_method(name: str):
    """``np.<name>(a, **kw)`` as the method call it forwards to for NumPy values: the same
    result, without the function's Python wrapper frames (about a microsecond, which counts in
    small graphs). Anything else goes through the NumPy function."""
    function = getattr(np, name)

    def impl(a, **kwargs):
        if isinstance(a, (np.ndarray, np.generic)):
            return getattr(a, name)(**kwargs)
        return function(a, **kwargs)

    impl.__name__ = name
    return impl


_FLOAT32_64 = (np.dtype(np.float32), np.dtype(np.float64))


def _mean_impl():
    """``np.mean`` as NumPy's own ``_mean`` computes it for a non-empty float32/float64 ndarray
    (the sum, then a division by the item count as an ``intp``, into the sum's own array), with
    none of its Python-level bookkeeping: a few microseconds per call, most of a small mean.
    Anything else goes through the method."""
    method = _by_method("mean")
    add_reduce, true_divide, intp = np.add.reduce, np.true_divide, np.intp

    def mean(a, axis=None, keepdims=False, **kwargs):
        if kwargs or type(a) is not np.ndarray or a.dtype not in _FLOAT32_64 or not a.size:
            return method(a, axis=axis, keepdims=keepdims, **kwargs)
        total = add_reduce(a, axis, None, None, keepdims)
        if type(total) is np.ndarray:
            return true_divide(total, intp(a.size // total.size), out=total, casting="unsafe",
                               subok=False)
        return total.dtype.type(total / intp(a.size))

    mean.__name__ = "mean"
    return mean


def _reg(name: str, rule, defaults: dict, *, differentiable: bool = True, quiet: bool = False,
         nonnegative: str | None = None) -> Op:
    impl = _UFUNC_REDUCE.get(name) or (_mean_impl() if name == "mean" else _by_method(name))
    return register(
        Op(name, impl, rule, kind="reduction", differentiable=differentiable,
           defaults=defaults, quiet=quiet, nonnegative=nonnegative)
    )


# Registered by name only: module globals called sum/max/min/any/all would shadow builtins.
# (quiet: only floating-point errors on an array of a known rank; max and min raise on an empty
# axis, which a symbolic size may become)
_reg("sum", _accumulating_rule("sum", _sum_dtype, True), _WITH_DTYPE, quiet=True,
     nonnegative="operands")
_reg("prod", _accumulating_rule("prod", _sum_dtype, True), _WITH_DTYPE, quiet=True)
_reg("mean", _accumulating_rule("mean", _mean_dtype, False), _WITH_DTYPE, quiet=True,
     nonnegative="operands")
_reg("max", _extremum_rule("max", "maximum"), _AXIS_KEEPDIMS, nonnegative="operands")
_reg("min", _extremum_rule("min", "minimum"), _AXIS_KEEPDIMS, nonnegative="operands")
_reg("any", _logical_rule("any"), _AXIS_KEEPDIMS, differentiable=False)
_reg("all", _logical_rule("all"), _AXIS_KEEPDIMS, differentiable=False)
_reg("var", _moment_rule("var"), _WITH_DDOF)
_reg("std", _moment_rule("std"), _WITH_DDOF)
_reg("argmax", _arg_rule("argmax"), _AXIS_KEEPDIMS, differentiable=False)
_reg("argmin", _arg_rule("argmin"), _AXIS_KEEPDIMS, differentiable=False)
