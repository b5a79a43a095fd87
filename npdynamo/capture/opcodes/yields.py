"""Handlers for the instructions of generator bodies (see ``capture/generators.py``).

RETURN_GENERATOR starts the body: CPython returns the generator there and, on the first
``send(None)``, pushes that None, which the next POP_TOP drops. YIELD_VALUE suspends the frame
with its item; resuming pushes the sent value (always None: ``send`` is a graph break) for the
RESUME/POP_TOP after it. The same on 3.11, 3.12 and 3.13 (only YIELD_VALUE's argument differs,
and it does not change the stack)."""

from __future__ import annotations

from npdynamo.capture.registry import handler
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import Const


@handler("RETURN_GENERATOR")
def _return_generator(frame: Frame, ins):
    frame.push(Const(None))


@handler("YIELD_VALUE")
def _yield_value(frame: Frame, ins):
    frame.yielded = frame.pop()
