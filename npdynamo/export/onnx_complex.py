"""Complex numbers in ONNX models, for ``onnx_export``: ONNX Runtime has almost no complex
kernels, so a complex array is lowered as two real ONNX values, its real and imaginary parts
(``onnx_pairs.Pair``), and complex arithmetic is written with real ops as NumPy computes it
(its ufunc loops promote a real operand to complex with a zero imaginary part, so the formulas
below keep every term, as NumPy's do: ``inf * 0`` terms give NaN where NumPy's give NaN).

At the model's boundary a complex128 (complex64) array is one float64 (float32) tensor with a
trailing axis of 2, (real, imag): ``np.stack([z.real, z.imag], -1)`` in, and
``out[..., 0] + 1j * out[..., 1]`` back (``onnx_pairs``, ``docs/export.md``). Indexing,
writes, ``zeros`` and ``sum`` lower the real op once per part; loops carry both parts. An op
on complex values without an entry here raises ``ExportError`` naming it (``Lowering.lower``
routes every node whose operands or result are complex to this table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo.export import onnx_shapes
from npdynamo.export.onnx_arrays import _mask_for
from npdynamo.export.onnx_math import _hypot
from npdynamo.export.onnx_ops import _ndim
from npdynamo.export.onnx_pairs import Pair, dtype_of, is_complex, part_dtype, parts
from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node
from npdynamo.ops.inplace_functions import run_program
from npdynamo.ops.meta import ArrayMeta

if TYPE_CHECKING:
    from npdynamo.export.onnx_writer import Lowering


def _out(node: Node) -> np.dtype:
    return dtype_of(node)


def _binary(fn):
    def lower(L: Lowering, node: Node, a: Any, b: Any, **kw: Any) -> Any:
        if kw:
            raise ExportError(f"complex {node.target.name} with {sorted(kw)}")
        out = _out(node)
        if out.kind != "c":
            raise ExportError(f"complex {node.target.name} giving {out}")
        t = part_dtype(out)
        return fn(L, parts(L, a, t), parts(L, b, t), t)
    return lower


def _add(L: Lowering, a: Pair, b: Pair, t: np.dtype) -> Pair:
    return Pair(L.add("Add", [a.re, b.re]), L.add("Add", [a.im, b.im]))


def _subtract(L: Lowering, a: Pair, b: Pair, t: np.dtype) -> Pair:
    return Pair(L.add("Sub", [a.re, b.re]), L.add("Sub", [a.im, b.im]))


def _multiply(L: Lowering, a: Pair, b: Pair, t: np.dtype) -> Pair:
    re = L.add("Sub", [L.add("Mul", [a.re, b.re]), L.add("Mul", [a.im, b.im])])
    im = L.add("Add", [L.add("Mul", [a.re, b.im]), L.add("Mul", [a.im, b.re])])
    return Pair(re, im)


def _divide(L: Lowering, a: Pair, b: Pair, t: np.dtype) -> Pair:
    """NumPy's complex division (Smith's method, its ufunc loop's branches)."""
    def where(c: str, x: str, y: str) -> str:
        return L.add("Where", [c, x, y])
    br_abs, bi_abs = L.add("Abs", [b.re]), L.add("Abs", [b.im])
    one = L.const(1, t)
    # |b.re| >= |b.im|: rat = bi / br, scl = 1 / (br + bi * rat)
    rat1 = L.add("Div", [b.im, b.re])
    scl1 = L.add("Div", [one, L.add("Add", [b.re, L.add("Mul", [b.im, rat1])])])
    re1 = L.add("Mul", [L.add("Add", [a.re, L.add("Mul", [a.im, rat1])]), scl1])
    im1 = L.add("Mul", [L.add("Sub", [a.im, L.add("Mul", [a.re, rat1])]), scl1])
    # both zero: a / |b.re| part by part (NumPy's complex inf or nan)
    zero = L.add("And", [L.add("Equal", [br_abs, L.const(0, t)]),
                         L.add("Equal", [bi_abs, L.const(0, t)])])
    re1 = where(zero, L.add("Div", [a.re, br_abs]), re1)
    im1 = where(zero, L.add("Div", [a.im, br_abs]), im1)
    # otherwise: rat = br / bi, scl = 1 / (bi + br * rat)
    rat2 = L.add("Div", [b.re, b.im])
    scl2 = L.add("Div", [one, L.add("Add", [b.im, L.add("Mul", [b.re, rat2])])])
    re2 = L.add("Mul", [L.add("Add", [L.add("Mul", [a.re, rat2]), a.im]), scl2])
    im2 = L.add("Mul", [L.add("Sub", [L.add("Mul", [a.im, rat2]), a.re]), scl2])
    first = L.add("GreaterOrEqual", [br_abs, bi_abs])
    return Pair(where(first, re1, re2), where(first, im1, im2))


def _abs(L: Lowering, x: Pair, t: np.dtype) -> str:
    return _hypot(L, x.re, x.im, t)  # NumPy's npy_cabs is hypot


def _unary(fn, real_result: bool = False):
    def lower(L: Lowering, node: Node, x: Any, **kw: Any) -> Any:
        if kw:
            raise ExportError(f"complex {node.target.name} with {sorted(kw)}")
        source = dtype_of(x)
        if source is None or source.kind != "c":
            raise ExportError(f"{node.target.name} of {source} giving {_out(node)}")
        t = part_dtype(source)
        result = fn(L, parts(L, x, t), t)
        out = _out(node)
        return L.cast(result, t, out) if real_result else result
    return lower


