"""How each canonical op becomes scalar numba code (the numba backend's op table).

``lower_elementwise`` and ``lower_reduction`` decide whether a graph node can go into a fused
kernel and, if so, how: the dtypes its operands are converted to (NumPy's own ufunc loop
resolution, Python scalars kept weak) and the scalar expression computing one element. Any op,
dtype or argument they do not handle raises ``NotFusible`` with the reason; that node then runs
through its NumPy ``impl`` between kernels, so the table only lists what it gets exactly right.

Integer and boolean results are exact (narrow integers are computed wider and wrapped back to
their dtype, as NumPy's loops wrap). Float results round as NumPy's loops do, except where the
module docstrings of ``approx`` (exp, tanh, log) and ``codegen`` (reduction order) say
otherwise, and for the other transcendentals (``LIBM_OPS``), scalar libm calls within 3 ulps of
NumPy's SIMD loops. Every float ufunc NumPy computes within a few ulps has kernel code, so a long
elementwise graph is one kernel whatever functions it calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from npdynamo.backends.numba.approx import APPROXIMATIONS
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymInt

#: dtypes a kernel computes with; anything else (float16, complex, datetimes...) stays in NumPy.
KERNEL_DTYPES = frozenset(
    np.dtype(t)
    for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float32, np.float64)
)
#: Ops whose values are worth keeping in a buffer rather than recomputing in a later loop.
EXPENSIVE_OPS = frozenset("exp tanh log sin cos tan arcsin arccos arctan sinh cosh arcsinh "
                          "arccosh arctanh log2 log10 log1p expm1 exp2 cbrt arctan2 hypot "
                          "logaddexp logaddexp2 fmod float_power".split())
REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "any", "all", "norm"})
#: Loop dtypes a symbolic size (a Python int below 2**53 in practice) converts to exactly as
#: NumPy converts it; narrower integers would need NumPy's range check (OverflowError).
SIZE_OPERAND_DTYPES = frozenset(np.dtype(t) for t in (np.int64, np.float32, np.float64))
_PY_SCALARS = (bool, int, float)


class NotFusible(Exception):
    """This node cannot be part of a kernel; the message says why (shown by ``explain``)."""


@dataclass(frozen=True)
class Operand:
    """One input of a fusible node: a graph value or a constant, and the dtype it is used as."""

    value: object  # a Node, a Python/NumPy scalar, or a constant ndarray
    dtype: np.dtype  # what the scalar expression expects (the ufunc loop's input dtype)


@dataclass(frozen=True)
class Lowered:
    """A fusible elementwise node: ``emit(exprs)`` is its value from its operands' values."""

    operands: tuple[Operand, ...]
    dtype: np.dtype
    emit: Callable[[list[str]], str]
    expensive: bool = False


@dataclass(frozen=True)
class Reduction:
    """A fusible reduction: how one element is folded into the accumulator."""

    kind: str  # sum, prod, max, min, any, all (mean is a sum divided at the end)
    source: Operand
    axes: tuple[int, ...]
    keepdims: bool
    acc_dtype: np.dtype  # the dtype elements are converted to and folded in
    dtype: np.dtype  # the result
    mean: bool = False
    square: bool = False  # fold x * x instead of x (norm)
    root: bool = False  # the result is the square root of the fold (norm)


# -- dtypes, literals and casts --------------------------------------------------------------


def dtype_ctor(dtype: np.dtype) -> str:
    """The numba-visible constructor of a scalar of ``dtype``: ``np.float32`` etc."""
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def literal(value: object, dtype: np.dtype) -> str:
    """Source for the constant ``value`` converted to ``dtype`` the way a ufunc loop converts it."""
    converted = np.array(value).astype(dtype)[()]
    if dtype.kind == "b":
        return "True" if converted else "False"
    if dtype.kind == "f":
        f = float(converted)
        text = "np.nan" if f != f else ("np.inf" if f == np.inf else "-np.inf" if f == -np.inf
                                        else repr(f))
        return f"{dtype_ctor(dtype)}({text})"
    return f"{dtype_ctor(dtype)}({int(converted)})"


