"""Statistics ops: nan-ignoring reductions, median/percentile/quantile, average, count_nonzero,
ptp, cov and corrcoef, with their binders.

The nan-reductions share the rules of their plain counterparts (``reductions``); the order
statistics compute in the mean's dtype and put ``q``'s shape first. All run as NumPy calls
inside the graph.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions, keepdims_flag
from npdynamo.ops.canonical import NO_VALUE as NO
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.reductions import (
    _WITH_DDOF,
    _WITH_DTYPE,
    _accumulating_rule,
    _arg_rule,
    _extremum_rule,
    _mean_dtype,
    _moment_rule,
    _reduced_shape,
    _sum_dtype,
)
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments, register
from npdynamo.ops.rules import is_py_scalar, to_meta

_F64 = np.dtype(np.float64)
_AXIS_KEEPDIMS = {"axis": None, "keepdims": False}
_QUANTILE = {"q": 0.5, "axis": None, "keepdims": False}
_ORDER_STATS = ("median", "nanmedian", "percentile", "quantile", "nanpercentile", "nanquantile")
# nanprod, cov, corrcoef and the nan order statistics are differentiable in principle but have
# no VJP rule yet (``differentiable=False``: npdynamo.grad raises GradError)
_ORDER_STATS_WITH_VJP = ("median", "percentile", "quantile")


def _plain(name: str, a: object) -> ArrayMeta:
    """The meta of an operand that is neither 0-d nor empty (NumPy's corners there vary)."""
    meta = to_meta(name, a)
    if meta.ndim == 0 or meta.size == 0:
        raise UnsupportedArguments(f"{name} of a 0-d or empty array")
    return meta


def _inexact_dtype(name: str, meta: ArrayMeta, dtype: np.dtype | None) -> None:
    if dtype is not None and meta.dtype.kind in "fc" and dtype.kind not in "fc":
        raise TypeError(f"{name}: If a is inexact, then dtype must be inexact")


def _order_rule(name: str):
    def rule(a: object, *, q: object = 0.5, axis: object = None,
             keepdims: bool = False) -> ArrayMeta:
        meta = _plain(name, a)
        if meta.dtype.kind == "b" and "median" not in name:
            raise UnsupportedArguments(f"{name} of booleans")
        if "median" not in name and meta.dtype.kind in "bc":
            raise TypeError(f"{name}: a must be an array of real numbers")
        dtype = _mean_dtype(meta.dtype)
        if "median" in name:
            shape, _ = _reduced_shape(name, meta, axis, keepdims, legacy_0d=False)
            return ArrayMeta(shape, dtype, scalar=shape == ())
        if np.asarray(q).dtype.kind != "f":
            # integer q: NumPy's result dtype then depends on the method's arithmetic
            raise UnsupportedArguments(f"{name}: q must be given as floats")
        top = 100 if "percentile" in name else 1
        qs = np.asarray(q, dtype=np.float64)
        if not ((qs >= 0) & (qs <= top)).all():  # NumPy checks q before the axis
            what = "Percentiles" if top == 100 else "Quantiles"
            raise ValueError(f"{name}: {what} must be in the range [0, {top}]")
        shape, _ = _reduced_shape(name, meta, axis, keepdims, legacy_0d=False)
        dtype = np.result_type(dtype, q if is_py_scalar(q) else np.asarray(q).dtype)
        shape = qs.shape + shape
        return ArrayMeta(shape, dtype, scalar=shape == ())

    return rule


def _count_nonzero_rule(a: object, *, axis: object = None, keepdims: bool = False) -> ArrayMeta:
    meta = _plain("count_nonzero", a)
    shape, _ = _reduced_shape("count_nonzero", meta, axis, keepdims, legacy_0d=False)
    return ArrayMeta(shape, np.dtype(np.intp), scalar=shape == ())


def _ptp_rule(a: object, *, axis: object = None, keepdims: bool = False) -> ArrayMeta:
    meta = to_meta("ptp", a)
    out = _extremum_rule("ptp", "maximum")(meta, axis=axis, keepdims=keepdims)
    if meta.dtype.kind == "b":
        raise TypeError("ptp: numpy boolean subtract, the `-` operator, is not supported")
    return out


def _average_rule(a: object, *, axis: object = None, keepdims: bool = False) -> ArrayMeta:
    meta = _plain("average", a)
    shape, _ = _reduced_shape("average", meta, axis, keepdims, legacy_0d=False)
    return ArrayMeta(shape, _mean_dtype(meta.dtype), scalar=shape == ())


def _cov_rule(name: str):
    def rule(m: object, *, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
             dtype: np.dtype | None = None) -> ArrayMeta:
        meta = to_meta(name, m)
        if meta.ndim > 2:
            raise ValueError(f"{name}: m has more than 2 dimensions")
        shape2 = meta.shape if meta.ndim == 2 else (1, meta.size)
        if not rowvar and meta.ndim != 1:
            shape2 = shape2[::-1]
        n = shape2[0]
        out = np.result_type(meta.dtype, np.float64) if dtype is None else dtype
        if n == 0:
            return ArrayMeta((0, 0), _F64)
        shape = () if n == 1 else (n, n)
        return ArrayMeta(shape, out, scalar=name == "corrcoef" and shape == ())

    return rule


def _checked(rule, name: str):
    def checked(a: object, **kwargs: object) -> ArrayMeta:
        if to_meta(name, a).ndim == 0:
            raise UnsupportedArguments(f"{name} of a 0-d value")
        _inexact_dtype(name, to_meta(name, a), kwargs.get("dtype"))  # type: ignore[arg-type]
        return rule(a, **kwargs)

    return checked


def _nan_impl(name: str):
    fn = getattr(np, name)

    def impl(a, **kwargs):
        return fn(a, **kwargs)

    return impl


def _order_impl(name: str):
    fn = getattr(np, name)

    def impl(a, *, q=0.5, axis=None, keepdims=False):
        if "median" in name:
            return fn(a, axis=axis, keepdims=keepdims)
        return fn(a, q, axis=axis, keepdims=keepdims)

    return impl


def _ptp(a, *, axis=None, keepdims=False):
    return np.ptp(a, axis=axis, keepdims=keepdims)


def _average(a, *, axis=None, keepdims=False):
    return np.average(a, axis=axis, keepdims=keepdims)


def _cov_impl(name: str):
    fn = getattr(np, name)

    def impl(m, *, rowvar=True, bias=False, ddof=None, dtype=None):
        if name == "corrcoef":
            return fn(m, rowvar=rowvar, dtype=dtype)
        return fn(m, rowvar=rowvar, bias=bias, ddof=ddof, dtype=dtype)

    return impl


for _op in (
    *(Op(n, _nan_impl(n), _accumulating_rule(n, _sum_dtype, True), defaults=_WITH_DTYPE,
         differentiable=n != "nanprod")
      for n in ("nansum", "nanprod")),
    Op("nanmean", _nan_impl("nanmean"), _checked(_accumulating_rule("nanmean", _mean_dtype,
                                                                    False), "nanmean"),
       defaults=_WITH_DTYPE),
    Op("nanmax", _nan_impl("nanmax"), _extremum_rule("nanmax", "fmax"), defaults=_AXIS_KEEPDIMS),
    Op("nanmin", _nan_impl("nanmin"), _extremum_rule("nanmin", "fmin"), defaults=_AXIS_KEEPDIMS),
    *(Op(n, _nan_impl(n), _checked(_moment_rule(n), n), defaults=_WITH_DDOF)
      for n in ("nanvar", "nanstd")),
    *(Op(n, _nan_impl(n), _arg_rule(n), differentiable=False, defaults=_AXIS_KEEPDIMS)
      for n in ("nanargmax", "nanargmin")),
    *(Op(n, _order_impl(n), _order_rule(n), defaults=_QUANTILE,
         differentiable=n in _ORDER_STATS_WITH_VJP) for n in _ORDER_STATS),
    Op("count_nonzero", np.count_nonzero, _count_nonzero_rule, differentiable=False,
       defaults=_AXIS_KEEPDIMS),
    Op("ptp", _ptp, _ptp_rule, defaults=_AXIS_KEEPDIMS),
    Op("average", _average, _average_rule, defaults=_AXIS_KEEPDIMS),
    *(Op(n, _cov_impl(n), _cov_rule(n), differentiable=False,
         defaults={"rowvar": True, "bias": False, "ddof": None, "dtype": None})
      for n in ("cov", "corrcoef")),
):
    register(_op)


# -- binders --------------------------------------------------------------------------------


def _canon(name: str, a, axis, keepdims, **static):
    axis = C.axis(name, axis)
    return C.canon(REGISTRY[name], [C.operand(name, a)], axis=axis,
                   keepdims=keepdims_flag(name, keepdims), **static)


def _nan_sum_binder(name: str):
    def binder(a, axis=None, dtype=None, out=None, keepdims=NO, initial=NO, where=NO):
        C.no_out(name, out)
        C.require_default(name, initial=(initial, NO), where=(where, NO))
        return _canon(name, a, axis, keepdims, dtype=C.dtype(name, dtype))

    return binder


@functions("nanmean")
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=NO, *, where=NO):
    C.no_out("nanmean", out)
    C.require_default("nanmean", where=(where, NO))
    return _canon("nanmean", a, axis, keepdims, dtype=C.dtype("nanmean", dtype))


