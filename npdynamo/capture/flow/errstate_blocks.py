"""``with np.errstate(...):`` inside a compiled function, captured into the graph.

``np.errstate(divide="ignore")`` made in the function is an ``ErrstateValue`` (its keywords
checked by making a real ``np.errstate`` with them, so a bad one raises NumPy's error). Its
``with`` block (``BEFORE_WITH``) pushes an ``ErrstateExit`` and makes the block's state the
capture's current one (``CaptureContext.errstate``, nested blocks merged as NumPy merges
them); every op recorded inside carries it (``node.meta["errstate"]``) and runs under it: the
eager code wraps the op's call in ``np.errstate(**state)``, composed with whatever state the
caller runs under, as Python would; the numba backend runs such a graph on the eager backend.
The block's ``__exit__(None, None, None)`` on the normal path restores the outer state. An
exception inside the block is NumPy's: the graph raises and the frame reruns in Python. A
``with`` on anything else, an errstate with ``call=``, or one handed back to Python (a graph
break inside the block) stays a graph break, the frame running in Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.opcalls import raw
from npdynamo.capture.registry import BUILTINS, VALUE_CALLS, handler
from npdynamo.capture.translator import unsupported_opcode_reason
from npdynamo.capture.values import Const, Value

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

#: The floating-point error kinds ``all=`` stands for.
KINDS = ("divide", "over", "under", "invalid")
#: Modes whose effect the graph reproduces by running the op under them.
MODES = ("ignore", "warn", "raise", "print", "log")


class ErrstateValue(Value):
    """An ``np.errstate(**modes)`` made in the function, not entered yet."""

    def __init__(self, modes: dict[str, str]) -> None:
        self.modes = modes

    def kind(self) -> str:
        return "numpy.errstate object"


class ErrstateExit(Value):
    """The ``__exit__`` a ``with`` block on an ``ErrstateValue`` pushed: restores ``outer``."""

    def __init__(self, outer: tuple) -> None:
        self.outer = outer

    def kind(self) -> str:
        return "numpy.errstate block's __exit__"


def merged(outer: tuple, modes: dict[str, str]) -> tuple:
    """The state a block with ``modes`` sets inside one with ``outer``, as sorted items: its
    own modes win, ``all`` standing for each kind the block does not name."""
    state = dict(outer)
    for kind in KINDS:
        if kind in modes:
            state[kind] = modes[kind]
        elif "all" in modes:
            state[kind] = modes["all"]
    return tuple(sorted(state.items()))


def _make_errstate(frame: Frame, target, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if args:
        raise frame.unsupported("np.errstate with positional arguments")
    modes = {}
    for key, value in kwargs.items():
        if not isinstance(value, Const):
            raise frame.unsupported(f"np.errstate({key}=...) with a value known only at run time")
        if value.value is not None:
            modes[key] = value.value
    try:
        np.errstate(**modes)  # NumPy's own checks of the keywords (their modes: at __enter__)
    except Exception as exc:
        raise UserCodeRaises(exc) from exc
    if "call" in modes:
        raise frame.unsupported("np.errstate(call=...): a callback a graph cannot hold")
    if any(mode not in MODES for mode in modes.values()):
        raise frame.unsupported("np.errstate with a mode other than "
                                f"{', '.join(MODES)}")
    return ErrstateValue(modes)


@handler("BEFORE_WITH")
def _before_with(frame: Frame, ins) -> None:
    if not isinstance(frame.stack[-1], ErrstateValue):
        raise frame.unsupported(*unsupported_opcode_reason("BEFORE_WITH"))
    manager = frame.pop()
    ctx = frame.ctx
    frame.push(ErrstateExit(ctx.errstate))
    ctx.errstate = merged(ctx.errstate, manager.modes)
    frame.push(Const(None))  # what np.errstate.__enter__ returns


def _exit(frame: Frame, exit_value: ErrstateExit, args: list[Value], kwargs: dict) -> Value:
    if kwargs or len(args) != 3 or any(raw(a) is not None for a in args):
        raise frame.unsupported("np.errstate's __exit__ with an exception")
    frame.ctx.errstate = exit_value.outer
    return Const(None)


BUILTINS[np.errstate] = _make_errstate
VALUE_CALLS[ErrstateExit] = _exit