def cast(expr: str, src: np.dtype, dst: np.dtype) -> str:
    """``expr`` (a scalar of dtype ``src``) converted to ``dst`` as NumPy's ``astype`` does."""
    if src == dst:
        return expr
    if dst.kind == "b":
        return f"({expr} != 0)"
    return f"{dtype_ctor(dst)}({expr})"


def _wrap(expr: str, dtype: np.dtype) -> str:
    # numba computes narrow integers as int64: converting back wraps exactly as NumPy does.
    return f"{dtype_ctor(dtype)}({expr})" if dtype.kind in "iu" else f"({expr})"


def _supported(dtype: np.dtype, what: str) -> None:
    if dtype not in KERNEL_DTYPES:
        raise NotFusible(f"{what} has dtype {dtype}, which kernels do not compute with")


def _operand_key(name: str, value: object, sizes: bool = False):
    """What ``ufunc.resolve_dtypes`` takes for an operand, checking that a kernel can read it.

    ``sizes``: a symbolic size may be an operand (a weak int; the caller checks the loop)."""
    if isinstance(value, SymInt):
        if not sizes:
            raise NotFusible(f"{name}: a symbolic size as an operand runs as a NumPy call")
        return int
    if isinstance(value, Node):
        meta = value.meta.get("val")
        if isinstance(meta, ScalarMeta) and meta.type is float:
            return float  # a dynamic float, weak as a Python float constant is
        if isinstance(meta, ScalarMeta):
            # NumPy checks a Python int against the loop's dtype on every call (OverflowError)
            raise NotFusible(f"{name}: operand {value.name} is a dynamic Python "
                             f"{meta.type.__name__}: a NumPy call")
        if not isinstance(meta, ArrayMeta):
            raise NotFusible(f"{name}: operand {value.name} is not an array")
        _supported(meta.dtype, f"{name}: operand {value.name}")
        return meta.dtype
    if type(value) is bool:
        return np.dtype(bool)
    if type(value) in (int, float):
        return type(value)
    if isinstance(value, (np.generic, np.ndarray)):
        _supported(value.dtype, f"{name}: a constant operand")
        return value.dtype
    raise NotFusible(f"{name}: operand of type {type(value).__name__}")


def _result_meta(node: Node) -> ArrayMeta:
    meta = node.meta.get("val")
    if not isinstance(meta, ArrayMeta):
        raise NotFusible(f"{node.name}: no array shape/dtype recorded")
    _supported(meta.dtype, f"{node.name}: the result")
    return meta


# -- the elementwise table -------------------------------------------------------------------

Emitter = Callable[[tuple[np.dtype, ...], np.dtype, list[str]], str | None]


_WRAPPING = {"+": "wrapping_add", "-": "wrapping_sub", "*": "wrapping_mul"}


def wrapping_arithmetic(symbol: str, a: str, b: str, dtype: np.dtype) -> str:
    """``a <symbol> b`` of ``dtype`` as kernel source, wrapping on integer overflow as NumPy
    does (``runtime.wrapping_add``: numba's own signed operators leave overflow undefined)."""
    if dtype == np.int64:
        return f"{_WRAPPING[symbol]}(np.int64({a}), np.int64({b}))"
    return _wrap(f"{a} {symbol} {b}", dtype)


def _binary(symbol: str, bool_symbol: str | None = None) -> Emitter:
    def emit(ins, out, e):
        if out.kind == "b":
            return None if bool_symbol is None else f"({e[0]} {bool_symbol} {e[1]})"
        return wrapping_arithmetic(symbol, e[0], e[1], out)

    return emit


def _divide(ins, out, e):
    return f"({e[0]} / {e[1]})" if out.kind == "f" and ins[0] == ins[1] == out else None


def _negative(ins, out, e):
    return None if out.kind == "b" else _wrap(f"-{e[0]}", out)


def _absolute(ins, out, e):
    if out.kind == "f":
        return f"np.abs({e[0]})"
    if out.kind in "ub":
        return e[0]
    return _wrap(f"{e[0]} if {e[0]} >= 0 else -{e[0]}", out)


def _square(ins, out, e):
    return e[0] if out.kind == "b" else wrapping_arithmetic("*", e[0], e[0], out)


