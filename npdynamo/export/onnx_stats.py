"""The ONNX form of NaN-aware reductions, products along an axis, quantiles, covariance and
searching (see ``onnx_ops.py``).

Written as NumPy computes them: ``cumprod`` multiplies in order in a ``Loop`` (its results are
NumPy's bit for bit); the ``nan*`` reductions replace NaNs as ``numpy.lib._nanfunctions_impl``
does (``nanargmax`` of an all-NaN slice, where NumPy raises, returns 0: ONNX cannot raise);
``quantile``/``percentile``/``median`` sort with ``TopK`` and interpolate linearly (NumPy's
default method) between the two neighbours (a NaN in the slice gives NaN; the ``nan*`` forms
count the non-NaN values per slice); ``argsort`` only with ``stable=True`` (``TopK`` orders
ties by index; NumPy's default sort does not promise an order); ``searchsorted`` counts, with
NumPy's order for NaN (after every number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_math import raw_loop, where
from npdynamo.export.onnx_ops import _axes, _ndim, _no_kwargs, _out
from npdynamo.export.onnx_writer import Lowering
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node

LOWERINGS: dict[str, Callable[..., Any]] = {}


def _flat_axis(L: Lowering, x: Any, t: np.dtype, axis: Any) -> tuple[str, int, int]:
    """``x`` as ``t`` and the one axis to work along (the flattened array for None)."""
    value = L.value(x, t)
    if axis is None:
        return L.add("Reshape", [value, L.ints([-1])]), 0, 1
    if not isinstance(axis, int):
        raise ExportError("a tuple of axes")
    n = max(_ndim(x), 1)
    return value, axis % n, n


def _reduce(L: Lowering, op: str, value: str, axes: Any, keepdims: bool) -> str:
    extra = [] if axes is None else [L.ints(axes)]
    return L.add(op, [value, *extra], keepdims=int(bool(keepdims)))


def _float(node: Node, name: str) -> np.dtype:
    t = _out(node)
    if t.kind != "f":
        raise ExportError(f"{name} into {t}")
    return t


# -- products along an axis ----------------------------------------------------------------------
def cumulative_product(L: Lowering, value: str, axis: int, ndim: int, t: np.dtype) -> str:
    perm = [axis, *(a for a in range(ndim) if a != axis)]
    moved = value if axis == 0 else L.add("Transpose", [value], perm=perm)
    trips = L.add("Squeeze", [L.add("Shape", [moved], start=0, end=1), L.ints([0])])
    one = L.onnx.numpy_helper.from_array(np.asarray([1], dtype=t), L.fresh("one"))
    start = L.add("ConstantOfShape", [L.add("Shape", [moved], start=1)], value=one)

    def body(L: Lowering, it: str, names: list[str]):
        p = L.add("Mul", [names[0], L.add("Gather", [moved, it], axis=0)])
        return L.const(True, np.bool_), [p], [(p, t)]

    _, scan = raw_loop(L, trips, "", [(start, t)], body)
    if axis == 0:
        return scan
    return L.add("Transpose", [scan], perm=[perm.index(a) for a in range(ndim)])


def _cumulative(name: str, nan: bool) -> Callable:
    """The lowering of a running product (``name`` "cumprod") or sum along one axis; with
    ``nan`` a NaN counts as the product's or the sum's identity (``nancumprod``, ``nancumsum``)."""
    product = name == "cumprod"

    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
              include_initial: bool = False) -> str:
        t = _out(node)
        if include_initial or t.kind not in "fiu":
            raise ExportError(f"{name} with include_initial or of this dtype")
        value, ax, n = _flat_axis(L, x, t, axis)
        if nan and t.kind == "f":
            value = where(L, L.add("IsNaN", [value]), L.const(1 if product else 0, t), value)
        if product:
            return cumulative_product(L, value, ax, n, t)
        return L.add("CumSum", [value, L.const(ax, np.int64)])
    return lower


LOWERINGS.update(cumprod=_cumulative("cumprod", False),
                 cumulative_prod=_cumulative("cumprod", False),
                 nancumprod=_cumulative("cumprod", True), nancumsum=_cumulative("nancumsum", True))


# -- NaN-aware reductions ------------------------------------------------------------------------
def _nan_extreme(op: str, fill: float) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False) -> str:
        t = _out(node)
        value, axes = L.value(x, t), _axes(L, x, axis)
        if t.kind != "f":
            return _reduce(L, op, value, axes, keepdims)
        isnan = L.add("IsNaN", [value])
        best = _reduce(L, op, where(L, isnan, L.const(fill, t), value), axes, keepdims)
        count = _reduce(L, "ReduceSum", L.cast(L.add("Not", [isnan]), np.bool_, np.int64),
                        axes, keepdims)
        return where(L, L.add("Equal", [count, L.const(0, np.int64)]), L.const(np.nan, t), best)
    return lower


def _nanprod(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
             keepdims: bool = False) -> str:
    t = _out(node)
    value = L.value(x, t)
    if t.kind == "f":
        value = where(L, L.add("IsNaN", [value]), L.const(1, t), value)
    return _reduce(L, "ReduceProd", value, _axes(L, x, axis), keepdims)


def nanvar(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
           ddof: Any = 0, keepdims: bool = False) -> str:
    t = _float(node, "nanvar")
    if not isinstance(ddof, (int, float)):
        raise ExportError("a computed ddof")
    value, axes = L.value(x, t), _axes(L, x, axis)
    isnan = L.add("IsNaN", [value])
    clean = where(L, isnan, L.const(0, t), value)
    count = _reduce(L, "ReduceSum", L.cast(L.add("Not", [isnan]), np.bool_, t), axes, True)
    mean = L.add("Div", [_reduce(L, "ReduceSum", clean, axes, True), count])
    dev = where(L, isnan, L.const(0, t), L.add("Sub", [clean, mean]))
    total = _reduce(L, "ReduceSum", L.add("Mul", [dev, dev]), axes, keepdims)
    if not keepdims:
        count = _reduce(L, "ReduceSum", L.cast(L.add("Not", [isnan]), np.bool_, t), axes, False)
    dof = L.add("Sub", [count, L.const(ddof, t)])
    var = L.add("Div", [total, dof])  # NumPy: NaN where no degree of freedom is left
    return where(L, L.add("LessOrEqual", [dof, L.const(0, t)]), L.const(np.nan, t), var)


def _nanarg(op: str, fill: float) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False) -> str:
        meta_t = np.result_type(L.dtype_of(x))
        value, ax, _ = _flat_axis(L, x, meta_t, axis)
        if axis is None and keepdims:
            raise ExportError("over all axes with keepdims")
        if meta_t.kind == "f":
            value = where(L, L.add("IsNaN", [value]), L.const(fill, meta_t), value)
        return L.add(op, [value], axis=ax, keepdims=int(bool(keepdims)))
    return lower


LOWERINGS.update(
    nanmax=_nan_extreme("ReduceMax", -np.inf), nanmin=_nan_extreme("ReduceMin", np.inf),
    nanprod=_nanprod, nanvar=nanvar,
    nanstd=lambda L, node, *a, **k: L.add("Sqrt", [nanvar(L, node, *a, **k)]),
    nanargmax=_nanarg("ArgMax", -np.inf), nanargmin=_nanarg("ArgMin", np.inf),
)


# -- quantiles -----------------------------------------------------------------------------------
def _quantile(scale: float, nan: bool) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, q: Any = 0.5, axis: Any = None,
              keepdims: bool = False, **kw: Any) -> str:
        _no_kwargs(kw, ("method",) if kw.get("method") == "linear" else ())
        t = _float(node, "quantile")
        qs = q if isinstance(q, (tuple, list)) else (q,)
        if not all(type(v) in (int, float) for v in qs):
            raise ExportError("quantiles that are not Python numbers")
        if axis is None and keepdims:
            raise ExportError("keepdims over all axes")
        value, ax, _ = _flat_axis(L, x, t, axis)
        isnan = L.add("IsNaN", [value])
        clean = where(L, isnan, L.const(np.inf, t), value)
        k = L.add("Shape", [clean], start=ax, end=ax + 1)
        ordered, _ = L.add("TopK", [clean, k], outputs=2, axis=ax, largest=0, sorted=1)
        valid = L.cast(L.add("Not", [isnan]), np.bool_, np.int64)
        if nan:
            count = L.add("ReduceSum", [valid, L.ints([ax])], keepdims=1)
        else:
            count = L.add("ReduceSum", [L.add("Add", [L.add("Mul", [valid, L.const(
                0, np.int64)]), L.const(1, np.int64)]), L.ints([ax])], keepdims=1)
        last = L.add("Max", [L.add("Sub", [count, L.const(1, np.int64)]),
                             L.const(0, np.int64)])
        results = []
        for v in qs:
            where_at = L.add("Mul", [L.cast(L.add("Sub", [count, L.const(1, np.int64)]),
                                            np.int64, np.float64),
                                     L.const(float(v) / scale, np.float64)])
            lo = L.add("Floor", [where_at])
            gamma = L.cast(L.add("Sub", [where_at, lo]), np.float64, t)
            lo_i = L.add("Min", [L.add("Max", [L.cast(lo, np.float64, np.int64),
                                               L.const(0, np.int64)]), last])
            hi_i = L.add("Min", [L.add("Add", [lo_i, L.const(1, np.int64)]), last])
            a = L.add("GatherElements", [ordered, lo_i], axis=ax)
            b = L.add("GatherElements", [ordered, hi_i], axis=ax)
            diff = L.add("Sub", [b, a])
            low = L.add("Add", [a, L.add("Mul", [diff, gamma])])
            high = L.add("Sub", [b, L.add("Mul", [diff, L.add("Sub", [L.const(1, t), gamma])])])
            res = where(L, L.add("GreaterOrEqual", [gamma, L.const(0.5, t)]), high, low)
            if nan:
                empty = L.add("Equal", [count, L.const(0, np.int64)])
            else:
                empty = L.cast(L.add("ReduceMax", [L.cast(isnan, np.bool_, np.int32),
                                                   L.ints([ax])], keepdims=1), np.int32, np.bool_)
            res = where(L, empty, L.const(np.nan, t), res)
            if not keepdims:
                res = L.add("Squeeze", [res, L.ints([ax])])
            results.append(res)
        if not isinstance(q, (tuple, list)):
            return results[0]
        return L.add("Concat", [L.add("Unsqueeze", [r, L.ints([0])]) for r in results], axis=0)
    return lower


LOWERINGS.update(
    quantile=_quantile(1.0, False), percentile=_quantile(100.0, False),
    median=_quantile(1.0, False), nanquantile=_quantile(1.0, True),
    nanpercentile=_quantile(100.0, True), nanmedian=_quantile(1.0, True),
)


def _argsort(L: Lowering, node: Node, x: Any, axis: Any = -1, stable: Any = None,
             **kw: Any) -> str:
    _no_kwargs(kw)
    if stable is not True:
        raise ExportError("argsort without stable=True (NumPy's default sort orders ties "
                          "as it likes)")
    t = np.result_type(L.dtype_of(x))
    value, ax, _ = _flat_axis(L, x, t, axis)
    k = L.add("Shape", [value], start=ax, end=ax + 1)
    if t.kind != "f":
        return L.add("TopK", [value, k], outputs=2, axis=ax, largest=0, sorted=1)[1]
    # two stable passes: by value (NaN as inf), then NaNs last keeping that order
    isnan = L.add("IsNaN", [value])
    first = L.add("TopK", [where(L, isnan, L.const(np.inf, t), value), k], outputs=2,
                  axis=ax, largest=0, sorted=1)[1]
    flags = L.add("GatherElements", [L.cast(isnan, np.bool_, np.float32), first], axis=ax)
    second = L.add("TopK", [flags, k], outputs=2, axis=ax, largest=0, sorted=1)[1]
    return L.add("GatherElements", [first, second], axis=ax)


LOWERINGS["argsort"] = _argsort


# -- covariance ----------------------------------------------------------------------------------
def covariance(L: Lowering, x: Any, t: np.dtype, rowvar: bool, bias: bool, ddof: Any) -> str:
    if _ndim(x) not in (1, 2):
        raise ExportError("cov of an array that is not 1-D or 2-D")
    value = L.value(x, t)
    if _ndim(x) == 1:
        value = L.add("Unsqueeze", [value, L.ints([0])])
    elif not rowvar:
        value = L.add("Transpose", [value], perm=[1, 0])
    if ddof is None:
        ddof = 0 if bias else 1
    n = L.cast(L.add("Shape", [value], start=1, end=2), np.int64, t)
    fact = L.add("Sub", [n, L.const([ddof], t)])
    centred = L.add("Sub", [value, L.add("ReduceMean", [value, L.ints([1])], keepdims=1)])
    c = L.add("MatMul", [centred, L.add("Transpose", [centred], perm=[1, 0])])
    c = L.add("Mul", [c, L.add("Div", [L.const(1, t), L.add("Squeeze", [fact, L.ints([0])])])])
    return L.add("Squeeze", [c, L.ints([0, 1])]) if _ndim(x) == 1 else c


def _cov(L: Lowering, node: Node, m: Any, rowvar: bool = True, bias: bool = False,
         ddof: Any = None, dtype: Any = None, **kw: Any) -> str:
    _no_kwargs(kw)
    return covariance(L, m, _float(node, "cov"), rowvar, bias, ddof)


def _corrcoef(L: Lowering, node: Node, x: Any, rowvar: bool = True, bias: Any = False,
              ddof: Any = None, dtype: Any = None, **kw: Any) -> str:
    _no_kwargs(kw)
    t = _float(node, "corrcoef")
    c = covariance(L, x, t, rowvar, False, None)
    if _ndim(x) == 1:
        return L.add("Div", [c, c])
    size = L.add("Shape", [c], start=0, end=1)
    eye = L.add("EyeLike", [L.add("ConstantOfShape", [L.add("Concat", [size, size], axis=0)],
                                  value=L.onnx.numpy_helper.from_array(
                                      np.zeros(1, t), L.fresh("zero")))])
    d = L.add("ReduceSum", [L.add("Mul", [c, eye]), L.ints([1])], keepdims=0)
    std = L.add("Sqrt", [d])
    c = L.add("Div", [c, L.add("Unsqueeze", [std, L.ints([1])])])
    c = L.add("Div", [c, L.add("Unsqueeze", [std, L.ints([0])])])
    return L.add("Min", [L.add("Max", [c, L.const(-1, t)]), L.const(1, t)])


LOWERINGS.update(cov=_cov, corrcoef=_corrcoef)


# -- searching, interpolation, polynomials, spacing ----------------------------------------------
def search(L: Lowering, a: str, v: str, t: np.dtype, side: str) -> str:
    """``searchsorted(a, v, side)`` for a sorted 1-D ``a``: a count of the entries before ``v``
    in NumPy's order (NaN after every number)."""
    col = L.add("Unsqueeze", [v, L.ints([-1])])
    a_nan, v_nan = L.add("IsNaN", [a]), L.add("IsNaN", [col])
    if side == "left":  # a[i] < v
        before = L.add("Or", [L.add("Less", [a, col]),
                              L.add("And", [v_nan, L.add("Not", [a_nan])])])
    else:  # not v < a[i]
        v_first = L.add("Or", [L.add("Less", [col, a]),
                               L.add("And", [a_nan, L.add("Not", [v_nan])])])
        before = L.add("Not", [v_first])
    return L.add("ReduceSum", [L.cast(before, np.bool_, np.int64), L.ints([-1])], keepdims=0)


