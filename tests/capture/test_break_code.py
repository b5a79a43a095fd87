"""``capture/bytecode/break_code.py``: the code a broken frame runs, built from hand-made break
plans over small functions: the prologue stores what the prefix returns as the locals and the
stack, the instruction at the break runs natively, and the trampoline after it (or after each
way out of a branch) hands the stack and locals to its continuation. Each entry gets the plan's
code with its own prefix in place of the slot. The per-plan code cache and its counts are tested
in ``test_break_code_cache.py``; break code on real programs in every graph-break test."""

from __future__ import annotations

import types

from npdynamo.capture.bytecode.break_code import BreakPlan, Continuation, break_code
from npdynamo.capture.bytecode.generate import decoded_instructions


class Resume:
    """A continuation's callable: records what the trampoline hands over."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.got = None

    def dispatch(self, cells, *args):
        self.got = (cells, args)
        return self.name


def _handoff(result):
    return result


def _index(fn, name: str, nth: int = 0) -> int:
    found = [i for i, ins in enumerate(decoded_instructions(fn.__code__))
             if getattr(ins, "name", "").startswith(name)]
    return found[nth]


def straight(x):
    y = x + 1
    z = y - 3
    return z


def _straight_plan(prefix, after: Resume) -> BreakPlan:
    # break at ``y - 3``'s subtraction: the stack holds y and 3 (in that order); the code
    # after it resumes
    at = _index(straight, "BINARY_OP", 1)
    return BreakPlan(straight.__code__, ("x",), at, at, ("V", "V"), ("y",), (), prefix,
                     Continuation(after, ("V",)), None, handoff=_handoff)


def test_the_prefix_values_become_the_locals_and_the_stack():
    after = Resume("after")
    # the prefix stands for the graph before the break: (y, then the stack: y and 3)
    code = break_code(_straight_plan(lambda cells, x: (x + 100, x + 100, 3), after))
    run = types.FunctionType(code, globals())
    assert run(1) == "after"
    assert after.got == ((), (98, 101))  # the native subtraction's result, then the local y


def test_each_entry_gets_the_plans_code_with_its_own_prefix():
    after = Resume("after")
    first = break_code(_straight_plan(lambda cells, x: (x, x, 3), after))
    second = break_code(_straight_plan(lambda cells, x: (x, x, 5), after))
    assert first.co_code == second.co_code and first.co_consts != second.co_consts
    types.FunctionType(second, globals())(2)
    assert after.got == ((), (-3, 2))


def branching(x):
    if x:
        return "then"
    return "else"


def test_each_way_out_of_a_branch_has_its_trampoline():
    then, other = Resume("fallthrough"), Resume("branch")
    at = _index(branching, "POP_JUMP")
    plan = BreakPlan(branching.__code__, ("x",), at, at, ("V",), ("x",), (),
                     lambda cells, x: (x, len(x) > 1), Continuation(then, ()),
                     Continuation(other, ()), handoff=_handoff)
    run = types.FunctionType(break_code(plan), globals())
    # the prefix's value is what the native jump tests, not the frame's argument
    assert run("ab") == "fallthrough" and then.got == ((), ("ab",))
    assert run("a") == "branch" and other.got == ((), ("a",))


def test_a_resume_functions_frame_returns_a_tail_call():
    after = Resume("after")
    at = _index(straight, "BINARY_OP", 1)
    plan = BreakPlan(straight.__code__, ("x",), at, at, ("V", "V"), ("y",), (),
                     lambda cells, x: (x, x, 3), Continuation(after, ("V",), attribute="take"),
                     None, tail_call=list)
    after.take = "TAKE"
    tail = types.FunctionType(break_code(plan), globals())(4)
    assert tail == [4, 1, (), "TAKE"]  # reversed(stack + locals), cells, take
