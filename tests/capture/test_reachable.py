"""``capture/bytecode/reachable.py``: what ``live_only`` keeps of an instruction list (exactly
what a run reaches from the entry), how it rebuilds try ranges around what it keeps, and that
code it cuts still runs as before. Break code built with it runs in every graph-break test
(``test_graph_breaks.py``, ``test_break_code_cache.py``)."""

from __future__ import annotations

import dis

import bytecode as bc

from npdynamo.capture.bytecode.generate import decode
from npdynamo.capture.bytecode.pairs import assemble
from npdynamo.capture.bytecode.reachable import active_ranges, live_only, reached_from_handlers


def _const(value):
    return bc.Instr("LOAD_CONST", value)


RET = "RETURN_VALUE"


def _instrs(items) -> list:
    return [item for item in items if isinstance(item, bc.Instr)]


def test_what_follows_a_return_is_dropped():
    keep = [_const(1), bc.Instr(RET)]
    items = [*keep, _const(2), bc.Instr(RET)]
    assert live_only(items) == keep


def test_a_jump_target_is_kept_and_what_it_jumps_over_is_not():
    target = bc.Label()
    dead = [_const("dead"), bc.Instr("POP_TOP")]
    items = [bc.Instr("JUMP_FORWARD", target), *dead, target, _const(3), bc.Instr(RET)]
    kept = live_only(items)
    assert target in kept
    assert not any(ins in kept for ins in dead)
    assert len(_instrs(kept)) == 3


def _function_returning_from_try(x):
    try:
        return 10 // x
    except ZeroDivisionError:
        return -1


def test_a_real_function_keeps_every_instruction_and_runs_the_same():
    code = _function_returning_from_try.__code__
    items = list(decode(code))
    kept = live_only(items)
    # CPython's compiler leaves no dead code: all is kept, a NOP opening each rebuilt range
    originals = [i for i in _instrs(kept) if any(i is item for item in items)]
    assert originals == _instrs(items)
    assert {i.name for i in _instrs(kept) if i not in originals} <= {"NOP"}
    b = decode(code)
    b.clear()
    b.extend(kept)
    rebuilt = _function_returning_from_try.__class__(assemble(b), globals())
    assert (rebuilt(5), rebuilt(0)) == (2, -1)


def test_a_range_whose_instructions_are_all_dead_disappears():
    handler = bc.Label()
    entry = bc.TryBegin(handler, push_lasti=False, stack_depth=0)
    items = [_const(1), bc.Instr(RET),
             entry, _const(2), bc.Instr(RET), bc.TryEnd(entry),
             handler, bc.Instr("RERAISE", 0)]
    kept = live_only(items)
    assert not any(isinstance(item, (bc.TryBegin, bc.TryEnd)) for item in kept)
    assert _instrs(kept) == items[:2]


def test_a_range_entered_by_a_jump_starts_again_with_a_nop():
    handler, inside = bc.Label(), bc.Label()
    entry = bc.TryBegin(handler, push_lasti=False, stack_depth=0)
    call = _const(2)
    items = [bc.Instr("JUMP_FORWARD", inside),
             entry, _const(1), bc.Instr("POP_TOP"), inside, call, bc.Instr(RET),
             bc.TryEnd(entry), handler, bc.Instr("RERAISE", 0)]
    kept = live_only(items)
    begins = [item for item in kept if isinstance(item, bc.TryBegin)]
    assert len(begins) == 1 and begins[0] is not entry  # a fresh copy of the range
    assert (begins[0].target, begins[0].stack_depth) == (handler, 0)
    after = kept[kept.index(begins[0]) + 1]
    assert after.name == "NOP"  # a range never starts on an instruction that can raise
    assert kept[kept.index(after) + 1] is call
    assert any(isinstance(i, bc.Instr) and i.name == "RERAISE" for i in kept)  # handler kept


def test_nested_ranges_are_left_whole():
    outer_handler, inner_handler = bc.Label(), bc.Label()
    outer = bc.TryBegin(outer_handler, push_lasti=False, stack_depth=0)
    inner = bc.TryBegin(inner_handler, push_lasti=False, stack_depth=0)
    items = [outer, inner, bc.Instr("NOP"), bc.TryEnd(inner), bc.TryEnd(outer),
             _const(None), bc.Instr(RET), _const("dead"), bc.Instr(RET),
             outer_handler, inner_handler, bc.Instr("RERAISE", 0)]
    assert active_ranges(items) is None
    assert live_only(items) is items
    assert reached_from_handlers(items, [2]) is None


def test_reached_from_handlers_follows_the_handler_of_a_position():
    code = _function_returning_from_try.__code__
    items = list(decode(code))
    division = next(i for i, item in enumerate(items)
                    if isinstance(item, bc.Instr) and item.name in ("BINARY_OP",))
    reached = reached_from_handlers(items, [division])
    names = {items[i].name for i in reached if isinstance(items[i], bc.Instr)}
    assert "CHECK_EXC_MATCH" in names  # the ``except ZeroDivisionError`` test
    assert division not in reached  # the handler never runs the division again
    assert dis.opmap["CHECK_EXC_MATCH"]