def _float_call(fn: str) -> Emitter:
    def emit(ins, out, e):
        return f"{fn}({e[0]})" if out.kind == "f" and ins[0] == out else None

    return emit


def _rounding(fn: str) -> Emitter:
    def emit(ins, out, e):
        if ins[0] != out:
            return None
        return f"{fn}({e[0]})" if out.kind == "f" else e[0]

    return emit


def _reciprocal(ins, out, e):
    return f"({literal(1, out)} / {e[0]})" if out.kind == "f" else None


def _sign(ins, out, e):
    if out.kind == "b":
        return None
    one, zero, x = literal(1, out), literal(0, out), e[0]
    if out.kind == "u":
        return f"({one} if {x} > 0 else {zero})"
    minus = literal(-1, out)
    # zeros (either sign) give +0 and nan gives nan, as NumPy's sign does
    return f"({one} if {x} > 0 else ({minus} if {x} < 0 else ({zero} if {x} == 0 else {x})))"


def _maximum(ins, out, e):
    a, b = e
    if out.kind == "b":
        return f"({a} | {b})"
    nan = f" or {a} != {a}" if out.kind == "f" else ""
    return f"({a} if ({a} > {b}{nan}) else {b})"


def _minimum(ins, out, e):
    a, b = e
    if out.kind == "b":
        return f"({a} & {b})"
    nan = f" or {a} != {a}" if out.kind == "f" else ""
    return f"({a} if ({a} < {b}{nan}) else {b})"


def _fmax(ins, out, e):
    a, b = e
    return f"({a} if ({a} > {b} or {b} != {b}) else {b})" if out.kind == "f" else _maximum(
        ins, out, e)


def _fmin(ins, out, e):
    a, b = e
    return f"({a} if ({a} < {b} or {b} != {b}) else {b})" if out.kind == "f" else _minimum(
        ins, out, e)


def _compare(symbol: str) -> Emitter:
    def emit(ins, out, e):
        # NumPy compares mixed signed/unsigned integers exactly with dedicated loops
        return f"({e[0]} {symbol} {e[1]})" if ins[0] == ins[1] else None

    return emit


def _logical(symbol: str) -> Emitter:
    def emit(ins, out, e):
        return f"(({e[0]} != 0) {symbol} ({e[1]} != 0))"

    return emit


def _logical_not(ins, out, e):
    return f"({e[0]} == 0)"


def _isnan(ins, out, e):
    return f"({e[0]} != {e[0]})" if ins[0].kind == "f" else "False"


def _isinf(ins, out, e):
    return f"(np.abs({e[0]}) == {literal(np.inf, ins[0])})" if ins[0].kind == "f" else "False"


def _isfinite(ins, out, e):
    return f"(np.abs({e[0]}) < {literal(np.inf, ins[0])})" if ins[0].kind == "f" else "True"


def _invert(ins, out, e):
    if out.kind == "b":
        return f"(not {e[0]})"
    return _wrap(f"~{e[0]}", out) if out.kind in "iu" else None


def _bitwise(symbol: str) -> Emitter:
    def emit(ins, out, e):
        return _wrap(f"{e[0]} {symbol} {e[1]}", out) if out.kind in "iub" else None

    return emit


UFUNC_EMITTERS: dict[str, Emitter] = {
    "add": _binary("+", "|"),
    "subtract": _binary("-"),
    "multiply": _binary("*", "&"),
    "divide": _divide,
    "negative": _negative,
    "positive": lambda ins, out, e: e[0],
    "absolute": _absolute,
    "fabs": _float_call("np.abs"),
    "square": _square,
    "sqrt": _float_call("np.sqrt"),
    "reciprocal": _reciprocal,
    "sign": _sign,
    "floor": _rounding("np.floor"),
    "ceil": _rounding("np.ceil"),
    "trunc": _rounding("np.trunc"),
    "rint": _rounding("np.rint"),
    # the identity on real dtypes (complex values are not fused)
    "conjugate": lambda ins, out, e: e[0] if ins[0] == out and out.kind in "iuf" else None,
    "maximum": _maximum,
    "minimum": _minimum,
    "fmax": _fmax,
    "fmin": _fmin,
    "equal": _compare("=="),
    "not_equal": _compare("!="),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "logical_and": _logical("&"),
    "logical_or": _logical("|"),
    "logical_xor": _logical("!="),
    "logical_not": _logical_not,
    "isnan": _isnan,
    "isinf": _isinf,
    "isfinite": _isfinite,
    "invert": _invert,
    "bitwise_and": _bitwise("&"),
    "bitwise_or": _bitwise("|"),
    "bitwise_xor": _bitwise("^"),
}