def _searchsorted(L: Lowering, node: Node, a: Any, v: Any, side: str = "left",
                  sorter: Any = None) -> str:
    if sorter is not None or _ndim(a) != 1 or side not in ("left", "right"):
        raise ExportError("searchsorted with a sorter, or into an array that is not 1-D")
    t = np.result_type(L.dtype_of(a), L.dtype_of(v))
    return L.cast(search(L, L.value(a, t), L.value(v, t), t, side), np.int64, _out(node))


def _interp(L: Lowering, node: Node, x: Any, xp: Any, fp: Any, left: Any = None,
            right: Any = None, period: Any = None) -> str:
    t = _float(node, "interp")
    if period is not None or _ndim(xp) != 1 or _ndim(fp) != 1:
        raise ExportError("interp with a period or with points that are not 1-D")
    xv, xs, fs = L.value(x, t), L.value(xp, t), L.value(fp, t)
    n = L.add("Squeeze", [L.add("Shape", [xs]), L.ints([0])])
    j = L.add("Sub", [search(L, xs, xv, t, "right"), L.const(1, np.int64)])
    j = L.add("Min", [L.add("Max", [j, L.const(0, np.int64)]),
                      L.add("Max", [L.add("Sub", [n, L.const(2, np.int64)]),
                                    L.const(0, np.int64)])])
    j1 = L.add("Min", [L.add("Add", [j, L.const(1, np.int64)]),
                       L.add("Sub", [n, L.const(1, np.int64)])])
    x0, x1 = L.add("Gather", [xs, j]), L.add("Gather", [xs, j1])
    f0, f1 = L.add("Gather", [fs, j]), L.add("Gather", [fs, j1])
    slope = L.add("Div", [L.add("Sub", [f1, f0]), L.add("Sub", [x1, x0])])
    res = L.add("Add", [L.add("Mul", [slope, L.add("Sub", [xv, x0])]), f0])
    again = L.add("Add", [L.add("Mul", [slope, L.add("Sub", [xv, x1])]), f1])
    res = where(L, L.add("IsNaN", [res]), where(L, L.add("Equal", [f0, f1]), f0, again), res)
    last = L.add("Sub", [n, L.const(1, np.int64)])
    first_x, last_x = L.add("Gather", [xs, L.const(0, np.int64)]), L.add("Gather", [xs, last])
    lo = L.add("Gather", [fs, L.const(0, np.int64)]) if left is None else L.value(left, t)
    hi = L.add("Gather", [fs, last]) if right is None else L.value(right, t)
    res = where(L, L.add("Equal", [xv, last_x]), L.add("Gather", [fs, last]), res)
    res = where(L, L.add("Greater", [xv, last_x]), hi, res)
    res = where(L, L.add("Less", [xv, first_x]), lo, res)
    return where(L, L.add("IsNaN", [xv]), xv, res)