def _nan_extremum_binder(name: str):
    def binder(a, axis=None, out=None, keepdims=NO, initial=NO, where=NO):
        C.no_out(name, out)
        C.require_default(name, initial=(initial, NO), where=(where, NO))
        return _canon(name, a, axis, keepdims)

    return binder


def _nan_moment_binder(name: str):
    def binder(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO, *, where=NO, mean=NO,
               correction=NO):
        C.no_out(name, out)
        C.require_default(name, where=(where, NO), mean=(mean, NO), correction=(correction, NO))
        return _canon(name, a, axis, keepdims, dtype=C.dtype(name, dtype),
                      ddof=C.static(name, "ddof", ddof))

    return binder


def _nan_arg_binder(name: str):
    def binder(a, axis=None, out=None, *, keepdims=NO):
        C.no_out(name, out)
        return C.canon(REGISTRY[name], [C.operand(name, a)], axis=C.int_axis(name, axis),
                       keepdims=keepdims_flag(name, keepdims))

    return binder


for _n in ("nansum", "nanprod"):
    functions(_n)(_nan_sum_binder(_n))
for _n in ("nanmax", "nanmin"):
    functions(_n)(_nan_extremum_binder(_n))
for _n in ("nanvar", "nanstd"):
    functions(_n)(_nan_moment_binder(_n))
