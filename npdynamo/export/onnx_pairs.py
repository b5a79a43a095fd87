"""Complex values in the ONNX lowering as pairs of real values (``onnx_complex`` writes the
complex ops): the ``Pair`` of a complex array's real and imaginary parts, the conversion at the
model's boundary (a complex array as one real tensor with a trailing axis of 2, (real, imag):
``to_model``/``from_model`` for callers, ``split``/``pack`` inside the model), and an operand
as parts. Imported by the writer and the loop lowerings, so it imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from npdynamo.export.schema import ExportError
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

if TYPE_CHECKING:
    from npdynamo.export.onnx_writer import Lowering


class Pair(NamedTuple):
    """The ONNX values of a complex array's real and imaginary parts."""

    re: str
    im: str


def dtype_of(arg: Any) -> np.dtype | None:
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    if isinstance(meta, ArrayMeta):
        return meta.dtype
    if isinstance(meta, ScalarMeta):
        return np.asarray(meta.type(0)).dtype
    if type(arg) in (bool, int, float, complex) or isinstance(arg, (np.generic, np.ndarray)):
        return np.asarray(arg).dtype
    return None


def is_complex(arg: Any) -> bool:
    if type(arg) in (tuple, list):
        return any(is_complex(a) for a in arg)
    dtype = dtype_of(arg)
    return dtype is not None and dtype.kind == "c"


def involves_complex(node: Node) -> bool:
    """Whether ``node`` reads or makes a complex value (then only this table may lower it)."""
    return (is_complex(node) or is_complex(list(node.args))
            or is_complex(list(node.kwargs.values())))


def part_dtype(dtype: np.dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts (complex128 -> float64)."""
    return np.dtype(np.float32) if np.dtype(dtype) == np.complex64 else np.dtype(np.float64)


def split(L: Lowering, packed: str) -> Pair:
    """The parts of a ``(..., 2)`` tensor (a model input or a constant)."""
    return Pair(*(L.add("Gather", [packed, L.const(np.int64(i))], axis=-1) for i in (0, 1)))


def pack(L: Lowering, pair: Pair) -> str:
    """A ``Pair`` as one ``(..., 2)`` tensor (a model output)."""
    axis = L.ints([-1])
    return L.add("Concat", [L.add("Unsqueeze", [p, axis]) for p in pair], axis=-1)


def parts(L: Lowering, arg: Any, t: np.dtype) -> Pair:
    """Operand ``arg`` as complex parts of dtype ``t`` (a real operand: imaginary part 0)."""
    if isinstance(arg, Node):
        held = L.scope.env[arg]
        if isinstance(held, Pair):
            source = part_dtype(dtype_of(arg))
            return Pair(L.cast(held.re, source, t), L.cast(held.im, source, t))
        re = L.value(arg, t)
        return Pair(re, _zeros(L, re, t))
    dtype = dtype_of(arg)
    if dtype is None:
        raise ExportError(f"an operand {arg!r:.60} has no complex ONNX form")
    value = np.asarray(arg)
    return Pair(L.const(value.real.astype(t)), L.const(value.imag.astype(t)))


def _zeros(L: Lowering, like: str, t: np.dtype) -> str:
    zero = L.onnx.numpy_helper.from_array(np.zeros(1, t), L.fresh("zero"))
    return L.add("ConstantOfShape", [L.add("Shape", [like])], value=zero)


def to_model(value: Any) -> np.ndarray:
    """An array as the model takes it: a complex one as (real, imag) along a trailing axis."""
    value = np.asarray(value)
    if value.dtype.kind != "c":
        return value
    return np.stack([value.real, value.imag], -1)


def from_model(value: np.ndarray, dtype: Any) -> np.ndarray:
    """A model output back as an array of ``dtype`` (complex from its trailing (real, imag))."""
    dtype = np.dtype(dtype)
    if dtype.kind != "c":
        return value
    out = np.empty(value.shape[:-1], dtype)
    out.real, out.imag = value[..., 0], value[..., 1]
    return out
