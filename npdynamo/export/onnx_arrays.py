"""The ONNX form of array building, diagonals, products of arrays, 1-D convolution and the
ops that write into a copy (``copyto``, ``putmask``, ``fill_diagonal``, ``put_along_axis``,
the boolean-mask updates ``mask_update``/``mask_apply``/``masked_reduce``); see ``onnx_ops.py``.

A boolean-mask update ``x[m] = f(x[m], ...)`` is elementwise, so it is written as
``Where(m, f(x, ...), x)``: ``f`` computed on every element, kept where the mask holds (the
values it computes elsewhere are dropped, as NumPy never computes them). ``put_along_axis``
writes only a scalar (ONNX leaves the order of repeated indices open; one value makes it
irrelevant); ``putmask`` repeats its values over the flat positions as NumPy does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.export.onnx_math import divmod_names, where
from npdynamo.export.onnx_ops import _ndim, _no_kwargs, _out, _shape
from npdynamo.export.onnx_shapes import _at_least
from npdynamo.export.onnx_writer import Lowering
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node
from npdynamo.ops.inplace_functions import run_program

LOWERINGS: dict[str, Callable[..., Any]] = {}
_MIN = np.iinfo(np.int64).min
_MAX = np.iinfo(np.int64).max


def _as(L: Lowering, node: Node, x: Any) -> str:
    return L.value(x, _out(node))


def _flatten(L: Lowering, value: str) -> str:
    return L.add("Reshape", [value, L.ints([-1])])


def _static_len(x: Any) -> int:
    shape = _shape(x)
    if len(shape) != 1 or type(shape[0]) is not int:
        raise ExportError("an array that is not 1-D of a static length")
    return shape[0]


# -- building ------------------------------------------------------------------------------------
def _append(L: Lowering, node: Node, x: Any, values: Any, axis: Any = None) -> str:
    if axis is None:
        return L.add("Concat", [_flatten(L, _as(L, node, x)), _flatten(L, _as(L, node, values))],
                     axis=0)
    return L.add("Concat", [_as(L, node, x), _as(L, node, values)], axis=axis % _ndim(x))


def _pad(L: Lowering, node: Node, x: Any, pad_width: Any, mode: str = "constant",
         constant_values: Any = 0, **kw: Any) -> str:
    _no_kwargs(kw)
    n = _ndim(x)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (n, 2))
    except (TypeError, ValueError):
        raise ExportError("pad widths that are not constant ints") from None
    if mode not in ("constant", "edge", "reflect") or np.ndim(constant_values) != 0:
        raise ExportError(f"pad mode {mode!r} or per-axis constants")
    inputs = [_as(L, node, x), L.ints([int(v) for v in widths[:, 0]] +
                                      [int(v) for v in widths[:, 1]])]
    if mode == "constant":
        inputs.append(L.value(constant_values, _out(node)))
    return L.add("Pad", inputs, mode=mode)


def _repeat(L: Lowering, node: Node, x: Any, repeats: Any, axis: Any = None) -> str:
    if type(repeats) is not int:
        raise ExportError("repeat with repeats per element")
    value = _as(L, node, x)
    if axis is None:
        value, axis = _flatten(L, value), 0
    axis %= max(_ndim(x), 1)
    grown = L.add("Unsqueeze", [value, L.ints([axis + 1])])
    target = L.add("Concat", [L.add("Shape", [value], end=axis + 1), L.ints([repeats]),
                              L.add("Shape", [value], start=axis + 1)], axis=0)
    spread = L.add("Expand", [grown, target])
    final = L.add("Concat", [L.add("Shape", [value], end=axis), L.ints([-1]),
                             L.add("Shape", [value], start=axis + 1)], axis=0)
    return L.add("Reshape", [spread, final])


def _flip(L: Lowering, value: str, axis: int) -> str:
    return L.add("Slice", [value, L.ints([-1]), L.ints([_MIN]), L.ints([axis]), L.ints([-1])])


def _rot90(L: Lowering, node: Node, m: Any, k: int = 1, axes: Any = (0, 1)) -> str:
    n = _ndim(m)
    a0, a1 = (a % n for a in axes)
    value = _as(L, node, m)
    k %= 4
    perm = list(range(n))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 0:
        return L.add("Identity", [value])
    if k == 2:
        return _flip(L, _flip(L, value, a0), a1)
    if k == 1:
        return L.add("Transpose", [_flip(L, value, a1)], perm=perm)
    return _flip(L, L.add("Transpose", [value], perm=perm), a1)


def _atleast(n: int) -> Callable:
    return lambda L, node, x: _at_least(L, node, x, n)


LOWERINGS.update(append=_append, pad=_pad, repeat=_repeat, rot90=_rot90,
                 atleast_1d=_atleast(1), atleast_2d=_atleast(2), atleast_3d=_atleast(3))


# -- diagonals -----------------------------------------------------------------------------------
def _grid(L: Lowering, rows: str, cols: str) -> tuple[str, str]:
    """Row and column indices (int64 [r, 1] and [1, c]) for sizes given as int64 [1]."""
    zero, one = L.const(0, np.int64), L.const(1, np.int64)
    r = L.add("Range", [zero, L.add("Squeeze", [rows, L.ints([0])]), one])
    c = L.add("Range", [zero, L.add("Squeeze", [cols, L.ints([0])]), one])
    return L.add("Unsqueeze", [r, L.ints([1])]), L.add("Unsqueeze", [c, L.ints([0])])


def _diag_matrix(L: Lowering, node: Node, v: str, k: int) -> str:
    t = _out(node)
    size = L.add("Add", [L.add("Shape", [v]), L.ints([abs(k)])])
    r, c = _grid(L, size, size)
    zeros = L.add("ConstantOfShape", [L.ints([abs(k)])],
                  value=L.onnx.numpy_helper.from_array(np.zeros(1, t), L.fresh("zero")))
    padded = L.add("Concat", [v, zeros], axis=0)
    on = L.add("Equal", [L.add("Sub", [c, r]), L.const(k, np.int64)])
    return where(L, on, L.add("Gather", [padded, L.add("Min", [r, c])]), L.const(0, t))


def diagonal_of(L: Lowering, value: str, k: int) -> str:
    rows = L.add("Shape", [value], start=0, end=1)
    cols = L.add("Shape", [value], start=1, end=2)
    if k >= 0:
        length = L.add("Min", [rows, L.add("Sub", [cols, L.ints([k])])])
    else:
        length = L.add("Min", [L.add("Add", [rows, L.ints([k])]), cols])
    length = L.add("Max", [length, L.ints([0])])
    i = L.add("Range", [L.const(0, np.int64), L.add("Squeeze", [length, L.ints([0])]),
                        L.const(1, np.int64)])
    r = i if k >= 0 else L.add("Add", [i, L.const(-k, np.int64)])
    c = L.add("Add", [i, L.const(k, np.int64)]) if k >= 0 else i
    pairs = L.add("Concat", [L.add("Unsqueeze", [r, L.ints([1])]),
                             L.add("Unsqueeze", [c, L.ints([1])])], axis=1)
    return L.add("GatherND", [value, pairs])


def _diag(L: Lowering, node: Node, v: Any, k: int = 0) -> str:
    if not isinstance(k, int) or _ndim(v) not in (1, 2):
        raise ExportError("diag with a computed k")
    value = _as(L, node, v)
    return _diag_matrix(L, node, value, k) if _ndim(v) == 1 else diagonal_of(L, value, k)


def _diagflat(L: Lowering, node: Node, v: Any, k: int = 0) -> str:
    if not isinstance(k, int):
        raise ExportError("diagflat with a computed k")
    return _diag_matrix(L, node, _flatten(L, _as(L, node, v)), k)


def _diagonal(L: Lowering, node: Node, x: Any, offset: int = 0, axis1: int = 0,
              axis2: int = 1) -> str:
    if _ndim(x) != 2 or (axis1 % 2, axis2 % 2) != (0, 1) or not isinstance(offset, int):
        raise ExportError("diagonal of an array that is not a matrix")
    return diagonal_of(L, _as(L, node, x), offset)


def _ediff1d(L: Lowering, node: Node, ary: Any) -> str:
    flat = _flatten(L, _as(L, node, ary))
    upper = L.add("Slice", [flat, L.ints([1]), L.ints([_MAX]), L.ints([0])])
    lower = L.add("Slice", [flat, L.ints([0]), L.ints([-1]), L.ints([0])])
    return L.add("Sub", [upper, lower])


LOWERINGS.update(diag=_diag, diagflat=_diagflat, diagonal=_diagonal, ediff1d=_ediff1d)


# -- products ------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _kron(L: Lowering, node: Node, a: Any, b: Any) -> str:
    t = _out(node)
    n = max(_ndim(a), _ndim(b))
    values = []
    for v in (a, b):
        value = L.value(v, t)
        if _ndim(v) < n:
            value = L.add("Unsqueeze", [value, L.ints(list(range(n - _ndim(v))))])
        values.append(value)
    # kron[i0*B0 + j0, ...] = a[i0, ...] * b[j0, ...]: an outer product, axes interleaved
    expanded = [L.add("Unsqueeze", [values[0], L.ints([2 * d + 1 for d in range(n)])]),
                L.add("Unsqueeze", [values[1], L.ints([2 * d for d in range(n)])])]
    product = L.add("Mul", expanded)
    shape = L.add("Mul", [L.add("Shape", [values[0]]), L.add("Shape", [values[1]])])
    return L.add("Reshape", [product, shape])


def _tensordot(L: Lowering, node: Node, a: Any, b: Any, axes: Any = 2) -> str:
    t = _out(node)
    na, nb = _ndim(a), _ndim(b)
    if isinstance(axes, int):
        left, right = list(range(na - axes, na)), list(range(axes))
    else:
        left, right = ([x] if isinstance(x, int) else list(x) for x in axes)
    left, right = [x % na for x in left], [x % nb for x in right]
    if na + nb > len(_LETTERS) or t.kind not in "fi":
        raise ExportError("tensordot of these arrays")
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(left, right):
        sb[j] = sa[i]
    out = [s for i, s in enumerate(sa) if i not in left] + [
        s for j, s in enumerate(sb) if j not in right]
    equation = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
    return L.add("Einsum", [L.value(a, t), L.value(b, t)], equation=equation)


def _matrix_power(L: Lowering, node: Node, a: Any, n: Any) -> str:
    if type(n) is not int or n < 0:
        raise ExportError("matrix_power with a negative or computed exponent")
    value = _as(L, node, a)
    if n == 0:
        if _ndim(a) != 2:
            raise ExportError("matrix_power(a, 0) of a stack of matrices")
        return L.add("EyeLike", [value])
    if n <= 3:  # NumPy's own products for small powers
        result = value
        for _ in range(n - 1):
            result = L.add("MatMul", [result, value])
        return result if n > 1 else L.add("Identity", [value])
    z = result = None
    while n > 0:  # NumPy's binary decomposition, product for product
        z = value if z is None else L.add("MatMul", [z, z])
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else L.add("MatMul", [result, z])
    return result


def _cross(L: Lowering, node: Node, a: Any, b: Any, axisa: int = -1, axisb: int = -1,
           axisc: int = -1, **kw: Any) -> str:
    _no_kwargs(kw, ("axis",) if kw.get("axis") in (None, -1) else ())
    if (axisa, axisb, axisc) != (-1, -1, -1):
        raise ExportError("cross along an axis that is not the last")
    t = _out(node)
    size_a, size_b = _shape(a)[-1], _shape(b)[-1]
    if (size_a, size_b) != (3, 3):
        raise ExportError("cross of vectors that are not 3-vectors")
    x, y = L.value(a, t), L.value(b, t)
    xs = [L.add("Gather", [x, L.const(i, np.int64)], axis=-1) for i in range(3)]
    ys = [L.add("Gather", [y, L.const(i, np.int64)], axis=-1) for i in range(3)]

    def term(i: int, j: int) -> str:
        return L.add("Sub", [L.add("Mul", [xs[i], ys[j]]), L.add("Mul", [xs[j], ys[i]])])

    parts = [term(1, 2), term(2, 0), term(0, 1)]
    return L.add("Concat", [L.add("Unsqueeze", [p, L.ints([-1])]) for p in parts], axis=-1)


def _correlate_valid(L: Lowering, a: str, v: str, lv: int, la: int, left: int,
                     right: int, t: np.dtype) -> str:
    """Sliding dot products of ``a`` padded with ``left``/``right`` zeros with ``v``."""
    padded = L.add("Pad", [a, L.ints([left, right]), L.const(0, t)])
    count = la + left + right - lv + 1
    starts = L.add("Unsqueeze", [L.add("Range", [L.const(0, np.int64), L.const(count, np.int64),
                                                 L.const(1, np.int64)]), L.ints([1])])
    offsets = L.ints([list(range(lv))])
    windows = L.add("Gather", [padded, L.add("Add", [starts, offsets])])
    return L.add("MatMul", [windows, v])


def _correlation(reverse: bool) -> Callable:
    def lower(L: Lowering, node: Node, a: Any, v: Any, mode: str = "full") -> str:
        t = _out(node)
        la, lv = _static_len(a), _static_len(v)
        if t.kind not in "fi" or lv == 0 or la == 0:
            raise ExportError(f"convolve/correlate of {t} or of empty arrays")
        x, y = L.value(a, t), L.value(v, t)
        if reverse and lv > la:  # NumPy's convolve swaps so the longer one slides
            x, y, la, lv = y, x, lv, la
        elif lv > la:
            raise ExportError("correlate with the second array longer than the first")
        if reverse:
            y = L.add("Slice", [y, L.ints([-1]), L.ints([_MIN]), L.ints([0]), L.ints([-1])])
        pads = {"full": (lv - 1, lv - 1), "same": (lv // 2, lv - 1 - lv // 2),
                "valid": (0, 0)}.get(mode)
        if pads is None:
            raise ExportError(f"mode {mode!r}")
        return _correlate_valid(L, x, y, lv, la, *pads, t)
    return lower


LOWERINGS.update(kron=_kron, tensordot=_tensordot, matrix_power=_matrix_power, cross=_cross,
                 convolve=_correlation(True), correlate=_correlation(False))
LOWERINGS["real"] = lambda L, node, x: L.add("Identity", [_real(L, node, x)])
LOWERINGS["imag"] = lambda L, node, x: L.add("ConstantOfShape", [L.add("Shape", [_real(
    L, node, x)])], value=L.onnx.numpy_helper.from_array(np.zeros(1, _out(node))))  # not x * 0:
# NaN for an infinite x


def _real(L: Lowering, node: Node, x: Any) -> str:
    if _out(node).kind not in "biuf":
        raise ExportError("complex numbers have no ONNX form")
    return _as(L, node, x)


# -- writes into a copy --------------------------------------------------------------------------
def _copyto(L: Lowering, node: Node, dst: Any, src: Any, where_: Any = None,
            casting: str = "same_kind", **kw: Any) -> str:
    where_ = kw.pop("where", where_)
    _no_kwargs(kw)
    t = _out(node)
    target = L.value(dst, t)
    value = L.add("Expand", [L.value(src, t), L.add("Shape", [target])])
    if where_ is None:
        return value
    return where(L, L.value(where_, np.bool_), value, target)


def _putmask(L: Lowering, node: Node, a: Any, mask: Any, values: Any) -> str:
    t = _out(node)
    target = L.value(a, t)
    shape = L.add("Shape", [target])
    flags = L.add("Reshape", [L.value(mask, np.bool_), shape])
    if _ndim(values) == 0:
        return where(L, flags, L.value(values, t), target)
    flat = _flatten(L, L.value(values, t))
    size = L.add("ReduceProd", [shape], keepdims=0)
    positions = L.add("Range", [L.const(0, np.int64), size, L.const(1, np.int64)])
    count = L.add("Squeeze", [L.add("Shape", [flat]), L.ints([0])])
    cycled = L.add("Gather", [flat, L.add("Mod", [positions, count], fmod=0)])
    return where(L, flags, L.add("Reshape", [cycled, shape]), target)


def _fill_diagonal(L: Lowering, node: Node, a: Any, val: Any, wrap: bool = False) -> str:
    if _ndim(a) != 2 or _ndim(val) != 0:
        raise ExportError("fill_diagonal of an array that is not a matrix, or with several "
                          "values")
    t = _out(node)
    target = L.value(a, t)
    rows = L.add("Shape", [target], start=0, end=1)
    cols = L.add("Shape", [target], start=1, end=2)
    r, c = _grid(L, rows, cols)
    flat = L.add("Add", [L.add("Mul", [r, cols]), c])
    # NumPy writes a.flat[::cols + 1], up to cols * cols unless wrap
    on = L.add("Equal", [L.add("Mod", [flat, L.add("Add", [cols, L.ints([1])])], fmod=0),
                         L.const(0, np.int64)])
    if not wrap:
        on = L.add("And", [on, L.add("Less", [flat, L.add("Mul", [cols, cols])])])
    return where(L, on, L.value(val, t), target)


def _put_along_axis(L: Lowering, node: Node, arr: Any, indices: Any, values: Any,
                    axis: Any = None) -> str:
    if axis is None or _ndim(values) != 0:
        raise ExportError("put_along_axis with axis=None or with several values (ONNX "
                          "leaves the order of repeated indices open)")
    t = _out(node)
    target = L.value(arr, t)
    axis %= _ndim(arr)
    idx = L.value(indices, np.int64)
    size = L.add("Shape", [target], start=axis, end=axis + 1)
    idx = where(L, L.add("Less", [idx, L.const(0, np.int64)]), L.add("Add", [idx, size]), idx)
    shape = L.add("Shape", [idx])
    updates = L.add("Expand", [L.value(values, t), shape])
    return L.add("ScatterElements", [target, idx, updates], axis=axis)


LOWERINGS.update(copyto=_copyto, putmask=_putmask, fill_diagonal=_fill_diagonal,
                 put_along_axis=_put_along_axis)


# -- boolean-mask updates ------------------------------------------------------------------------
_ONNX_BINARY = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "**": "Pow",
                "<": "Less", "<=": "LessOrEqual", ">": "Greater", ">=": "GreaterOrEqual",
                "==": "Equal", "&": "BitwiseAnd", "|": "BitwiseOr", "^": "BitwiseXor"}
_PY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
       "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<": operator.lt,
       "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne, "&": operator.and_, "|": operator.or_, "^": operator.xor}
_UFUNCS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/",
           "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
           "bitwise_or": "|", "bitwise_xor": "^"}


def _stand_in(v: Any) -> Any:
    """A one-element array of ``v``'s dtype, or ``v`` itself for a Python number."""
    return v if not isinstance(v, tuple) else np.ones(1, v[1])


