"""``assert <test of a graph value>`` speculated: the graph goes on as if it passed and checks it
at run time, so a loop with an ``assert dist != 0`` in its body still forms.

CPython (3.11-3.13) compiles ``assert test, message`` as conditional jumps over a failing block
that starts with ``LOAD_ASSERTION_ERROR`` and ends with ``RAISE_VARARGS`` (the message, when
there is one, is computed in between). When the value a jump tests is a graph value of one
element (data capture cannot see) and one side of the jump is that block, capture records
``asserted(bool(value))`` (``ops/speculation.py``) and follows the passing side. At run time
the node raises when the test fails; a graph that raises has written nothing back into its
arguments (a formed loop works on its own copies of the arrays it carries), so the frame reruns
in Python, which raises the ``AssertionError`` with its message after exactly the work Python
does first: the iterations before the failing one, the writes before the statement.

The failing blocks never run under capture, so the scans that decide whether a loop body or a
branch stays inside its statement skip them (``assert_blocks``): their ``RAISE_VARARGS`` does
not leave a formed loop, it makes the whole frame rerun in Python.
"""

from __future__ import annotations

from npdynamo import ops
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE
from npdynamo.capture.opcalls import op_call
from npdynamo.capture.values import ArrayValue, Const, Value

_TESTS = {
    "POP_JUMP_IF_TRUE": True, "POP_JUMP_FORWARD_IF_TRUE": True,
    "POP_JUMP_BACKWARD_IF_TRUE": True,
    "POP_JUMP_IF_FALSE": False, "POP_JUMP_FORWARD_IF_FALSE": False,
    "POP_JUMP_BACKWARD_IF_FALSE": False,
}


def assert_blocks(instrs: list, start: int, end: int) -> set[int]:
    """The indices in ``[start, end)`` inside the failing block of an ``assert``: from its
    ``LOAD_ASSERTION_ERROR`` through the ``RAISE_VARARGS`` that ends it."""
    inside: set[int] = set()
    i = start
    while i < end:
        ins = instrs[i]
        if isinstance(ins, bc.Instr) and ins.name == "LOAD_ASSERTION_ERROR":
            first = i
            while i < end and not (isinstance(instrs[i], bc.Instr)
                                   and instrs[i].name == "RAISE_VARARGS"):
                i += 1
            inside.update(range(first, min(i + 1, end)))
        i += 1
    return inside


def _fails_here(frame, index: int) -> bool:
    """Whether the first instruction from ``index`` on starts an assert's failing block."""
    while index < len(frame.instrs) and not isinstance(frame.instrs[index], bc.Instr):
        index += 1
    return index < len(frame.instrs) and frame.instrs[index].name == "LOAD_ASSERTION_ERROR"


def speculate_assert(frame, value: Value, jump_index: int) -> bool | None:
    """At the conditional jump ``jump_index`` testing ``value``: when it guards an assert's
    failing block and ``value`` is one element of graph data, record the check and return the
    truth value on the passing side (the caller follows it); None otherwise (the caller goes on
    as for any test)."""
    if not isinstance(value, ArrayValue) or frame.ctx.differentiating or (
            frame.code.co_flags & CO_GENERATOR_LIKE):
        return None
    meta = value.meta
    if tuple(meta.shape) != () or meta.dtype.kind not in "biufc":
        return None  # bool() of a bigger array raises; of objects runs user code
    jump = frame.instrs[jump_index]
    when = _TESTS.get(getattr(jump, "name", None))
    if when is None:
        return None
    if _fails_here(frame, frame.labels[jump.arg]):
        passing = not when  # jumps to the failing block when the test is ``when``
    elif _fails_here(frame, jump_index + 1):
        passing = when  # falls into the failing block unless it jumps
    else:
        return None
    truth = value
    if meta.dtype.kind != "b":  # bool() of a number: it is not zero (nan is true)
        truth = op_call(frame, ops.REGISTRY["not_equal"], (value, Const(0)), {})
    # (``assert not x`` passes when ``x`` is false)
    holds = truth if passing else op_call(frame, ops.REGISTRY["logical_not"], (truth,), {})
    op_call(frame, ops.REGISTRY["asserted"], (holds,), {})
    return passing