def _approx(name: str) -> Emitter:
    def emit(ins, out, e):
        helper = APPROXIMATIONS.get((name, out))
        return f"{helper}({e[0]})" if helper is not None and ins[0] == out else None

    return emit


for _name in ("exp", "tanh", "log"):
    UFUNC_EMITTERS[_name] = _approx(_name)


def _same_float(ins: tuple[np.dtype, ...], out: np.dtype) -> bool:
    return out.kind == "f" and all(d == out for d in ins)


def _bits(dtype: np.dtype) -> str:
    return f"f{dtype.itemsize * 8}"


def _float_calls(fn: str) -> Emitter:
    """A float ufunc of any arity computed by numba's own scalar ``np.<fn>`` (libm), for the
    loops whose inputs all have the output's float dtype."""
    def emit(ins, out, e):
        if out.kind != "f" or any(d != out for d in ins):
            return None
        return f"np.{fn}({', '.join(e)})"

    return emit


# Float ufuncs without a vectorised approximation: scalar libm calls (within 3 ulps of NumPy's,
# nan/inf/zeros as NumPy's, measured). A loop with a call does not vectorise, but the graph
# around it stays one pass over memory. (Float // and % are NumPy's own steps, ``runtime``:
# numba's np.remainder differs from NumPy's at zeros, infinities and signs.)
LIBM_OPS = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
            "arccosh", "arctanh", "log2", "log10", "log1p", "expm1", "exp2", "cbrt",
            "deg2rad", "rad2deg", "arctan2", "hypot", "copysign", "logaddexp", "logaddexp2",
            "nextafter", "fmod", "float_power")
for _name in LIBM_OPS:
    UFUNC_EMITTERS[_name] = _float_calls(_name)
UFUNC_EMITTERS["floor_divide"] = (
    lambda ins, out, e: f"floor_divide_{_bits(out)}({e[0]}, {e[1]})" if _same_float(ins, out)
    else None)
UFUNC_EMITTERS["remainder"] = (
    lambda ins, out, e: f"remainder_{_bits(out)}({e[0]}, {e[1]})" if _same_float(ins, out)
    else None)


def _heaviside(ins, out, e):
    if not _same_float(ins, out):
        return None
    x, h0 = e
    return (f"({literal(0, out)} if {x} < 0 else ({h0} if {x} == 0 else "
            f"({x} if {x} != {x} else {literal(1, out)})))")


UFUNC_EMITTERS["heaviside"] = _heaviside
UFUNC_EMITTERS["signbit"] = (
    lambda ins, out, e: f"np.signbit({e[0]})" if ins[0].kind == "f" and out.kind == "b" else None)


# -- lowering a node -------------------------------------------------------------------------


def _op_name(node: Node) -> str:
    return getattr(node.target, "name", None) or getattr(node.target, "__name__", "?")


def lower_elementwise(node: Node) -> Lowered:
    """How ``node`` computes one element, or ``NotFusible``."""
    name = _op_name(node)
    meta = _result_meta(node)
    if name in UFUNC_EMITTERS:
        return _lower_ufunc(node, name, meta)
    if name == "power":
        return _lower_power(node, meta)
    if name == "where":
        return _lower_where(node, meta)
    if name == "clip":
        return _lower_clip(node, meta)
    if name == "astype":
        return _lower_astype(node, meta)
    raise NotFusible(f"{name} has no kernel code (it runs as a NumPy call)")