def binary(L: Lowering, op: str, a: Any, b: Any) -> tuple[str, np.dtype]:
    """``a op b`` as Python computes it on arrays; operands are (name, dtype) or numbers."""
    if op not in _PY:
        raise ExportError(f"the operator {op} in a masked expression")
    with np.errstate(all="ignore"):
        result = _PY[op](_stand_in(a), _stand_in(b))
    out = np.asarray(result).dtype
    if op in ("<", "<=", ">", ">=", "==", "!="):
        work = np.result_type(*(x[1] if isinstance(x, tuple) else x for x in (a, b)))
    else:
        work = out
    if op in ("**", "/") and work.kind != "f" or op in "&|^" and work.kind not in "biu":
        raise ExportError(f"{op} on {work} in a masked expression")
    x, y = (L.cast(v[0], v[1], work) if isinstance(v, tuple) else L.value(v, work)
            for v in (a, b))
    if op in ("//", "%"):
        return divmod_names(L, x, y, work)[op == "%"], out
    if op == "!=":
        return L.add("Not", [L.add("Equal", [x, y])]), out
    name = _ONNX_BINARY[op]
    if work.kind == "b" and name.startswith("Bitwise"):  # And, Or, Xor on booleans
        name = name[len("Bitwise"):]
    return L.add(name, [x, y]), out