def _polyval(L: Lowering, node: Node, p: Any, x: Any) -> str:
    t = _out(node)
    if _ndim(p) != 1 or not isinstance(L.meta(p).shape[0] if L.meta(p) is not None
                                       else len(p), int):
        raise ExportError("polyval with coefficients of a dynamic length")
    count = L.meta(p).shape[0] if L.meta(p) is not None else len(p)
    coeffs, xv = L.value(p, t), L.value(x, t)
    y = L.add("Mul", [xv, L.const(0, t)])  # zeros_like(x), then Horner as NumPy loops
    for i in range(count):
        y = L.add("Add", [L.add("Mul", [y, xv]), L.add("Gather", [coeffs, L.const(i, np.int64)])])
    return y


def _linspace(L: Lowering, node: Node, start: Any, stop: Any, num: Any = 50,
              endpoint: bool = True, dtype: Any = None, **kw: Any) -> str:
    _no_kwargs(kw, ("axis",) if kw.get("axis", 0) == 0 else ())
    out = _out(node)
    if _ndim(start) or _ndim(stop) or out.kind not in "fi":
        raise ExportError("linspace between arrays, or into this dtype")
    t = np.result_type(L.dtype_of(start), L.dtype_of(stop), 1.0)  # NumPy's working dtype
    lo, hi = L.value(start, t), L.value(stop, t)
    count = L.value(num, np.int64)
    steps = L.add("Sub", [count, L.const(1, np.int64)]) if endpoint else count
    div = L.cast(steps, np.int64, t)
    delta = L.add("Sub", [hi, lo])
    y = L.cast(L.add("Range", [L.const(0, np.int64), count, L.const(1, np.int64)]), np.int64, t)
    step = L.add("Div", [delta, div])
    # NumPy: y * step, or y * delta when there is no step (one point with endpoint)
    scaled = where(L, L.add("Greater", [div, L.const(0, t)]), L.add("Mul", [y, step]),
                   L.add("Mul", [y, delta]))
    y = L.add("Add", [scaled, lo])
    if endpoint:  # the last point is stop itself
        index = L.add("Range", [L.const(0, np.int64), count, L.const(1, np.int64)])
        is_last = L.add("And", [L.add("Equal", [index, steps]),
                                L.add("Greater", [count, L.const(1, np.int64)])])
        y = where(L, is_last, hi, y)
    if out.kind != "f":
        y = L.add("Floor", [y])
    return L.cast(y, t, out)


LOWERINGS.update(searchsorted=_searchsorted, interp=_interp, polyval=_polyval,
                 linspace=_linspace)
