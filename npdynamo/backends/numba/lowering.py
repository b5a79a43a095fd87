"""How each canonical op becomes scalar numba code (with ``ufunc_table``, its elementwise table).

``lower_elementwise`` and ``lower_reduction`` decide whether a graph node can go into a fused
kernel and, if so, how: the dtypes its operands are converted to (NumPy's own ufunc loop
resolution, Python scalars kept weak) and the scalar expression computing one element. Any op,
dtype or argument they do not handle raises ``NotFusible`` with the reason; that node then runs
through its NumPy ``impl`` between kernels, so the table only lists what it gets exactly right.

Integer and boolean results are exact (narrow integers are computed wider and wrapped back to
their dtype, as NumPy's loops wrap). Float results round as NumPy's loops do, except where the
module docstrings of ``approx`` (exp, tanh, log) and ``codegen`` (reduction order) say
otherwise, and for the other transcendentals (``ufunc_table.LIBM_OPS``), scalar libm calls
within 3 ulps of NumPy's SIMD loops. Every float ufunc NumPy computes within a few ulps has
kernel code, so a long elementwise graph is one kernel whatever functions it calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from npdynamo.backends.numba.ufunc_table import UFUNC_EMITTERS, cast, literal, wrap
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymInt

#: dtypes a kernel computes with; anything else (float16, long double, datetimes...) stays in
#: NumPy. Complex values have the table's arithmetic, abs, conjugate, == and != (NumPy's loops
#: step for step, ``runtime``); their other ufuncs and orderings are NumPy calls.
KERNEL_DTYPES = frozenset(
    np.dtype(t)
    for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float32, np.float64, np.complex64, np.complex128)
)
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
    #: the emitter also reads the element's own indices along the value's last ``indexed``
    #: axes (appended to its operand expressions as ``np.int64`` values): ``triu``, ``tril``
    indexed: int = 0


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
    if type(value) in (int, float, complex):
        return type(value)  # weak, as NumPy treats Python scalars
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




# -- lowering a node -------------------------------------------------------------------------


def _op_name(node: Node) -> str:
    return getattr(node.target, "name", None) or getattr(node.target, "__name__", "?")


def lower_elementwise(node: Node) -> Lowered:
    """How ``node`` computes one element, or ``NotFusible``."""
    name = _op_name(node)
    meta = _result_meta(node)
    if name in UFUNC_EMITTERS:
        return _lower_ufunc(node, name, meta)
    if name in INDEXED_OPS:
        return _lower_triangle(node, name, meta)
    lower = _LOWERINGS.get(name)
    if lower is None:
        raise NotFusible(f"{name} has no kernel code (it runs as a NumPy call)")
    return lower(node, meta)


def _lower_ufunc(node: Node, name: str, meta: ArrayMeta) -> Lowered:
    ufunc = getattr(np, name)
    extra = set(node.kwargs) - {"dtype"}
    if extra or len(node.args) != ufunc.nin or ufunc.nout != 1:
        raise NotFusible(f"{name}: arguments {sorted(extra)} are not handled by kernels")
    # a compiled loop's Python int (``loop_scalars.mark_int64``) is weak like a constant int;
    # kept below only where it converts exactly (int64/float64), as ``where`` takes it
    keys = tuple(int if _loop_int(a) else _operand_key(name, a, sizes=True)
                 for a in node.args)
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
    if any(_loop_int(a) and d not in WIDE_INT_DTYPES for a, d in zip(node.args, ins)):
        # NumPy checks a Python int against the loop's dtype on every call (OverflowError)
        raise NotFusible(f"{name}: a dynamic Python int used as {'/'.join(map(str, ins))}: "
                         "a NumPy call")
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
        expensive=node.target.cost == "expensive",  # worth a buffer rather than recomputing
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
            return wrap(" * ".join([e[0]] * _k), _o) if _k else literal(1, _o)
    elif out.kind == "f" and k in (1, 2):
        def emit(e, _k=k):
            return f"({e[0]} * {e[0]})" if _k == 2 else e[0]
    elif out.kind == "c" and k in (1, 2):
        # np.power's complex z ** 2 multiplies as C does, without the fused multiply-adds of
        # np.square (ndarray.__pow__'s shortcut: the graph's power is np.power's); it gives
        # +0 for a zero of any sign first
        zero = literal(0, out)

        def emit(e, _k=k, _zero=zero):
            z = e[0]
            return f"({_zero} if {z} == {_zero} else {f'({z} * {z})' if _k == 2 else z})"
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
    if any(isinstance(v, SymInt) for v in (x, y)) and meta.dtype not in SIZE_OPERAND_DTYPES:
        raise NotFusible(f"where: a symbolic size as {meta.dtype}: NumPy checks its range")
    keys = [int if v is not cond and _dynamic_int(v) and meta.dtype in WIDE_INT_DTYPES
            else _operand_key("where", v, sizes=v is not cond) for v in node.args]
    point = _one_point(cond)
    if point is not None:
        return _lower_point_where(point, cond.ndim, x, y, meta)
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


#: Where a dynamic Python int converts exactly (capture guards int inputs to int64's range).
WIDE_INT_DTYPES = frozenset(np.dtype(t) for t in (np.int64, np.float64))


def _dynamic_int(value: object) -> bool:
    meta = value.meta.get("val") if isinstance(value, Node) else None
    return isinstance(meta, ScalarMeta) and meta.type is int


def _loop_int(value: object) -> bool:
    """A Python int the compiled loop holds as an int64 (``loop_scalars.mark_int64``)."""
    return _dynamic_int(value) and bool(value.meta.get("int64"))


def _one_point(cond: object) -> dict[int, int] | None:
    """A constant boolean condition true at one point, of size 1 or full along each axis (a
    write ``z[:, :, 1] = v`` rewritten as a selection): axis -> coordinate, else None."""
    if not (isinstance(cond, np.ndarray) and cond.dtype == bool and cond.ndim
            and np.count_nonzero(cond) == 1):
        return None
    where = np.argwhere(cond)[0]
    return {t: int(c) for t, c in enumerate(where) if cond.shape[t] > 1}


def _lower_point_where(point: dict[int, int], ndim: int, x: object, y: object,
                       meta: ArrayMeta) -> Lowered:
    """``where`` on a one-point constant condition: index comparisons, no condition array
    read (the condition is aligned with the value's last axes, as broadcasting aligns it)."""
    out = meta.dtype

    def emit(e, _point=point):
        a, b, *idx = e
        test = " and ".join(f"{idx[t]} == {c}" for t, c in _point.items()) or "True"
        return f"({a} if {test} else {b})"

    return Lowered((Operand(x, out), Operand(y, out)), out, emit, indexed=ndim)


def _lower_clip(node: Node, meta: ArrayMeta) -> Lowered:
    if node.kwargs or len(node.args) != 3:
        raise NotFusible("clip: unexpected arguments")
    a, lo, hi = node.args
    out = meta.dtype
    if out.kind == "c":
        raise NotFusible("clip of complex values (NumPy orders them lexicographically)")
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
            v = UFUNC_EMITTERS["maximum"]((), _o, [v, e[k]])
            k += 1
        if has_hi:
            v = UFUNC_EMITTERS["minimum"]((), _o, [v, e[k]])
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
    if src.kind == "c" and dst.kind != "c":
        raise NotFusible("astype from complex to real runs as a NumPy call (it warns)")
    return Lowered((Operand(x, src),), dst, lambda e, _s=src, _d=dst: cast(e[0], _s, _d))


#: op name -> how one element of it is computed (ufuncs and triangles are looked up by name)
def _lower_abs_compare(node: Node, meta: ArrayMeta) -> Lowered:
    """``magnitudes.ABS_COMPARE``: ``abs(z) <op> c`` (the rewrite checked the loop's dtypes)."""
    z, bound = node.args
    complex_dtype = _operand_key("abs_compare", z)
    part = np.dtype(complex_dtype.type(0).real.dtype)
    _operand_key("abs_compare", bound)  # (a kernel can read it)
    helper = f"complex_abs_compare_c{complex_dtype.itemsize * 8}"
    return Lowered((Operand(z, complex_dtype), Operand(bound, part)), np.dtype(bool),
                   lambda e, _h=helper, _c=node.kwargs["code"]: f"{_h}({e[0]}, {e[1]}, {_c})")


_LOWERINGS: dict[str, Callable[[Node, ArrayMeta], Lowered]] = {
    "power": _lower_power,
    "where": _lower_where,
    "clip": _lower_clip,
    "astype": _lower_astype,
    "abs_compare": _lower_abs_compare,
}

#: Ops elementwise in their input but whose value depends on the element's position: fusion
#: treats them as elementwise although their op kind is not (NumPy does not broadcast them).
INDEXED_OPS = frozenset({"triu", "tril"})


def _lower_triangle(node: Node, name: str, meta: ArrayMeta) -> Lowered:
    """``triu``/``tril``: the element where its column minus its row is at least / at most
    ``k``, else zero (NumPy's ``where(tri(..., k), ...)``, exact for every dtype)."""
    (m,), k = node.args, node.kwargs.get("k", 0)
    src = m.meta.get("val") if isinstance(m, Node) else None
    if type(k) is not int or not isinstance(src, ArrayMeta) or src.ndim < 2 \
            or src.shape != meta.shape or src.dtype != meta.dtype:
        raise NotFusible(f"{name}: a 1-d input, a symbolic k or a cast runs as a NumPy call")
    keep = ">=" if name == "triu" else "<="
    zero = literal(0, meta.dtype)

    def emit(e, _keep=keep, _k=k, _zero=zero):
        x, row, col = e
        return f"({x} if {col} - {row} {_keep} {_k} else {_zero})"

    return Lowered((Operand(m, meta.dtype),), meta.dtype, emit, indexed=2)


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
    if src_meta.dtype.kind == "c" and name not in ("sum", "any", "all"):
        # NumPy's complex max/min order lexicographically; prod and mean round differently
        raise NotFusible(f"{name} of complex values runs as a NumPy call")
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