def _number(c: Any) -> Any:
    if type(c) not in (bool, int, float):
        raise ExportError("a constant that is not a Python number in a masked expression")
    return c


def _run_program(L: Lowering, program: tuple, leaves: list[tuple[str, np.dtype]]) -> tuple:
    result = run_program(program, leaves.__getitem__,
                         lambda op, a, b: binary(L, op, a, b), _number)
    if not isinstance(result, tuple):
        raise ExportError("a masked expression without an array")
    return result


def _mask_for(L: Lowering, mask: Any, target_ndim: int) -> str:
    flags = L.value(mask, np.bool_)
    extra = target_ndim - _ndim(mask)
    if extra:
        flags = L.add("Unsqueeze", [flags, L.ints(list(range(_ndim(mask), target_ndim)))])
    return flags


def _mask_apply(L: Lowering, node: Node, current: Any, mask: Any, *arrays: Any,
                program: tuple) -> str:
    t = _out(node)
    leaves = [(L.value(a, np.result_type(L.dtype_of(a))), np.result_type(L.dtype_of(a)))
              for a in arrays]
    value, dtype = _run_program(L, program, leaves)
    target = L.value(current, t)
    return where(L, _mask_for(L, mask, _ndim(current)), L.cast(value, dtype, t), target)


def _mask_update(L: Lowering, node: Node, current: Any, array: Any, read_mask: Any,
                 store_mask: Any, value: Any, ufunc: str) -> str:
    if read_mask is not store_mask or ufunc not in _UFUNCS:
        raise ExportError("a masked update reading and writing through different masks")
    t = _out(node)
    source_t = np.result_type(L.dtype_of(array))
    operand = value
    if isinstance(value, Node):
        dtype = np.result_type(L.dtype_of(value))
        name = L.value(value, dtype)
        if _ndim(value) > len(_shape(array)) - _ndim(read_mask):  # the selection's axis, 1
            name = L.add("Squeeze", [name, L.ints([0])])
        operand = (name, dtype)
    elif type(operand) not in (bool, int, float):
        raise ExportError("a masked update by something that is not an array or a number")
    result, dtype = binary(L, _UFUNCS[ufunc], (L.value(array, source_t), source_t), operand)
    updated = L.cast(result, dtype, source_t)  # in place: the result is cast back
    return where(L, _mask_for(L, store_mask, _ndim(current)), L.cast(updated, source_t, t),
                 L.value(current, t))


def _masked_reduce(L: Lowering, node: Node, mask: Any, *arrays: Any, program: tuple,
                   kind: str) -> str:
    t = _out(node)
    leaves = [(L.value(a, np.result_type(L.dtype_of(a))), np.result_type(L.dtype_of(a)))
              for a in arrays]
    value, dtype = _run_program(L, program, leaves)
    full = max(_ndim(a) for a in arrays)
    flags = _mask_for(L, mask, full)
    work = np.result_type(dtype, t) if kind == "sum" else t
    chosen = where(L, flags, L.cast(value, dtype, work), L.const(0, work))
    total = L.add("ReduceSum", [_flatten(L, chosen)], keepdims=0)
    if kind == "sum":
        return L.cast(total, work, t)
    ones = L.add("Expand", [L.cast(flags, np.bool_, t), L.add("Shape", [chosen])])
    return L.add("Div", [total, L.add("ReduceSum", [_flatten(L, ones)], keepdims=0)])


LOWERINGS.update(mask_apply=_mask_apply, mask_update=_mask_update,
                 masked_reduce=_masked_reduce)
