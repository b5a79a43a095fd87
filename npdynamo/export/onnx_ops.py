"""The ONNX form of each canonical op: ``LOWERINGS[op name](lowering, node, *args, **kwargs)``.

Used by ``onnx_writer.Lowering.lower``; each entry returns the ONNX name of the node's result
(a tuple of names for several results). An op or an argument form without an exact ONNX
equivalent raises ``ExportError`` (never an approximation the checks would not catch): ops
whose NumPy results ONNX cannot reproduce (``expm1``/``log1p`` near zero, ``fmax`` with NaN,
integer floor division, ...) are simply absent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_writer import Lowering, _scalar_dtype  # noqa: F401
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta

LOWERINGS: dict[str, Callable[..., Any]] = {}


def _out(node: Node) -> np.dtype:
    meta = node.meta["val"]
    return meta.dtype if isinstance(meta, ArrayMeta) else _scalar_dtype(meta)


def _ndim(x: Any) -> int:
    meta = x.meta.get("val") if isinstance(x, Node) else None
    return len(meta.shape) if isinstance(meta, ArrayMeta) else np.ndim(x)


def _shape(x: Any) -> tuple:
    meta = x.meta.get("val") if isinstance(x, Node) else None
    return meta.shape if isinstance(meta, ArrayMeta) else np.shape(x)


def _compute(L: Lowering, args: tuple) -> np.dtype:
    """The dtype NumPy computes ``args`` in (Python numbers as weak scalars)."""
    return np.result_type(*(L.dtype_of(a) for a in args))


def _no_kwargs(kwargs: dict, allowed: tuple = ()) -> None:
    extra = {k: v for k, v in kwargs.items() if k not in allowed and v is not None}
    if extra:
        raise ExportError(f"arguments {sorted(extra)} have no ONNX form")


# -- elementwise ---------------------------------------------------------------------------------
#: ONNX ops ONNX Runtime implements for float32 only (no float64 kernel); arcsin, arccos,
#: arctan, sinh and the inverse hyperbolics have float64 forms in ``onnx_math.py``
FLOAT32_ONLY = frozenset(["Det"])


#: ONNX Runtime has no Max/Min kernels for these ints: they are taken in a wider int (exact,
#: since the result is one of the operands)
_WIDER = {np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint16): np.dtype(np.int32),
          np.dtype(np.uint32): np.dtype(np.int64)}
_NO_SMALL_INTS = frozenset(["Max", "Min", "ReduceMax", "ReduceMin"])


def extreme(L: Lowering, op: str, values: list[str], t: np.dtype) -> str:
    """``Max``/``Min`` of ONNX values of dtype ``t`` (in a wider int where ORT needs one)."""
    wide = _WIDER.get(np.dtype(t))
    if wide is None:
        return L.add(op, values)
    return L.cast(L.add(op, [L.cast(v, t, wide) for v in values]), wide, t)


def _elementwise(onnx_op: str, compute: str = "out", kinds: str = "") -> Callable:
    """``onnx_op`` on the operands cast to the result dtype (``compute="out"``) or to the
    dtype NumPy compares in (``"common"``); ``kinds``: the dtype kinds allowed."""

    def lower(L: Lowering, node: Node, *args: Any, dtype: Any = None) -> str:
        out = _out(node)
        work = np.dtype(dtype) if dtype is not None else (
            out if compute == "out" else _compute(L, args))
        if kinds and work.kind not in kinds:
            raise ExportError(f"{onnx_op} for dtype {work} has no exact ONNX form")
        if onnx_op in FLOAT32_ONLY and work != np.float32:
            raise ExportError(f"ONNX Runtime computes {onnx_op} in float32 only, not {work}")
        if onnx_op == "Neg" and work.kind == "u":  # no unsigned Neg kernel: 0 - x wraps alike
            result = L.add("Sub", [L.const(0, work), L.value(args[0], work)])
            return L.cast(result, work, out)
        wide = _WIDER.get(work) if onnx_op in _NO_SMALL_INTS else None
        if wide is not None:  # the value is one of the operands: exact in a wider int
            result = L.add(onnx_op, [L.cast(L.value(a, work), work, wide) for a in args])
            return L.cast(L.cast(result, wide, work), work, out)
        result = L.add(onnx_op, [L.value(a, work) for a in args])
        return L.cast(result, work if compute == "out" else np.bool_, out)

    return lower


def _composite(fn: Callable, kinds: str = "f") -> Callable:
    """An op written as several ONNX nodes over operands cast to the result dtype."""

    def lower(L: Lowering, node: Node, *args: Any, dtype: Any = None) -> str:
        out = np.dtype(dtype) if dtype is not None else _out(node)
        if out.kind not in kinds:
            raise ExportError(f"dtype {out} has no exact ONNX form here")
        return fn(L, out, *(L.value(a, out) for a in args))

    return lower


_FLOAT_UNARY = {
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tanh": "Tanh",
    "floor": "Floor", "ceil": "Ceil", "rint": "Round", "reciprocal": "Reciprocal",
}
for _name, _op in _FLOAT_UNARY.items():
    LOWERINGS[_name] = _elementwise(_op, kinds="f")
for _name, _op in {"absolute": "Abs", "negative": "Neg", "sign": "Sign", "fabs": "Abs",
                   "positive": "Identity"}.items():
    LOWERINGS[_name] = _elementwise(_op, kinds="fiu")
for _name, _op in {"add": "Add", "subtract": "Sub", "multiply": "Mul"}.items():
    LOWERINGS[_name] = _elementwise(_op, kinds="fiu")
LOWERINGS["divide"] = _elementwise("Div", kinds="f")
LOWERINGS["power"] = _elementwise("Pow", kinds="f")
LOWERINGS["float_power"] = _elementwise("Pow", kinds="f")
LOWERINGS["maximum"] = _elementwise("Max", kinds="fiu")
LOWERINGS["minimum"] = _elementwise("Min", kinds="fiu")
for _name, _op in {"equal": "Equal", "less": "Less", "less_equal": "LessOrEqual",
                   "greater": "Greater", "greater_equal": "GreaterOrEqual"}.items():
    LOWERINGS[_name] = _elementwise(_op, compute="common", kinds="fiub")
for _name, _op in {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
                   "logical_not": "Not"}.items():
    LOWERINGS[_name] = _elementwise(_op, compute="out", kinds="b")
LOWERINGS["isnan"] = _elementwise("IsNaN", compute="common", kinds="f")


def _not_equal(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
    work = _compute(L, (a, b))
    return L.add("Not", [L.add("Equal", [L.value(a, work), L.value(b, work)])])


def _isinf(L: Lowering, node: Node, x: Any, dtype: Any = None) -> str:
    work = _compute(L, (x,))
    if work.kind != "f":
        raise ExportError(f"isinf of {work}")
    return L.add("IsInf", [L.value(x, work)])


def _isfinite(L: Lowering, node: Node, x: Any, dtype: Any = None) -> str:
    work = _compute(L, (x,))
    if work.kind != "f":
        raise ExportError(f"isfinite of {work}")
    v = L.value(x, work)
    return L.add("Not", [L.add("Or", [L.add("IsNaN", [v]), L.add("IsInf", [v])])])


def _bitwise(onnx_op: str, bool_op: str) -> Callable:
    def lower(L: Lowering, node: Node, *args: Any, dtype: Any = None) -> str:
        out = _out(node)
        if out.kind not in "biu":
            raise ExportError(f"a bitwise op on {out}")
        return L.add(bool_op if out.kind == "b" else onnx_op, [L.value(a, out) for a in args])
    return lower


LOWERINGS.update(not_equal=_not_equal, isinf=_isinf, isfinite=_isfinite,
                 bitwise_and=_bitwise("BitwiseAnd", "And"),
                 bitwise_or=_bitwise("BitwiseOr", "Or"),
                 bitwise_xor=_bitwise("BitwiseXor", "Xor"),
                 invert=_bitwise("BitwiseNot", "Not"))

# tan as sin / cos (ONNX Runtime has no float64 Tan); cosh from exp (no cancellation)
LOWERINGS["tan"] = _composite(lambda L, t, x: L.add("Div", [L.add("Sin", [x]), L.add("Cos", [x])]))
LOWERINGS["cosh"] = _composite(lambda L, t, x: _cosh(L, t, x))


def _cosh(L: Lowering, t: np.dtype, x: str) -> str:
    """(h/2) * h + 1 / (2 h^2), h = exp(|x| / 2): no overflow where exp(x) would overflow
    and cosh(x) does not (float32 cosh(89))."""
    h = L.add("Exp", [L.add("Mul", [L.add("Abs", [x]), L.const(0.5, t)])])
    big = L.add("Mul", [L.add("Mul", [h, L.const(0.5, t)]), h])
    return L.add("Add", [big, L.add("Div", [L.const(0.5, t), L.add("Mul", [h, h])])])
LOWERINGS["square"] = _composite(lambda L, t, x: L.add("Mul", [x, x]), "fiu")
LOWERINGS["conjugate"] = _composite(lambda L, t, x: L.add("Identity", [x]), "fiub")
LOWERINGS["exp2"] = _composite(lambda L, t, x: L.add("Pow", [L.const(2, t), x]))
LOWERINGS["log2"] = _composite(
    lambda L, t, x: L.add("Div", [L.add("Log", [x]), L.const(np.log(2.0), t)]))
LOWERINGS["log10"] = _composite(
    lambda L, t, x: L.add("Div", [L.add("Log", [x]), L.const(np.log(10.0), t)]))
LOWERINGS["deg2rad"] = _composite(lambda L, t, x: L.add("Mul", [x, L.const(np.pi / 180, t)]))
LOWERINGS["rad2deg"] = _composite(lambda L, t, x: L.add("Mul", [x, L.const(180 / np.pi, t)]))
LOWERINGS["trunc"] = _composite(
    lambda L, t, x: L.add("Mul", [L.add("Sign", [x]), L.add("Floor", [L.add("Abs", [x])])]))
# fmod, hypot and logaddexp: in onnx_math.py (zero divisors, overflow, infinities)


def _where(L: Lowering, node: Node, cond: Any, x: Any, y: Any) -> str:
    out = _out(node)
    return L.add("Where", [L.value(cond, np.bool_), L.value(x, out), L.value(y, out)])


def _clip(L: Lowering, node: Node, x: Any, lo: Any = None, hi: Any = None, **kw: Any) -> str:
    _no_kwargs(kw)
    out = _out(node)
    result = L.value(x, out)
    if lo is not None:
        result = extreme(L, "Max", [result, L.value(lo, out)], out)
    if hi is not None:
        result = extreme(L, "Min", [result, L.value(hi, out)], out)
    return result


def _astype(L: Lowering, node: Node, x: Any, dtype: Any = None, **kw: Any) -> str:
    _no_kwargs(kw, ("copy", "casting"))
    # a Cast: float -> int truncates toward zero in both (values out of range differ: NumPy's
    # result for them is undefined too)
    return L.value(x, _out(node))


def _copy(L: Lowering, node: Node, x: Any, **kw: Any) -> str:
    _no_kwargs(kw)
    return L.add("Identity", [L.value(x, _out(node))])


LOWERINGS.update(where=_where, clip=_clip, astype=_astype, copy=_copy)
LOWERINGS["asarray"] = LOWERINGS["array"] = lambda L, node, x, dtype=None: L.value(x, _out(node))


# -- reductions ----------------------------------------------------------------------------------
def _axes(L: Lowering, x: Any, axis: Any) -> list[int] | None:
    if axis is None:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = _ndim(x)
    return [a % n for a in axes]


def _reduce(onnx_op: str, kinds: str = "fiu") -> Callable:
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None,
              keepdims: bool = False, **kw: Any) -> str:
        _no_kwargs(kw)
        out = _out(node)
        if out.kind not in kinds:
            raise ExportError(f"{onnx_op} into {out}")
        value = L.value(x, out)
        wide = _WIDER.get(out) if onnx_op in _NO_SMALL_INTS else None
        if wide is not None:
            value = L.cast(value, out, wide)
        axes = _axes(L, x, axis)
        inputs = [value] if axes is None else [value, L.ints(axes)]
        if onnx_op in ("ReduceMax", "ReduceMin") and L.opset < 18:
            raise ExportError("needs opset 18")
        result = L.add(onnx_op, inputs, keepdims=int(bool(keepdims)))
        return result if wide is None else L.cast(result, wide, out)
    return lower


LOWERINGS["sum"] = _reduce("ReduceSum")
LOWERINGS["prod"] = _reduce("ReduceProd")
LOWERINGS["mean"] = _reduce("ReduceMean", "f")
LOWERINGS["max"] = _reduce("ReduceMax")
LOWERINGS["min"] = _reduce("ReduceMin")


def _bool_reduce(onnx_op: str) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False) -> str:
        as_int = L.cast(L.value(x, np.bool_), np.bool_, np.int32)
        axes = _axes(L, x, axis)
        inputs = [as_int] if axes is None else [as_int, L.ints(axes)]
        return L.cast(L.add(onnx_op, inputs, keepdims=int(bool(keepdims))), np.int32, np.bool_)
    return lower


LOWERINGS["all"] = _bool_reduce("ReduceMin")
LOWERINGS["any"] = _bool_reduce("ReduceMax")


def _var(L: Lowering, node: Node, x: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
         keepdims: bool = False, **kw: Any) -> str:
    _no_kwargs(kw)
    out = _out(node)
    if out.kind != "f" or not isinstance(ddof, int):
        raise ExportError("var/std of a non-float dtype or with a computed ddof")
    value = L.value(x, out)
    axes = _axes(L, x, axis)
    extra = [] if axes is None else [L.ints(axes)]
    mean = L.add("ReduceMean", [value, *extra], keepdims=1)
    dev = L.add("Sub", [value, mean])
    squares = L.add("Mul", [dev, dev])
    if ddof == 0:
        return L.add("ReduceMean", [squares, *extra], keepdims=int(bool(keepdims)))
    # NumPy: sum of squares / (n - ddof), n the count of the reduced elements
    total = L.add("ReduceSum", [squares, *extra], keepdims=int(bool(keepdims)))
    shape = L.add("Shape", [value])
    sizes = shape if axes is None else L.add("Gather", [shape, L.ints(axes)])
    n = L.cast(L.add("ReduceProd", [sizes], keepdims=0), np.int64, out)
    return L.add("Div", [total, L.add("Sub", [n, L.const(ddof, out)])])


LOWERINGS["var"] = _var
LOWERINGS["std"] = lambda L, node, *a, **k: L.add("Sqrt", [_var(L, node, *a, **k)])


def _norm(L: Lowering, node: Node, x: Any, ord: Any = None, axis: Any = None,
          keepdims: bool = False) -> str:
    out = _out(node)
    if ord is not None or out.kind != "f" or (axis is not None and not isinstance(axis, int)):
        raise ExportError("norm other than the 2-norm of a vector or the flattened array")
    value = L.value(x, out)
    axes = _axes(L, x, axis)
    extra = [] if axes is None else [L.ints(axes)]
    return L.add("Sqrt", [L.add("ReduceSumSquare", [value, *extra],
                                keepdims=int(bool(keepdims)))])


def _arg(onnx_op: str) -> Callable:
    def lower(L: Lowering, node: Node, x: Any, axis: Any = None, keepdims: bool = False) -> str:
        value = L.value(x, _compute(L, (x,)))
        if axis is None:
            if keepdims:
                raise ExportError("argmax/argmin over all axes with keepdims")
            value = L.add("Reshape", [value, L.ints([-1])])
            axis = 0
        return L.add(onnx_op, [value], axis=axis % max(_ndim(x), 1), keepdims=int(bool(keepdims)))
    return lower


LOWERINGS.update(norm=_norm, argmax=_arg("ArgMax"), argmin=_arg("ArgMin"))


# -- linear algebra ------------------------------------------------------------------------------
def _matmul(L: Lowering, node: Node, a: Any, b: Any, dtype: Any = None) -> str:
    out = _out(node)
    if out.kind not in "fiu":
        raise ExportError(f"matmul of {out}")
    return L.add("MatMul", [L.value(a, out), L.value(b, out)])


def _dot(L: Lowering, node: Node, a: Any, b: Any) -> str:
    if _ndim(a) == 0 or _ndim(b) == 0:
        out = _out(node)
        return L.add("Mul", [L.value(a, out), L.value(b, out)])
    if _ndim(a) > 2 or _ndim(b) > 2:
        raise ExportError("dot of arrays with more than 2 dimensions")
    return _matmul(L, node, a, b)


def _outer(L: Lowering, node: Node, a: Any, b: Any) -> str:
    out = _out(node)
    col = L.add("Reshape", [L.value(a, out), L.ints([-1, 1])])
    row = L.add("Reshape", [L.value(b, out), L.ints([1, -1])])
    return L.add("Mul", [col, row])


def _einsum(L: Lowering, node: Node, subscripts: Any, *operands: Any, dtype: Any = None) -> str:
    out = _out(node)
    if not isinstance(subscripts, str) or "..." in subscripts or out.kind != "f":
        raise ExportError("einsum other than explicit subscripts over float arrays")
    spec = subscripts.replace(" ", "")
    return L.add("Einsum", [L.value(o, out) for o in operands], equation=spec)


LOWERINGS.update(matmul=_matmul, dot=_dot, outer=_outer, einsum=_einsum)


def _inner(L: Lowering, node: Node, a: Any, b: Any) -> str:
    if _ndim(a) != 1 or _ndim(b) != 1:
        raise ExportError("inner of arrays that are not vectors")
    return _matmul(L, node, a, b)


LOWERINGS["inner"] = _inner