def _lower_ufunc(node: Node, name: str, meta: ArrayMeta) -> Lowered:
    ufunc = getattr(np, name)
    extra = set(node.kwargs) - {"dtype"}
    if extra or len(node.args) != ufunc.nin or ufunc.nout != 1:
        raise NotFusible(f"{name}: arguments {sorted(extra)} are not handled by kernels")
    keys = tuple(_operand_key(name, a, sizes=True) for a in node.args)
    dtype = node.kwargs.get("dtype")
    sig = {} if dtype is None else {"signature": (None,) * ufunc.nin + (np.dtype(dtype),)}
    try:
        loop = ufunc.resolve_dtypes(keys + (None,), casting="same_kind", **sig)
    except (TypeError, ValueError) as exc:
        raise NotFusible(f"{name}: {exc}") from None
    ins, out = tuple(loop[: ufunc.nin]), loop[-1]
    if any(isinstance(a, SymInt) and d not in SIZE_OPERAND_DTYPES for a, d in zip(node.args, ins)):
        raise NotFusible(f"{name}: a symbolic size used as {'/'.join(map(str, ins))}: NumPy "
                         "checks its range on every call")
    if out != meta.dtype or any(d not in KERNEL_DTYPES for d in loop):
        raise NotFusible(f"{name}: the {'/'.join(map(str, loop))} loop is not handled by kernels")
    emitter = UFUNC_EMITTERS[name]
    probe = emitter(ins, out, [f"_a{i}" for i in range(len(ins))])
    if probe is None:
        raise NotFusible(f"{name} on {'/'.join(map(str, ins))} has no kernel code")
    return Lowered(
        tuple(Operand(a, d) for a, d in zip(node.args, ins)),
        out,
        lambda e, _f=emitter, _i=ins, _o=out: _f(_i, _o, e),
        expensive=name in EXPENSIVE_OPS,
    )


def _integral_constant(value: object) -> int | None:
    if type(value) is int or (type(value) is float and value.is_integer()):
        return int(value)
    return None


def _lower_power(node: Node, meta: ArrayMeta) -> Lowered:
    if node.kwargs or len(node.args) != 2 or isinstance(node.args[1], Node):
        raise NotFusible("power with an array exponent runs as a NumPy call")
    base, exponent = node.args
    k = _integral_constant(exponent)
    ins = np.power.resolve_dtypes((_operand_key("power", base), _operand_key("power", exponent),
                                   None), casting="same_kind")
    out = ins[-1]
    if out != meta.dtype or ins[0] != out or (k is None and out.kind != "f"):
        raise NotFusible("power with this exponent runs as a NumPy call")
    # Integer powers wrap exactly like NumPy's repeated squaring; for floats only x**1 and x**2
    # are exact (the simplify pass rewrites x**3 and x**4, within its documented tolerance).
    if out.kind in "iu" and 0 <= k <= 8:
        def emit(e, _k=k, _o=out):
            return _wrap(" * ".join([e[0]] * _k), _o) if _k else literal(1, _o)
    elif out.kind == "f" and k in (1, 2):
        def emit(e, _k=k):
            return f"({e[0]} * {e[0]})" if _k == 2 else e[0]
    elif out.kind == "f" and type(exponent) in (int, float):
        # libm pow with the exponent as a float (numba's x ** int multiplies, rounding
        # otherwise): within 2 ulps of NumPy's power
        def emit(e, _c=exponent, _o=out):
            return f"np.power({e[0]}, {literal(_c, _o)})"
    else:
        raise NotFusible(f"power {exponent!r} on {out} runs as a NumPy call")
    return Lowered((Operand(base, out),), out, emit)


def _lower_where(node: Node, meta: ArrayMeta) -> Lowered:
    if node.kwargs or len(node.args) != 3:
        raise NotFusible("where: unexpected arguments")
    cond, x, y = node.args
    keys = [_operand_key("where", v) for v in node.args]
    if isinstance(cond, Node) and not isinstance(keys[0], np.dtype):
        raise NotFusible("where: the condition is a dynamic scalar")
    cond_dtype = keys[0] if isinstance(keys[0], np.dtype) else np.dtype(type(cond))
    out = meta.dtype
    return Lowered(
        (Operand(cond, np.dtype(bool) if cond_dtype.kind == "b" else cond_dtype),
         Operand(x, out), Operand(y, out)),
        out,
        lambda e, _c=cond_dtype: f"({e[1]} if {cast(e[0], _c, np.dtype(bool))} else {e[2]})",
    )


