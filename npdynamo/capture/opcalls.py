"""Array operations under capture: a NumPy call normalised to a canonical op becomes a graph node.

Below the call handling (``calls.py``) and the containers: both record ops through ``op_call``,
which folds an op whose operands are all Python constants and records which results are views of
their operand (so that a write through one reaches the other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from npdynamo import ops
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.side_effects import view_of
from npdynamo.capture.values import ArrayValue, Const, ListValue, SizeValue, TupleValue, Value

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

#: Ops whose result may share memory with their first operand (NumPy returns a view).
VIEW_OPS = frozenset(
    {
        "reshape",
        "transpose",
        "getitem",
        "ravel",
        "squeeze",
        "expand_dims",
        "broadcast_to",
        "swapaxes",
        "moveaxis",
        "diagonal",
        "flip",
        "rot90",
    }
)


def raw(value: Value):
    """The argument form ``ops`` normalisation takes: arrays stay tracked, constants are plain."""
    if isinstance(value, Const):
        return value.value
    if isinstance(value, TupleValue):
        return tuple(raw(v) for v in value.items)
    if isinstance(value, ListValue):
        return [raw(v) for v in value.items]
    return value


def raw_sizes(value: Value):
    """``raw``, but symbolic sizes stay symbolic: for the calls whose rules take them
    (``np.arange(n)``, ``x.reshape(n, -1)``)."""
    if isinstance(value, SizeValue):
        return value.expr
    if isinstance(value, TupleValue):
        return tuple(raw_sizes(v) for v in value.items)
    if isinstance(value, ListValue):
        return [raw_sizes(v) for v in value.items]
    return raw(value)


def has_array(obj) -> bool:
    if isinstance(obj, ArrayValue):
        return True
    if isinstance(obj, (tuple, list)):
        return any(has_array(v) for v in obj)
    if isinstance(obj, dict):
        return any(has_array(v) for v in obj.values())
    return False


# -- ops -------------------------------------------------------------------------------------
def op_call(frame: Frame, op, args: tuple, kwargs: dict) -> Value:
    """Record an op; fold it when every operand is a Python constant and the result a scalar."""
    ctx = frame.ctx
    if not has_array(args) and not has_array(kwargs) and op.kind != "opaque":
        try:
            result = op(*args, **kwargs)
        except Exception as exc:
            raise UserCodeRaises(exc) from exc
        if isinstance(result, np.generic):
            return Const(result)
    result = ctx.call_op(op, tuple(args), dict(kwargs))
    if (op.name in VIEW_OPS and args and isinstance(args[0], ArrayValue)
            and isinstance(result, ArrayValue) and not result.meta.scalar):
        # NumPy returns a view here (basic indexing, reshape, transpose...): writes through one
        # must reach the other; integer-array indexing copies
        if op.name != "getitem" or not has_array(args[1:]):
            view_of(result, args[0], op, tuple(args), dict(kwargs))
    return result


def normalized_op_call(frame: Frame, normalized) -> Value:
    op, args, kwargs = normalized
    return op_call(frame, op, args, kwargs)


def normalize(frame: Frame, fn, *call):
    """``fn(*call)`` (an ``ops.normalize_*`` function): its refusals become graph breaks."""
    try:
        return fn(*call)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"this NumPy call cannot be captured: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise UserCodeRaises(exc) from exc
