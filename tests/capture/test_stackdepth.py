"""``capture/bytecode/stackdepth.py``: the stack size found by one walk of an instruction list,
against CPython's own ``co_stacksize`` for real functions and against ``dis.stack_effect`` for
hand-made lists. The comparison with the bytecode library's answer on whole standard-library
modules and on break code, and the encode counts, are in ``test_stack_depth.py``."""

from __future__ import annotations

import dis

import bytecode as bc
import pytest

from npdynamo.capture.bytecode.generate import decode
from npdynamo.capture.bytecode.stackdepth import max_stack_depth


def flat(a, b):
    return (a, b, a + b, (a * b, a - b))


def calls(f, x):
    return f(f(x, 1, 2), f(3, x, 4), 5)


def branches(x):
    if x > 0:
        return [x, x, x]
    return {x: (x, x)}


def loop(xs):
    total = 0
    for x in xs:
        total += x * 2
    return total


def handled(x):
    try:
        return 1 / x
    except ZeroDivisionError as exc:
        return str(exc), x
    finally:
        x = None


def with_block(cm, x):
    with cm as value:
        return value + x


@pytest.mark.parametrize("fn", [flat, calls, branches, loop, handled, with_block])
def test_the_walk_finds_cpythons_stack_size(fn):
    assert max_stack_depth(list(decode(fn.__code__))) == fn.__code__.co_stacksize


def _const(value):
    return bc.Instr("LOAD_CONST", value)


def _ret() -> list:
    return [bc.Instr("RETURN_VALUE")]


def test_a_straight_line_is_its_deepest_running_sum():
    items = [_const(1), _const(2), _const(3), bc.Instr("BUILD_TUPLE", 3), _const(4),
             bc.Instr("BUILD_TUPLE", 2), *_ret()]
    depth, deepest = 0, 0
    for ins in items:
        # dis takes a constant's index, not the constant
        oparg = 0 if ins.opcode in dis.hasconst else ins.arg
        depth += dis.stack_effect(ins.opcode, oparg if ins.opcode >= dis.HAVE_ARGUMENT else None)
        deepest = max(deepest, depth)
    assert max_stack_depth(items) == deepest == 3


#: 3.11 spells the forward conditional jump apart
JUMP_IF_TRUE = "POP_JUMP_IF_TRUE" if "POP_JUMP_IF_TRUE" in dis.opmap else "POP_JUMP_FORWARD_IF_TRUE"


def test_the_deeper_branch_of_a_jump_counts():
    deep, done = bc.Label(), bc.Label()
    items = [_const(True), bc.Instr(JUMP_IF_TRUE, deep),
             _const(1), *_ret(),
             deep, _const(1), _const(2), _const(3), _const(4), bc.Instr("BUILD_TUPLE", 4),
             *_ret(), done]
    assert max_stack_depth(items) == 4


def test_dead_code_after_a_return_is_not_walked():
    items = [_const(1), *_ret(), _const(1), _const(2), _const(3), bc.Instr("BUILD_TUPLE", 3),
             *_ret()]
    assert max_stack_depth(items) == 1


def test_two_depths_at_one_instruction_is_not_guessed():
    # a jump reaching ``join`` with one item while the fall-through reaches it with two
    join = bc.Label()
    items = [_const(1), _const(True), bc.Instr(JUMP_IF_TRUE, join), _const(2), join, *_ret()]
    assert max_stack_depth(items) is None
