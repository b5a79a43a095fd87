"""Python floats and ``np.float64`` mixed by the data: ``h = max(0.0, diag, up - gap)``.

Python's ``max`` returns the first greatest argument itself, so when a Python float competes with
``np.float64`` values the *type* of the winner depends on the data. Both kinds hold a float64 and
compare alike, so the graph computes the winner's value as it would for one kind and, beside it,
whether the winner is an ``np.float64`` (a ``MixedScalarValue``, ``values.py``). What gives the same
result for either kind takes such a value: ``max``/``min`` of it with other floats, arithmetic
and comparisons with an ``np.float64`` (NumPy's scalar math either way), a comparison whose
truth alone is read (an ``if``), unary ``-``/``+``/``abs``, storing it into a float64 array,
an ``if`` whose branches give a float and an ``np.float64`` (``joined``), carrying it around a
formed loop (two leaves) and handing it back to Python, where ``box`` makes it the float or
``np.float64`` plain Python would have made. Everything else (arithmetic with a Python float,
``type()``, ``is``, ``bool()``, formatting, NumPy calls) is a graph break: there the value is
boxed and Python goes on with a real object. Python's winner is one of the items itself, which
a new box is not: a float handed back beside it that may be that object makes the hand-over
refuse (``may_be_one_object``), so ``is`` between them stays Python's answer.

A loop that starts a local as a Python float (``best = 0.0``) and makes it such a value in its
body (``best = max(best, h)``) is captured again with that local carried as one from the start
(``widen_key``, through ``RollRefused`` as for an unrolled loop), its initial value a constant.
"""

from __future__ import annotations

import operator
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


def _raw(value: Value) -> object:
    """A constant's value, read without installing its guard."""
    return value._value if isinstance(value, GuardedConst) else value.value


def float_like(value: Value) -> bool:
    """Whether ``value`` is a Python float, an ``np.float64`` or a mix of both (reads nothing,
    so installs no guard)."""
    if isinstance(value, MixedScalarValue) or _python_float_graph(value):
        return True
    if isinstance(value, ArrayValue):
        return value.meta.scalar and value.meta.dtype == _FLOAT64
    return isinstance(value, Const) and type(_raw(value)) in (float, np.float64)


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
    return MixedScalarValue(_value(number, np.float64), _value(numpy, np.bool_), tuple(items))


def _is_float64(value: Value) -> bool:
    return isinstance(value, ArrayValue) and value.meta.scalar and value.meta.dtype == _FLOAT64


def _number(value: Value) -> Value:
    return value.number if isinstance(value, MixedScalarValue) else value


def numpy_operands(frame: Frame, symbol: str, left: Value, right: Value) -> tuple[Value, Value]:
    """The operands standing for ``left <symbol> right`` when one of them is mixed: with an
    ``np.float64`` on the other side NumPy's scalar math runs whichever kind the mixed one is
    (``np.float64`` is a float subclass with its own reflected operators, which Python tries
    first), so their float64 values do. Any other operand is a graph break: with a Python
    float, ``float`` arithmetic (no overflow warning, ``ZeroDivisionError``) or NumPy's runs
    as the data decides."""
    if not any(_is_float64(v) for v in (left, right)) or not all(
            _is_float64(v) or isinstance(v, MixedScalarValue) for v in (left, right)):
        raise frame.unsupported(
            f"the operator {symbol} on {left.kind()} and {right.kind()}: Python's float and "
            "NumPy's float64 differ there (warnings, errors, the result's type)", MIXED_HINT)
    return _number(left), _number(right)


def truth_operands(left: Value, right: Value) -> tuple[Value, Value] | None:
    """The float64 values a comparison of ``left`` and ``right`` (one of them mixed) compares
    when only its truth is asked (an ``if``, a conditional expression): both kinds compare as
    float64 do, only the result's type (``bool``/``np.bool_``) differs. None when an operand
    is no float."""
    if not all(float_like(v) for v in (left, right)):
        return None
    return _number(left), _number(right)


#: The unary operators that give the same value for both kinds, and never warn.
_UNARY = {"-": operator.neg, "+": operator.pos, "abs": abs}


def unary(symbol: str, value: MixedScalarValue, on_graph) -> MixedScalarValue:
    """``-value``, ``+value``, ``abs(value)``: the kind kept; ``on_graph`` computes it on a
    graph float64."""
    number = value.number
    if isinstance(number, Const):
        number = Const(_UNARY[symbol](number.value))
    else:
        number = on_graph(number)
    # (a new object, but +x of a Python float is x itself)
    return MixedScalarValue(number, value.numpy, (value,) if symbol == "+" else ())


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


def _kind(value: Value) -> object:
    if isinstance(value, MixedScalarValue):
        return MixedScalarValue
    return np.float64 if _is_float64(value) or isinstance(value, Const) and type(
        _raw(value)) is np.float64 else float


def joined(first: Value, second: Value) -> tuple[Value, Value] | None:
    """Two branches' values of one name (``best = h if h > best else best``), a Python float
    and an ``np.float64`` or a mixed one: both as mixed values, made without a new node (so
    each stays in its branch's graph). None when they are of one kind already, or one of them
    is no float or a Python float only the graph knows."""
    if not (float_like(first) and float_like(second)) or _kind(first) is _kind(second):
        return None
    if _python_float_graph(first) or _python_float_graph(second):
        return None
    return _constant_kind(first), _constant_kind(second)


def _constant_kind(value: Value) -> MixedScalarValue:
    if isinstance(value, MixedScalarValue):
        return value
    number, numpy = _parts(value)
    return MixedScalarValue(_value(number, np.float64), Const(np.bool_(numpy)))


def stored(frame: Frame, value: MixedScalarValue, target: Value) -> Value:
    """What ``target[index] = value`` writes: the float64 itself into a float64 array (the
    same for both kinds); a graph break for any other target."""
    if isinstance(target, ArrayValue) and target.meta.dtype == _FLOAT64:
        return value.number
    raise frame.unsupported(
        f"storing a {value.kind()} into a {target.kind()} other than a float64 array",
        MIXED_HINT)


def _same(a: Value, b: Value) -> bool:
    return a is b or (isinstance(a, Const) and isinstance(b, Const) and _raw(a) is _raw(b))


def may_be_one_object(mixed: MixedScalarValue, other: Value) -> bool:
    """Whether Python's object for ``mixed`` may be ``other``'s (``max(0.0, a) is a``): then
    boxing it anew, which makes another object, would answer ``is`` and ``id`` wrongly. Any
    float of unknown origin may be; so may a mixed value whose candidates are not known."""
    if other is mixed or not float_like(other):
        return False
    if isinstance(other, MixedScalarValue) and other.candidates is not None and (
            mixed.candidates is not None):
        return any(_same(a, b) for a in other.candidates for b in mixed.candidates)
    if mixed.candidates is None or (isinstance(other, MixedScalarValue)
                                    and other.candidates is None):
        return True
    return any(_same(other, c) for c in mixed.candidates)


def box(number: np.float64, numpy: object) -> object:
    """The Python object: an ``np.float64`` when ``numpy`` holds, else a float."""
    return np.float64(number) if numpy else float(number)


__all__ = ["box", "float_like", "joined", "may_be_one_object", "mixed_fold", "numpy_operands",
           "stored", "truth_operands", "unary", "widen_key", "widened"]
