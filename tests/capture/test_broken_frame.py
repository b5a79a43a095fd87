"""``capture/breaks/broken_frame.py``: the entry of a frame that breaks. Its graph runs the code
before the break, the instruction runs natively, and each way out of it resumes: both ways of a
branch on an array value, each compiled when first taken; a user function whose inlining breaks
is called natively as its own compiled frame; a prefix graph that raises reruns the frame in
Python; an instruction a break cannot be placed at keeps the frame in Python. The wider corpus
(breaks in loops, ``with``, comprehensions, generators) is in ``test_graph_breaks.py`` and
``test_loop_breaks.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.breaks.broken_frame import MAYBE_NULL, NOT_BREAKABLE
from tests.capture.test_entry import bump_then_take, check_graph_failure_reruns
from tests.capture.test_if_formation import if_else
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_way_out_of_a_branch_resumes_when_first_taken(backend, monkeypatch):
    monkeypatch.setattr(npdynamo.config, "capture_if_branches", False)  # no in-graph cond
    compiled = check_same(if_else, np.ones(2), backend=backend, graphs=2, breaks=1)
    check_same(if_else, -np.ones(2), compiled=compiled, graphs=3, breaks=1)
    reason = npdynamo.inspect(compiled).entries[0].graph_break.reason
    assert "a branch depends on the values in an array" in reason


def helper(v):
    print("in helper")
    return v * 3.0


def calls_helper(x):
    y = x + 1.0
    z = helper(y)
    return z - y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_callee_that_breaks_is_called_natively(backend):
    # the break is reported at the print in the helper; the frame breaks at its call, which
    # runs natively (once per call: check_same compares what was printed)
    compiled = check_same(calls_helper, np.ones(2), backend=backend, graphs=2, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert brk.lineno == helper.__code__.co_firstlineno + 1


def bump_take_print(x, idx):
    y = bump_then_take(x, idx)  # index 5 is out of range only at run time, in the prefix graph
    print("after")
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_prefix_graph_that_raises_reruns_the_frame_in_python(backend):
    # the graph before the print holds all the work, none is left after it; nothing printed
    check_graph_failure_reruns(bump_take_print, backend, breaks=1)


class Logger:
    def __init__(self) -> None:
        self.lines = 0

    def log(self, v):
        print("logged")
        self.lines += 1
        return v * 2.0


def method_that_breaks(x, logger):
    # 3.11's LOAD_METHOD / 3.12+'s method-form LOAD_ATTR leave the method and self on the
    # stack: the break is at the call, where the method is called natively as its own frame
    y = logger.log(x + 1.0)
    return y - x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_break_at_a_method_call(backend):
    # ``lines`` after each call is compared with the plain call's: the method ran once a call
    check_same(method_that_breaks, np.ones(2), Logger(), backend=backend, graphs=2, breaks=1)


def test_the_instructions_no_break_is_placed_at():
    assert {"YIELD_VALUE", "SEND", "END_FOR"} <= NOT_BREAKABLE
    assert {"LOAD_GLOBAL", "LOAD_ATTR"} <= MAYBE_NULL