def _structural(name: str):
    """An op that moves or selects elements without computing with them (``getitem``,
    ``setitem``, ``zeros``, ...): the real op's lowering, once per part, with the complex
    operands and the result seen as arrays of the part dtype."""
    def lower(L: Lowering, node: Node, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dtype") is not None and np.dtype(kwargs["dtype"]).kind == "c":
            kwargs = {**kwargs, "dtype": part_dtype(kwargs["dtype"])}
        real_value = name == "setitem" and not is_complex(args[2])  # before metas change
        touched = [n for n in (node, *_nodes(args), *_nodes(kwargs.values()))
                   if isinstance(n.meta.get("val"), ArrayMeta) and is_complex(n)]
        saved = {n: (n.meta["val"], L.scope.env.get(n)) for n in touched}
        if any(n is not node and not isinstance(held, Pair) for n, (_, held) in saved.items()):
            raise ExportError(f"complex {name} of a value not held as its parts")
        halves = []
        try:
            for half in (0, 1):
                for n in touched:
                    meta = saved[n][0]
                    n.meta["val"] = ArrayMeta(meta.shape, part_dtype(meta.dtype), meta.scalar)
                    if n is not node:
                        L.scope.env[n] = saved[n][1][half]
                halves.append(L.lowerings[name](L, node, *_half(args, half, real_value), **kwargs))
        finally:
            for n, (meta, held) in saved.items():
                n.meta["val"] = meta
                if n is not node:
                    L.scope.env[n] = held
        return Pair(*halves)
    return lower


def _half(args: tuple, half: int, real_value: bool) -> tuple:
    """The operands of one part's op: a complex constant's part, and a real value written
    into a complex array (``setitem``) as itself, then as imaginary part 0."""
    def part(v: Any) -> Any:
        if type(v) is complex or isinstance(v, np.complexfloating):
            return (v.real, v.imag)[half]
        if type(v) in (tuple, list):
            return type(v)(part(x) for x in v)
        return v
    args = tuple(part(a) for a in args)
    if real_value and half:
        args = (*args[:2], 0.0, *args[3:])
    return args


def _nodes(values: Any) -> list[Node]:
    out = []
    for v in values:
        if isinstance(v, Node):
            out.append(v)
        elif type(v) in (tuple, list):
            out += _nodes(v)
    return out


def _sum(L: Lowering, node: Node, x: Any, **kwargs: Any) -> Pair:
    return _structural("sum")(L, node, x, **kwargs)  # the parts add up separately


def _as_pair(L: Lowering, value: Any, t: np.dtype) -> Pair:
    if isinstance(value, Pair):
        return value
    if type(value) in (bool, int, float, complex):
        return Pair(L.const(np.asarray(value).real.astype(t)),
                    L.const(np.asarray(value).imag.astype(t)))
    raise ExportError(f"{value!r:.40} in a complex masked expression")


def _program_op(L: Lowering, op: str, a: Any, b: Any, t: np.dtype) -> Pair:
    if op == "**":  # NumPy's complex power by 2 or 3 is products (its small-integer branch)
        if type(b) is not int or b not in (2, 3):
            raise ExportError(f"a complex ** {b!r} (only ** 2 and ** 3 are written)")
        a = _as_pair(L, a, t)
        out = _multiply(L, a, a, t)
        return _multiply(L, out, a, t) if b == 3 else out
    fn = {"+": _add, "-": _subtract, "*": _multiply, "/": _divide}.get(op)
    if fn is None:
        raise ExportError(f"the operator {op} on complex numbers in a masked expression")
    return fn(L, _as_pair(L, a, t), _as_pair(L, b, t), t)


def _mask_apply(L: Lowering, node: Node, current: Any, mask: Any, *arrays: Any,
                program: tuple) -> Pair:
    """``x[mask] = f(x[mask], ...)`` of complex arrays: ``f`` on both parts, then ``Where``."""
    out = _out(node)
    if out.kind != "c":
        raise ExportError(f"a masked write of complex values into {out}")
    t = part_dtype(out)
    leaves = [parts(L, a, t) for a in arrays]
    value = _as_pair(L, run_program(program, leaves.__getitem__,
                                    lambda op, a, b: _program_op(L, op, a, b, t)), t)
    flags = _mask_for(L, mask, _ndim(current))
    target = parts(L, current, t)
    return Pair(*(L.add("Where", [flags, v, c]) for v, c in zip(value, target)))


LOWERINGS = {
    "add": _binary(_add), "subtract": _binary(_subtract), "multiply": _binary(_multiply),
    "divide": _binary(_divide),
    "negative": _unary(lambda L, x, t: Pair(L.add("Neg", [x.re]), L.add("Neg", [x.im]))),
    "conjugate": _unary(lambda L, x, t: Pair(L.add("Identity", [x.re]), L.add("Neg", [x.im]))),
    "real": _unary(lambda L, x, t: L.add("Identity", [x.re]), real_result=True),
    "imag": _unary(lambda L, x, t: L.add("Identity", [x.im]), real_result=True),
    "absolute": _unary(lambda L, x, t: _abs(L, x, t), real_result=True),
    "sum": _sum, "mask_apply": _mask_apply,
    **{name: _structural(name) for name in ("getitem", "setitem", "zeros", "copy")},
    # the loops hold a complex value as its two parts
    "fori_loop": onnx_shapes._fori_loop, "while_loop": onnx_shapes._while_loop,
    "tuple_item": onnx_shapes._tuple_item,
}