for _n in ("nanargmax", "nanargmin"):
    functions(_n)(_nan_arg_binder(_n))


def _median_binder(name: str):
    def binder(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        C.no_out(name, out)
        C.require_default(name, overwrite_input=(bool(overwrite_input), False))
        return _canon(name, a, axis, keepdims)

    return binder


def _q(name: str, q: object) -> object:
    C.static(name, "q", q)
    if is_py_scalar(q) and type(q) is not complex:
        return _percent(name, q)
    if isinstance(q, (list, tuple)):
        return tuple(_percent(name, v) for v in C.operand(name, q))
    raise UnsupportedArguments(f"{name}: q must be a Python number or a constant list")


def _percent(name: str, q: object) -> object:
    """A percentile given as a Python int is that float: NumPy divides it by 100 first, so
    the result (dtype and value) is the float's for every method and dtype. (A quantile's int
    q, 0 or 1, is not: NumPy then interpolates in the array's own dtype.)"""
    if "percentile" in name and type(q) is int and abs(q) <= 2**53:
        return float(q)
    return q


def _quantile_binder(name: str):
    def binder(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
        C.no_out(name, out)
        C.require_default(name, overwrite_input=(bool(overwrite_input), False),
                          method=(method, "linear"), weights=(weights, None),
                          interpolation=(interpolation, None))
        return _canon(name, a, axis, keepdims, q=_q(name, q))

    return binder


for _n in ("median", "nanmedian"):
    functions(_n)(_median_binder(_n))
for _n in ("percentile", "quantile", "nanpercentile", "nanquantile"):
    functions(_n)(_quantile_binder(_n))


@functions("count_nonzero")
def _count_nonzero(a, axis=None, *, keepdims=False):
    return _canon("count_nonzero", a, axis, keepdims)


@functions("ptp")
def _ptp_binder(a, axis=None, out=None, keepdims=NO):
    C.no_out("ptp", out)
    return _canon("ptp", a, axis, keepdims)


@functions("average")
def _average_binder(a, axis=None, weights=None, returned=False, *, keepdims=NO):
    C.require_default("average", weights=(weights, None), returned=(bool(returned), False))
    return _canon("average", a, axis, keepdims)


@functions("cov")
def _cov_binder(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
                dtype=None):
    C.require_default("cov", y=(y, None), fweights=(fweights, None), aweights=(aweights, None))
    if ddof is not None:
        ddof = C.as_index(ddof, "ddof")
    return C.canon(REGISTRY["cov"], [C.operand("cov", m)], rowvar=C.flag("cov", "rowvar", rowvar),
                   bias=C.flag("cov", "bias", bias), ddof=ddof, dtype=C.dtype("cov", dtype))


@functions("corrcoef")
def _corrcoef_binder(x, y=None, rowvar=True, *, dtype=None, bias=NO, ddof=NO):
    C.require_default("corrcoef", y=(y, None), bias=(bias, NO), ddof=(ddof, NO))
    return C.canon(REGISTRY["corrcoef"], [C.operand("corrcoef", x)],
                   rowvar=C.flag("corrcoef", "rowvar", rowvar),
                   dtype=C.dtype("corrcoef", dtype))

