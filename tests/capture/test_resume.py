"""``capture/breaks/resume.py``: resume functions at run time. The trampoline (``TailCall``,
``finish``) runs a chain of hand-overs without stack growth; a session keeps one ``ResumeCall``
per resume point and globals; end to end, ownership passes with the hand-over (an object whose
last name the resumed code drops dies there, as in Python), a loop breaking in its body on
every iteration needs no stack per iteration, and its iterator is stepped natively once it
comes back. Encode counts and per-plan caches are in ``test_break_code_cache.py``; the
resume-function code itself in ``test_generate.py``."""

from __future__ import annotations

import sys
import weakref

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.breaks.resume import CompileSession, TailCall, finish
from npdynamo.capture.bytecode.generate import ResumeKey, decoded_instructions
from npdynamo.capture.hooks.cache import compiled_entries
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def _countdown(box: TailCall):
    """A ``take``: pops its arguments, and hands over again until the count reaches 0."""
    n = box.pop()
    if n == 0:
        return "done"
    return TailCall([n - 1, _countdown])  # [*reversed(args), take]


def test_finish_runs_a_chain_of_hand_overs_without_stack_growth():
    depth = sys.getrecursionlimit() * 3
    assert finish(TailCall([depth, _countdown])) == "done"
    assert finish(42) == 42  # a frame that did not break returns its value


def test_a_tail_call_holds_no_user_state():
    assert TailCall.__slots__ == () and not hasattr(TailCall(), "__dict__")
    assert type(TailCall([1])) is not list  # a user's list is never taken for one


def _key(code) -> ResumeKey:
    """Resuming ``drop_after_break`` at its ``print`` line, with an empty stack."""
    at = next(i for i, ins in enumerate(decoded_instructions(code))
              if getattr(ins, "name", "") == "LOAD_GLOBAL" and "print" in str(ins.arg))
    return ResumeKey(code, at, (), ("x", "obj", "ref"))


def test_a_session_keeps_one_resume_call_per_point_and_globals(capsys):
    session = CompileSession(backend=lambda gm, inputs: gm.forward, build_entry=None)
    key = _key(drop_after_break.__code__)
    call = session.resume_call(key, globals())
    assert session.resume_call(key, globals()) is call
    assert session.resume_call(key, {}) is not call  # equal code, other globals
    assert call.arity == 3 and call.globals is globals()
    # its code, run as plain Python on the locals, continues from the print
    x = np.ones(2)
    doubled, dead = call.function(())(x, Thing(), weakref.ref(Thing()))
    assert capsys.readouterr().out == "break\n"
    np.testing.assert_array_equal(doubled, x * 2.0)
    assert dead


class Thing:
    pass


def drop_after_break(x, box):
    obj = box.pop()
    ref = weakref.ref(obj)
    print("break")
    del obj  # the last reference: Thing dies here, in the resumed code
    return x * 2.0, ref() is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_resumed_code_owns_what_it_was_handed(backend):
    # weakref.ref, print, the del of a last reference and calling the weakref each break
    check_same(drop_after_break, np.ones(2), [Thing()], backend=backend, graphs=1, breaks=4)


def breaks_every_iteration(x, n):
    total = x * 0.0
    for i in range(n):
        total = total + i
        npdynamo.graph_break()
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_breaking_in_its_body_needs_no_stack_per_iteration(backend):
    n = sys.getrecursionlimit() + 100
    # the frame's entry; the resume function's entry for the body, which breaks and hands over
    # to itself at every iteration (stepping the range natively once it came back); the entry
    # after the loop
    compiled = check_same(breaks_every_iteration, np.ones(2), n, backend=backend, graphs=2,
                          breaks=2)
    assert len(compiled_entries(compiled)) == 1
    assert len(npdynamo.inspect(compiled).entries) == 3
