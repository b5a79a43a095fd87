"""The ONNX form of statistics, scans, sorting and a few composite ops (see ``onnx_ops.py``).

Each is written from ONNX ops whose results are NumPy's: ``sort`` as ``TopK`` with ``k`` the
axis length (sorted values do not depend on how ties are broken; ``argsort`` does, and is not
here), ``nansum``/``nanmean`` by masking NaNs with ``Where``, ``isclose`` as NumPy defines it
(``|a - b| <= atol + rtol * |b|``, or ``a == b`` for infinities).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_ops import _axes, _compute, _ndim, _no_kwargs, _out
from npdynamo.export.onnx_shapes import _at_least, _getitem
from npdynamo.export.onnx_writer import Lowering
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node

LOWERINGS: dict[str, Callable[..., Any]] = {}


def _round(L: Lowering, node: Node, x: Any, decimals: int = 0) -> str:
    out = _out(node)
    if out.kind != "f" or not isinstance(decimals, int):
        raise ExportError("round of a non-float array")
    value = L.value(x, out)
    if decimals == 0:
        return L.add("Round", [value])
    scale = L.const(10.0 ** decimals, out)  # NumPy: rint(x * 10**d) / 10**d
    return L.add("Div", [L.add("Round", [L.add("Mul", [value, scale])]), scale])


def _isclose(L: Lowering, node: Node, a: Any, b: Any, rtol: float = 1e-05,
             atol: float = 1e-08, equal_nan: bool = False) -> str:
    work = _compute(L, (a, b))
    if work.kind != "f" or equal_nan:
        raise ExportError("isclose of non-float arrays or with equal_nan")
    x, y = L.value(a, work), L.value(b, work)
    bound = L.add("Add", [L.const(atol, work), L.add("Mul", [L.const(rtol, work),
                                                             L.add("Abs", [y])])])
    near = L.add("LessOrEqual", [L.add("Abs", [L.add("Sub", [x, y])]), bound])
    return L.add("Or", [near, L.add("Equal", [x, y])])


def _reduce_with(op: str, value: str, axes: list[int] | None, L: Lowering, keep: bool) -> str:
    extra = [] if axes is None else [L.ints(axes)]
    return L.add(op, [value, *extra], keepdims=int(bool(keep)))


def _ptp(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False) -> str:
    out = _out(node)
    value, axes = L.value(x, out), _axes(L, x, axis)
    return L.add("Sub", [_reduce_with("ReduceMax", value, axes, L, keepdims),
                         _reduce_with("ReduceMin", value, axes, L, keepdims)])


def _average(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False,
             **kw: Any) -> str:
    _no_kwargs(kw)
    out = _out(node)
    if out.kind != "f":
        raise ExportError(f"average into {out}")
    return _reduce_with("ReduceMean", L.value(x, out), _axes(L, x, axis), L, keepdims)


def _count_nonzero(L: Lowering, node: Node, x: Any, axis: Any = None,
                   keepdims: bool = False) -> str:
    flags = L.add("Not", [L.add("Equal", [L.value(x, _compute(L, (x,))),
                                          L.const(0, _compute(L, (x,)))])])
    counts = L.cast(flags, np.bool_, _out(node))
    return _reduce_with("ReduceSum", counts, _axes(L, x, axis), L, keepdims)


def _cumsum(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
            include_initial: bool = False) -> str:
    out = _out(node)
    if include_initial or out.kind not in "fiu":
        raise ExportError("cumsum with include_initial or of this dtype")
    value = L.value(x, out)
    if axis is None:
        value, axis = L.add("Reshape", [value, L.ints([-1])]), 0
    return L.add("CumSum", [value, L.const(axis % max(_ndim(x), 1), np.int64)])


def _trace(L: Lowering, node: Node, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1,
           dtype: Any = None) -> str:
    out = _out(node)
    if _ndim(x) != 2 or out.kind not in "fiu":
        raise ExportError("trace of an array that is not a matrix")
    value = L.value(x, out)
    eye = L.add("EyeLike", [value], k=offset)
    return L.add("ReduceSum", [L.add("Mul", [value, eye])], keepdims=0)


def _nan_sum(mean: bool) -> Callable[..., str]:
    """``nansum``, or with ``mean`` ``nanmean``: the sum with NaN as 0, divided by the count of
    the values that are not NaN."""
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
              keepdims: bool = False) -> str:
        out = _out(node)
        if out.kind != "f":
            raise ExportError(f"{'nanmean' if mean else 'nansum'} of {out}")
        value = L.value(x, out)
        isnan = L.add("IsNaN", [value])
        axes = _axes(L, x, axis)
        total = _reduce_with("ReduceSum", L.add("Where", [isnan, L.const(0, out), value]), axes,
                             L, keepdims)
        if not mean:
            return total
        count = L.cast(L.add("Not", [isnan]), np.bool_, out)
        return L.add("Div", [total, _reduce_with("ReduceSum", count, axes, L, keepdims)])
    return lower


def _vdot(L: Lowering, node: Node, a: Any, b: Any) -> str:
    out = _out(node)
    if out.kind not in "fiu":
        raise ExportError(f"vdot of {out}")
    flat = [L.add("Reshape", [L.value(v, out), L.ints([-1])]) for v in (a, b)]
    return L.add("ReduceSum", [L.add("Mul", flat)], keepdims=0)


def _det(L: Lowering, node: Node, a: Any) -> str:
    out = _out(node)
    if out != np.float32:
        raise ExportError(f"ONNX Runtime computes Det in float32 only, not {out}")
    return L.add("Det", [L.value(a, out)])


def _tri(L: Lowering, node: Node, N: Any, M: Any = None, k: int = 0, dtype: Any = None) -> str:
    out = _out(node)
    tensor = L.onnx.numpy_helper.from_array(np.asarray([1], dtype=out), L.fresh("one"))
    ones = L.add("ConstantOfShape", [L.shape((N, N if M is None else M))], value=tensor)
    return L.add("Trilu", [ones, L.ints([k])], upper=0)


def _take(L: Lowering, node: Node, x: Any, indices: Any, axis: Any = None) -> str:
    value = L.value(x, _out(node))
    if axis is None:
        value, axis = L.add("Reshape", [value, L.ints([-1])]), 0
    return L.add("Gather", [value, L.value(indices, np.int64)], axis=axis % max(_ndim(x), 1))


def _take_along_axis(L: Lowering, node: Node, x: Any, indices: Any, axis: Any = -1) -> str:
    if axis is None:
        raise ExportError("take_along_axis with axis=None")
    return L.add("GatherElements", [L.value(x, _out(node)), L.value(indices, np.int64)],
                 axis=axis % _ndim(x))


def _sort(L: Lowering, node: Node, x: Any, axis: Any = -1, stable: Any = None) -> str:
    out = _out(node)
    if axis is None or out.kind not in "fiu":
        raise ExportError("sort over all axes, or of this dtype")
    axis %= _ndim(x)
    value = L.value(x, out)
    k = L.add("Shape", [value], start=axis, end=axis + 1)
    values, _indices = L.add("TopK", [value, k], outputs=2, axis=axis, largest=0, sorted=1)
    return values


def _roll(L: Lowering, node: Node, x: Any, shift: Any = 0, axis: Any = None) -> str:
    if not isinstance(shift, int) or not isinstance(axis, int):
        raise ExportError("roll by a tuple of shifts or over the flattened array")
    axis %= _ndim(x)
    value = L.value(x, _out(node))
    size = L.add("Shape", [value], start=axis, end=axis + 1)
    # the last (shift mod size) entries come first; Mod with fmod=0 floors as Python does
    cut = L.add("Sub", [size, L.add("Mod", [L.ints([shift]), size], fmod=0)])
    axes = L.ints([axis])
    head = L.add("Slice", [value, cut, L.ints([np.iinfo(np.int64).max]), axes])
    tail = L.add("Slice", [value, L.ints([0]), cut, axes])
    return L.add("Concat", [head, tail], axis=axis)


def _diff(L: Lowering, node: Node, x: Any, n: int = 1, axis: int = -1, prepend: Any = None,
          append: Any = None) -> str:
    if n != 1 or prepend is not None or append is not None:
        raise ExportError("diff with n != 1, prepend or append")
    lead = (slice(None),) * (axis % _ndim(x))
    upper = _getitem(L, node, x, (*lead, slice(1, None)))
    lower = _getitem(L, node, x, (*lead, slice(None, -1)))
    return L.add("Sub", [upper, lower])


def _dstack(L: Lowering, node: Node, arrays: Any, **kw: Any) -> str:
    _no_kwargs(kw, ("dtype",))
    return L.add("Concat", [_at_least(L, node, a, 3) for a in arrays], axis=2)


def _column_stack(L: Lowering, node: Node, arrays: Any) -> str:
    parts = [L.add("Unsqueeze", [L.value(a, _out(node)), L.ints([1])]) if _ndim(a) == 1
             else L.value(a, _out(node)) for a in arrays]
    return L.add("Concat", parts, axis=1)


def _py_dtype(L: Lowering, node: Node) -> np.dtype:
    out = _out(node)
    if out.kind not in "bif":
        raise ExportError(f"Python arithmetic on {out}")
    return np.dtype(np.int64) if out.kind == "b" else out


def _py_binary(onnx_op: str) -> Callable:
    """Python's ``+ - *`` on numbers of the graph (a loop index, a size): int64 or float64."""
    def lower(L: Lowering, node: Node, a: Any, b: Any) -> str:
        t = _py_dtype(L, node)
        return L.add(onnx_op, [L.value(a, t), L.value(b, t)])
    return lower


# Python's // and % floor where ONNX's Div truncates, and a loop index feeding them keeps a loop
# from being rolled today: only + - * (exact on int64) are written
LOWERINGS.update(py_add=_py_binary("Add"), py_sub=_py_binary("Sub"), py_mul=_py_binary("Mul"))


LOWERINGS.update(
    round=_round, isclose=_isclose, ptp=_ptp, average=_average,
    count_nonzero=_count_nonzero, cumsum=_cumsum, cumulative_sum=_cumsum, trace=_trace,
    nansum=_nan_sum(False), nanmean=_nan_sum(True), vdot=_vdot, det=_det, tri=_tri, take=_take,
    take_along_axis=_take_along_axis, sort=_sort, roll=_roll, diff=_diff, dstack=_dstack,
    column_stack=_column_stack,
)
