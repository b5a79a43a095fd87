"""Python floats and ``np.float64`` mixed by the data: ``h = max(0.0, diag, up - gap)``.

Python's ``max`` returns the first greatest argument itself, so when a Python float competes with
``np.float64`` values the *type* of the winner depends on the data. Both kinds hold a float64 and
compare alike, so the graph computes the winner's value as it would for one kind and, beside it,
whether the winner is an ``np.float64`` (a ``MixedScalarValue``, ``values.py``). What gives the same
result for either kind takes such a value: ``max``/``min`` of it with other floats (this module),
storing it into a float64 array, carrying it around a formed loop (two leaves) and handing it
back to Python, where ``box`` makes it the float or ``np.float64`` plain Python would have made.
Everything else (arithmetic, comparisons, ``type()``, ``is``, formatting) is not implemented
for it, so it is a graph break: there the value is boxed and Python goes on with the real object.

A loop that starts a local as a Python float (``best = 0.0``) and makes it such a value in its
body (``best = max(best, h)``) is captured again with that local carried as one from the start
(``widen_key``, through ``RollRefused`` as for an unrolled loop), its initial value a constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from npdynamo import ops
from npdynamo.capture.opcalls import MIXED_HINT, op_call
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    GuardedConst,
    MixedScalarValue,
    ScalarInputValue,
    Value,
)
from npdynamo.ops.meta import ScalarMeta

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

_FLOAT64 = np.dtype(np.float64)


def _python_float_graph(value: Value) -> bool:
    """A Python float the graph computes or takes as an input (its value unknown here)."""
    return isinstance(value, ScalarInputValue) and value.node is not None and (
        value.node.meta.get("val") == ScalarMeta(float))


def float_like(value: Value) -> bool:
    """Whether ``value`` is a Python float, an ``np.float64`` or a mix of both (reads nothing,
    so installs no guard)."""
    if isinstance(value, MixedScalarValue) or _python_float_graph(value):
        return True
    if isinstance(value, ArrayValue):
        return value.meta.scalar and value.meta.dtype == _FLOAT64
    if isinstance(value, Const):
        plain = value._value if isinstance(value, GuardedConst) else value.value
        return type(plain) in (float, np.float64)
    return False


def _parts(value: Value) -> tuple[object, object]:
    """(the number as an operand, whether it is an ``np.float64``: a bool or a graph bool) of a
    value ``float_like`` accepts."""
    if isinstance(value, MixedScalarValue):
        return _operand(value.number), _operand(value.numpy)
    if _python_float_graph(value):
        return value, False
    if isinstance(value, ArrayValue):
        return value, True
    plain = value.value  # compared by Python: its value is a fact the capture relies on
    return plain, type(plain) is np.float64


def _operand(value: Value) -> object:
    return value.value if isinstance(value, Const) else value


def _value(operand: object, kind: type) -> Value:
    return operand if isinstance(operand, Value) else Const(kind(operand))


def _scalar(frame: Frame, value: Value) -> Value:
    """The NumPy scalar of a 0-d result (``where`` gives a 0-d array)."""
    return op_call(frame, ops.REGISTRY["getitem"], (value, ()), {})


def mixed_fold(frame: Frame, name: str, items: list[Value]) -> MixedScalarValue | None:
    """``max(...)``/``min(...)`` of Python floats and ``np.float64`` values, at least one of
    each kind possible: Python's running choice (an item replaces the winner only when it
    compares greater, or less, which nan never does) as ``where``s on the value and on its
    kind. None where this does not apply (one kind only, or another kind of item)."""
    if len(items) < 2 or not all(float_like(item) for item in items):
        return None
    parts = [_parts(item) for item in items]
    kinds = {kind for _number, kind in parts}
    if len(kinds) == 1 and isinstance(next(iter(kinds)), bool):
        return None  # one kind: the winner's type is known (the callers' own folds)
    beats = ops.REGISTRY["greater" if name == "max" else "less"]
    where = ops.REGISTRY["where"]
    number, numpy = parts[0]
    for other, kind in parts[1:]:
        test = op_call(frame, beats, (other, number), {})
        number = _scalar(frame, op_call(frame, where, (test, other, number), {}))
        if not (isinstance(kind, bool) and isinstance(numpy, bool) and kind == numpy):
            numpy = _scalar(frame, op_call(frame, where, (test, kind, numpy), {}))
    return MixedScalarValue(_value(number, np.float64), _value(numpy, np.bool_))


def widen_key(code, body: int, name: str) -> tuple:
    """The key (among ``ctx.unrolled_loops``) saying that the loop whose body starts at
    ``body`` carries ``name`` as a float or ``np.float64`` the data decides."""
    return ("mixed", code, body, name)


def widened(frame: Frame, value: Value) -> MixedScalarValue:
    """``value`` (``float_like``) as a ``MixedScalarValue``: a loop's initial value of a local
    that its body makes one."""
    if isinstance(value, MixedScalarValue):
        return value
    number, numpy = _parts(value)
    if _python_float_graph(number):  # a Python float of the graph as a float64 scalar
        number = _scalar(frame, op_call(frame, ops.REGISTRY["asarray"], (number,), {}))
    return MixedScalarValue(_value(number, np.float64), _value(numpy, np.bool_))


def stored(frame: Frame, value: MixedScalarValue, target: Value) -> Value:
    """What ``target[index] = value`` writes: the float64 itself into a float64 array (the
    same for both kinds); a graph break for any other target."""
    if isinstance(target, ArrayValue) and target.meta.dtype == _FLOAT64:
        return value.number
    raise frame.unsupported(
        f"storing a {value.kind()} into a {target.kind()} other than a float64 array",
        MIXED_HINT)


def box(number: np.float64, numpy: object) -> object:
    """The Python object: an ``np.float64`` when ``numpy`` holds, else a float."""
    return np.float64(number) if numpy else float(number)


__all__ = ["box", "float_like", "mixed_fold", "stored", "widen_key", "widened"]
