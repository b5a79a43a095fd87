"""Array operations under capture: a NumPy call normalised to a canonical op becomes a graph node.

Below the call handling (``calls.py``) and the containers: both record ops through ``op_call``,
which folds an op whose operands are all Python constants and records which results are views of
their operand (so that a write through one reaches the other).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo import ops
from npdynamo.capture.errors import NUMPY_ERRORS, UserCodeRaises
from npdynamo.capture.side_effects import view_of, write_array
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    ListValue,
    MixedScalarValue,
    NamedTupleValue,
    ScalarInputValue,
    SizeValue,
    TupleValue,
    Value,
)
from npdynamo.ops.composite import Composite
from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.rules import to_meta

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame



def _each_item(value: Value, leaf: Callable[[Value], Any]):
    """``leaf`` of ``value``, or of each item of a tuple or list (nested), in its container."""
    if isinstance(value, TupleValue):
        return tuple(_each_item(v, leaf) for v in value.items)
    if isinstance(value, ListValue):
        return [_each_item(v, leaf) for v in value.items]
    return leaf(value)


def _plain(value: Value):
    return value.value if isinstance(value, Const) else value


def raw(value: Value):
    """The argument form ``ops`` normalisation takes: arrays stay tracked, constants are plain."""
    return _each_item(value, _plain)


def _graph_float(value: Value):
    meta = value.node.meta.get("val") if isinstance(value, ScalarInputValue) else None
    return value if isinstance(meta, ScalarMeta) and meta.type is float else _plain(value)


def raw_numbers(value: Value):
    """``raw``, but Python floats the graph computes (``math.sqrt(s)``, ``float(a)``) stay
    graph values: for ``np.array([...])``, which makes each one a float64 element exactly
    as a 0-d float64 array would be. (A Python int stays plain: its dtype depends on its
    value.)"""
    return _each_item(value, _graph_float)


def loop_int(frame: Frame, value: Value) -> bool:
    """Whether ``value`` is an int only the run time knows, inside a rolled loop's body (the
    loop's index, arithmetic on it): an array index that stays a graph value."""
    return isinstance(value, ScalarInputValue) and frame.ctx.lift is not None and (
        value.node.meta.get("val") == ScalarMeta(int)) and not frame.ctx.differentiating


def _size(value: Value):
    return value.expr if isinstance(value, SizeValue) else _plain(value)


def raw_sizes(value: Value):
    """``raw``, but symbolic sizes stay symbolic: for the calls whose rules take them
    (``np.arange(n)``, ``x.reshape(n, -1)``)."""
    return _each_item(value, _size)


def _contains(obj, test) -> bool:
    if test(obj):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_contains(v, test) for v in obj)
    if isinstance(obj, dict):
        return any(_contains(v, test) for v in obj.values())
    return False


def has_array(obj) -> bool:
    return _contains(obj, lambda v: isinstance(v, ArrayValue))


def _has_graph_value(obj) -> bool:
    """An array or a Python number the graph computes (``np.array([math.sqrt(s)])``)."""
    return _contains(obj, lambda v: isinstance(v, (ArrayValue, ScalarInputValue)))


#: What a break on a float the data decides to be a Python float or an np.float64 advises.
MIXED_HINT = ("give max/min items of one kind: np.float64(0.0) instead of 0.0 among "
              "NumPy scalars")


def _refuse_mixed(frame: Frame, obj) -> None:
    """A float or np.float64 that the data decides (``mixed_scalars``) in a NumPy call: NumPy
    treats the two kinds apart (a Python float is a weak scalar), so the call is a break."""
    if _contains(obj, lambda v: isinstance(v, MixedScalarValue)):
        raise frame.unsupported(
            "a call with a float or numpy.float64 that the data decides (Python's max/min of "
            "both kinds) as an argument: NumPy and Python treat the two kinds apart", MIXED_HINT)


def _has_masked(obj) -> bool:
    """A boolean-mask selection (``capture/masked.py``) among the operands."""
    return _contains(obj, lambda v: getattr(v, "masked_selection", False))


# -- ops -------------------------------------------------------------------------------------
def op_call(frame: Frame, op, args: tuple, kwargs: dict) -> Value:
    """Record an op; fold it when every operand is a Python constant and the result a scalar."""
    ctx = frame.ctx
    _refuse_mixed(frame, (args, kwargs))
    if _has_masked(args) or _has_masked(kwargs):
        raise frame.unsupported(
            f"np.{op.name} of a boolean-mask selection (its size depends on the data)",
            "use np.where(mask, ...) to keep the shape static")
    if not _has_graph_value(args) and not _has_graph_value(kwargs) and op.kind != "opaque":
        try:
            result = op(*args, **kwargs)
        except NUMPY_ERRORS as exc:  # (anything else is npdynamo's own failure: a graph break)
            raise UserCodeRaises(exc) from exc
        if isinstance(result, np.generic):
            return Const(result)
    result = ctx.call_op(op, tuple(args), dict(kwargs))
    if isinstance(result, TupleValue):  # an op with several results (np.linalg.svd)
        cls = op.result_type(kwargs)
        return result if cls is tuple else NamedTupleValue(result.items, cls)
    if (op.view and args and isinstance(args[0], ArrayValue)
            and isinstance(result, ArrayValue) and not result.meta.scalar):
        # NumPy returns a view here (basic indexing, reshape, transpose...): writes through one
        # must reach the other; integer-array indexing copies
        if (op.name != "getitem" or not has_array(args[1:])) and (
                op.name != "diag" or args[0].meta.ndim == 2):  # np.diag(v) builds a matrix
            view_of(result, args[0], op, tuple(args), dict(kwargs))
    return result


def normalized_op_call(frame: Frame, normalized) -> Value:
    if isinstance(normalized, Composite):
        return composite_call(frame, normalized)
    op, args, kwargs = normalized
    return op_call(frame, op, args, kwargs)


class _Builder:
    """Records a composite's ops into the frame's graph (``ops.composite.Builder``)."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    def call(self, op, args: tuple, kwargs: dict) -> Value:
        return op_call(self.frame, op, args, kwargs)

    def meta(self, value: ArrayValue):
        if isinstance(value, ScalarInputValue):  # a Python number the graph computes
            return to_meta("composite", value.node.meta["val"])
        return value.meta

    def shape(self, value: ArrayValue) -> tuple[int, ...]:
        return self.frame.ctx.concrete_shape(value.meta.shape)

    def write(self, target: ArrayValue, value: ArrayValue) -> None:
        write_array(self.frame.ctx, target, value)


def composite_call(frame: Frame, composite: Composite) -> Value:
    """A NumPy call made of several ops (``np.split``, ``np.meshgrid``): its pieces, in the
    list or tuple NumPy returns."""
    try:
        pieces = composite.build(_Builder(frame))
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"this NumPy call cannot be captured: {exc}") from exc
    except (TypeError, ValueError, IndexError) as exc:
        raise UserCodeRaises(exc) from exc
    if pieces is None:  # np.copyto and the like: written into an argument, returns None
        return Const(None)
    if isinstance(pieces, ArrayValue):  # np.array of nested lists: one new array
        return pieces
    items = [p if isinstance(p, Value) else Const(p) for p in pieces]
    return ListValue(items) if isinstance(pieces, list) else TupleValue(items)


def normalize(frame: Frame, fn, *call):
    """``fn(*call)`` (an ``ops.normalize_*`` function): its refusals become graph breaks."""
    _refuse_mixed(frame, call)
    try:
        return fn(*call)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"this NumPy call cannot be captured: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise UserCodeRaises(exc) from exc
