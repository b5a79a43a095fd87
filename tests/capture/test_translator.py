"""``capture/translator.py``: the frame that steps through bytecode. Driven by hand on a real
function (``root_frame`` wraps the arguments with their sources, ``run`` records the ops and
returns the tracked result), then its limits and failures: an opcode with no handler named in
the user's words, npdynamo's own exception in a handler turned into a break at that instruction
(never the user's traceback), the step and inlining limits, a generator body with a ``try``.
End to end, plain against compiled with exact graph/break counts."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from npdynamo.capture import registry, translator
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.translator import (
    OPCODE_CONSTRUCTS,
    root_frame,
    unsupported_opcode_reason,
)
from npdynamo.capture.values import ArrayValue
from tests.differential import check_same

OFFSET = 1.0


def affine(x, w):
    y = x * w
    return y + OFFSET


def test_a_root_frame_runs_a_function_into_the_graph():
    ctx = CaptureContext(affine)
    frame = root_frame(ctx, (np.arange(3.0), 2.0))
    assert set(frame.locals) == {"x", "w"} and frame.locals["x"].source.name() == "L['x']"
    result = frame.run()
    assert isinstance(result, ArrayValue)
    targets = [n.target.name for n in ctx.root_graph.nodes if n.op == "call_function"]
    assert targets == ["multiply", "add"]
    assert ctx.steps > 0 and ctx.current is None  # the frame is left when it returns
    frame.push(1)
    frame.push(2)
    frame.push(3)
    assert frame.popn(2) == [2, 3] and frame.popn(0) == [] and frame.pop() == 1


def test_opcodes_without_a_handler_are_named_in_the_users_words():
    assert unsupported_opcode_reason("BEFORE_WITH")[0].startswith("a `with` block")
    assert unsupported_opcode_reason("NO_SUCH_OP") == (
        "the Python construct behind opcode NO_SUCH_OP is not supported", "")
    assert "LOAD_BUILD_CLASS" in OPCODE_CONSTRUCTS and "LOAD_BUILD_CLASS" not in registry.HANDLERS


def test_npdynamos_own_failure_is_a_break_at_the_instruction(monkeypatch):
    def broken(frame, ins):
        raise KeyError("a bug in a handler")

    monkeypatch.setitem(registry.HANDLERS, "BINARY_OP", broken)
    ctx = CaptureContext(affine)
    with pytest.raises(CaptureUnsupported) as info:
        root_frame(ctx, (np.arange(3.0), 2.0)).run()
    assert info.value.kind == "internal_error"
    assert "npdynamo failed to capture this line (KeyError" in info.value.reason
    assert info.value.root_position is not None and info.value.location.lineno == (
        affine.__code__.co_firstlineno + 1)  # y = x * w


def test_the_step_limit_lets_python_run_the_rest(monkeypatch):
    monkeypatch.setattr(translator, "STEP_LIMIT", 3)
    ctx = CaptureContext(affine)
    with pytest.raises(CaptureUnsupported, match="too many iterations") as info:
        root_frame(ctx, (np.arange(3.0), 2.0)).run()
    assert info.value.runs_on_natively


def recursive(x, n):
    return x if n == 0 else recursive(x + 1, n - 1)


def with_block(x, manager):
    y = x * 2
    with manager:  # a with block on a user's object: its __enter__/__exit__ run in Python
        z = y + 1
    return z


def gen_with_try(x):
    try:
        yield x * 2
    finally:
        pass


def consumes(x):
    return sum(gen_with_try(x))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_breaks_end_to_end(backend, monkeypatch):
    check_same(recursive, np.arange(3.0), 3, backend=backend, graphs=1, breaks=0)
    check_same(with_block, np.arange(3.0), contextlib.nullcontext(), backend=backend,
               graphs=2, breaks=1)
    # the generator (a try block) is made in Python, then sum() over it is a second break
    check_same(consumes, np.arange(3.0), backend=backend, graphs=0, breaks=2)


def test_recursion_past_the_inlining_depth_breaks(monkeypatch):
    monkeypatch.setattr(translator, "INLINE_DEPTH_LIMIT", 2)
    # the call left at the break is compiled on its own, with n - 1, and breaks again until
    # what is left nests no deeper than the limit: three entries with a graph, two breaks
    check_same(recursive, np.arange(3.0), 4, graphs=3, breaks=2)