def _lower_clip(node: Node, meta: ArrayMeta) -> Lowered:
    if node.kwargs or len(node.args) != 3:
        raise NotFusible("clip: unexpected arguments")
    a, lo, hi = node.args
    out = meta.dtype
    for v in (a, lo, hi):
        if v is not None:
            _operand_key("clip", v)
    if out.kind in "iu":
        # Python-int bounds beyond the dtype's range clip nothing (the op's rule drops them)
        info = np.iinfo(out)
        lo = None if type(lo) is int and lo <= info.min else lo
        hi = None if type(hi) is int and hi >= info.max else hi
        if any(type(b) is int and not info.min <= b <= info.max for b in (lo, hi)):
            raise NotFusible("clip: bound out of the dtype's range")
    operands = [Operand(a, out)] + [Operand(b, out) for b in (lo, hi) if b is not None]
    has_lo, has_hi = lo is not None, hi is not None

    def emit(e, _o=out):
        v, k = e[0], 1
        if has_lo:
            v = _maximum((), _o, [v, e[k]])
            k += 1
        if has_hi:
            v = _minimum((), _o, [v, e[k]])
        return v

    return Lowered(tuple(operands), out, emit)


def _lower_astype(node: Node, meta: ArrayMeta) -> Lowered:
    (x,) = node.args
    src = _operand_key("astype", x)
    if not isinstance(src, np.dtype):
        raise NotFusible("astype of a Python scalar")
    dst = meta.dtype
    if src.kind == "f" and dst.kind in "iu":
        # NaN, inf and out-of-range floats have no defined integer value in LLVM
        raise NotFusible("astype from float to integer runs as a NumPy call")
    return Lowered((Operand(x, src),), dst, lambda e, _s=src, _d=dst: cast(e[0], _s, _d))


# -- reductions ------------------------------------------------------------------------------


def lower_reduction(node: Node) -> Reduction:
    """How ``node`` folds its input, or ``NotFusible``."""
    name = _op_name(node)
    if name not in REDUCTIONS:
        raise NotFusible(f"{name} has no kernel code (it runs as a NumPy call)")
    meta = _result_meta(node)
    if len(node.args) != 1:
        raise NotFusible(f"{name}: unexpected arguments")
    (src,) = node.args
    if not isinstance(src, Node):
        raise NotFusible(f"{name} of a constant")
    src_meta = src.meta.get("val")
    if not isinstance(src_meta, ArrayMeta) or src_meta.dtype not in KERNEL_DTYPES:
        raise NotFusible(f"{name}: input dtype not handled by kernels")
    kwargs = dict(node.kwargs)
    if name == "norm" and src_meta.dtype.kind != "f":
        raise NotFusible("norm: integer and boolean input runs as a NumPy call")
    axis = kwargs.pop("axis", None)
    keepdims = bool(kwargs.pop("keepdims", False))
    dtype = kwargs.pop("dtype", None)
    if kwargs:
        raise NotFusible(f"{name}: arguments {sorted(kwargs)} are not handled by kernels")
    ndim = src_meta.ndim
    if axis is None:
        axes = tuple(range(ndim))
    else:
        raw = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(sorted(a % ndim for a in raw)) if ndim else ()
    out = meta.dtype
    if name == "norm":  # without ord: sqrt of the sum of squares (Frobenius for two axes)
        return Reduction("sum", Operand(src, src_meta.dtype), axes, keepdims, out, out,
                         square=True, root=True)
    if name == "mean":
        acc = np.dtype(dtype) if dtype is not None else (
            np.dtype(np.float64) if src_meta.dtype.kind in "biu" else src_meta.dtype)
        if acc != out or acc.kind != "f":
            raise NotFusible("mean: this dtype combination runs as a NumPy call")
        return Reduction("sum", Operand(src, src_meta.dtype), axes, keepdims, acc, out, mean=True)
    if name in ("sum", "prod"):
        return Reduction(name, Operand(src, src_meta.dtype), axes, keepdims, out, out)
    if name in ("max", "min"):
        return Reduction(name, Operand(src, src_meta.dtype), axes, keepdims, out, out)
    # any/all read their elements as booleans (x != 0: nan is true, as in NumPy)
    return Reduction(name, Operand(src, np.dtype(bool)), axes, keepdims, np.dtype(bool), out)
