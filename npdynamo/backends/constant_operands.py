"""Python numbers among a graph's ufunc operands, converted once instead of on every call.

Part of the eager backend's code generation (``eager_forward``). ``np.multiply(x, 0.05)`` makes
NumPy turn the Python float into an array of ``x``'s dtype on every call (about 0.25 us, a
quarter of a small ufunc call); a graph that passes a 0-d array of that dtype instead computes
the same bits, since that array is exactly what the weak Python scalar is converted to. So a
training step of small arrays, whose ufuncs take learning rates and constants, stops paying
it once per call.

A constant is converted only where the two are indistinguishable:

* the call is a plain ufunc call (``fp_state.is_plain_ufunc_call``) whose result has a float
  dtype ``D`` (float32 or float64), every other operand is a value of dtype ``D``, and the ufunc
  has the all-``D`` loop (``ldexp`` has no ``dd->d`` loop: its int operand stays a Python int);
* the constant is a Python float whose cast into ``D`` neither overflows nor underflows (or an
  infinity, a nan, a zero), or a Python int that ``D`` holds exactly.

The 0-d arrays are never written: only graph values are ever an ``out=``.
"""

from __future__ import annotations

import math

import numpy as np

from npdynamo.backends.fp_state import is_plain_ufunc_call
from npdynamo.fx.codegen import operator_spelling
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: Largest integer magnitude each float dtype holds exactly (2**mantissa bits).
_EXACT_INT = {np.dtype(np.float32): 2**24, np.dtype(np.float64): 2**53}


def with_array_constants(graph: Graph) -> Graph | None:
    """A copy of ``graph`` whose convertible Python-number ufunc operands are 0-d arrays, or
    None when it has none."""
    chosen = {node: positions for node in graph.nodes
              if (positions := _convertible(node))}
    if not chosen:
        return None
    new, mapping = graph.copy()
    for node, positions in chosen.items():
        copy = mapping[node]
        dtype = node.meta["val"].dtype
        args = list(copy.args)
        for k in positions:
            args[k] = np.array(args[k], dtype=dtype)
        copy.args = tuple(args)
    return new


def _convertible(node: Node) -> list[int]:
    if not is_plain_ufunc_call(node) or operator_spelling(node) is not None:
        return []  # (scalar math spelt as an operator takes Python numbers as they are)
    meta = node.meta.get("val")
    if not isinstance(meta, ArrayMeta) or meta.dtype not in _FLOATS:
        return []
    dtype = meta.dtype
    ufunc = getattr(node.target, "impl", node.target)
    if dtype.char * ufunc.nin + "->" + dtype.char not in ufunc.types:
        return []
    positions = []
    for k, arg in enumerate(node.args):
        if isinstance(arg, Node):
            other = arg.meta.get("val")
            if not isinstance(other, ArrayMeta) or other.dtype != dtype:
                return []
        elif _holds(dtype, arg):
            positions.append(k)
        else:
            return []
    return positions if len(positions) < len(node.args) else []


def _holds(dtype: np.dtype, value: object) -> bool:
    """Whether the cast of ``value`` into ``dtype`` can neither overflow nor underflow (a
    weak scalar's cast would report those per call, under a user's ``np.errstate``)."""
    if type(value) is float:
        info = np.finfo(dtype)
        return (math.isnan(value) or math.isinf(value) or value == 0.0
                or float(info.tiny) <= abs(value) <= float(info.max))
    return type(value) is int and abs(value) <= _EXACT_INT[dtype]


def tuple_operands_as_arrays(graph: Graph) -> None:
    """Give each plain ufunc call's tuple-of-numbers operands (``np.bitwise_and(mask, v)`` with
    ``mask = (1, 0, 1)``) as the array NumPy makes of them on each call (``np.asarray``: the
    same dtype and values), in place: the numba backend's kernels read arrays, not tuples. A
    tuple NumPy would make an object array of, or that holds anything but numbers, stays."""
    for node in graph.nodes:
        if node.op != "call_function" or not is_plain_ufunc_call(node):
            continue
        args = list(node.args)
        for k, value in enumerate(args):
            if type(value) is tuple and value and _numbers(value):
                array = np.asarray(value)
                if array.dtype.kind in "biufc":
                    args[k] = array
        node.args = tuple(args)


def _numbers(value: object) -> bool:
    if type(value) is tuple:
        return all(_numbers(v) for v in value)
    return type(value) in (bool, int, float, complex)
