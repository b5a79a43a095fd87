"""Stack layouts of calls: the per-version helpers every call-related handler goes through.

Until 3.12 a NULL sits below a global callable, from 3.13 above it; a method load leaves
(method, self) or (NULL/attr); keyword names come from KW_NAMES (3.11/3.12) or CALL_KW (3.13).
These helpers turn all of that into one canonical call."""

from __future__ import annotations

from npdynamo.capture.bytecode.code import call_slots
from npdynamo.capture.calls import call_value
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    NULL,
    FormedList,
    NullValue,
    Value,
)


# -- layout helpers (the per-version stack shapes of calls) ----------------------------------
def push_with_null(frame: Frame, value: Value) -> None:
    """LOAD_GLOBAL/LOAD_ATTR with the NULL bit: NULL below the value until 3.12, above from 3.13."""
    for slot in call_slots(value, NULL):
        frame.push(slot)


def push_method(frame: Frame, method: Value, self_value: Value) -> None:
    """A method-form attribute load: (method, self), or the plain attribute with a NULL."""
    if isinstance(method, NullValue):
        push_with_null(frame, self_value)
    else:
        frame.push(method)
        frame.push(self_value)


def pop_callable(frame: Frame) -> tuple[Value, list[Value]]:
    """The two slots under a call's arguments -> (callable, [self] or [])."""
    top = frame.pop()
    below = frame.pop()
    if isinstance(below, NullValue):  # 3.11/3.12: NULL, callable
        return top, []
    if isinstance(top, NullValue):  # 3.13: callable, NULL
        return below, []
    return below, [top]  # method pair: method, self


def do_call(frame: Frame, nargs: int, kw_names: tuple[str, ...]) -> None:
    args = frame.popn(nargs)
    fn, self_args = pop_callable(frame)
    nkw = len(kw_names)
    kwargs = dict(zip(kw_names, args[len(args) - nkw :])) if nkw else {}
    positional = self_args + args[: len(args) - nkw]
    if len(positional) == 1 and isinstance(positional[0], FormedList) and not kwargs:
        # np.array(list) of a comprehension formed into one loop (``flow/comprehensions``
        # checked the call): the loop's result is the new array np.array makes
        frame.push(positional[0].array)
        return
    frame.push(call_value(frame, fn, positional, kwargs))
