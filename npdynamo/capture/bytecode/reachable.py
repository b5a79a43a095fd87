"""Dead code out of generated break code: only what can run from the code's entry is assembled.

A resume function is built from the WHOLE original instruction list behind a forward-jumping
prologue (``generate.py``), so what lies before its resume point is mostly dead. Assembling
(and, when it is captured, reading) the dead part was most of the cost of a graph break in a long
function (a test method of 2,800 instructions that breaks at each of its asserts regenerated all
of it per break), so ``live_only`` drops it before assembly. The same holds for a broken
frame's code: it runs a few instructions before a trampoline hands over.

What is kept is exactly what a run can reach from the entry: fall-through of every instruction
that is not final, jump targets, and the handler of every try range holding a kept instruction.
Try ranges are then rebuilt around the kept instructions (a range whose instructions were all
dropped disappears; one never starts in dead code, which the assembler refuses; each starts with
a ``NOP``, as CPython's own ranges start with an instruction that cannot raise). Kept
instructions and their order are unchanged, so the code runs exactly as before.
"""

from __future__ import annotations

import bytecode as bc


def live_only(items: list) -> list:
    """``items`` (an abstract instruction list, entry at index 0) without unreachable
    instructions; ``items`` itself when its try ranges are not the flat form it understands, or
    it holds an inlined comprehension."""
    if any(isinstance(item, bc.Instr) and item.name == "LOAD_FAST_AND_CLEAR" for item in items):
        # a 3.12+ inlined comprehension: cut, one crashed 3.12 (a resume function continuing
        # inside ``[v.tolist() for v in x * 2]``), for a reason not found yet; kept whole
        return items
    active = active_ranges(items)
    if active is None:
        return items
    return _rebuild(items, active, _reached(items, active, [0]))


def reached_from_handlers(items: list, positions: list[int]) -> set[int] | None:
    """What a run can reach from the handlers of the try ranges holding ``positions`` of
    ``items`` (an exception raised there, caught, and the handler going on); None when the try
    ranges are not the flat form understood here."""
    active = active_ranges(items)
    if active is None:
        return None
    labels = {id(item): i for i, item in enumerate(items) if isinstance(item, bc.Label)}
    handlers = {labels[id(active[i].target)] for i in positions if active[i] is not None}
    return _reached(items, active, list(handlers))


def _reached(items: list, active: list, starts: list[int]) -> set[int]:
    """The positions a run can reach from ``starts``: fall-through of every instruction that is
    not final, jump targets, the handler of every try range holding a reached instruction."""
    positions = {id(item): i for i, item in enumerate(items) if isinstance(item, bc.Label)}
    seen: set[int] = set()
    work = list(starts)
    while work:
        i = work.pop()
        while i < len(items) and i not in seen:
            seen.add(i)
            item = items[i]
            if isinstance(item, bc.Instr):
                entry = active[i]
                if entry is not None:
                    work.append(positions[id(entry.target)])
                if item.has_jump():
                    work.append(positions[id(item.arg)])
                if item.is_final():
                    break
            i += 1
    return seen


def active_ranges(items: list) -> list | None:
    """The try range (its ``TryBegin``) each item sits in; None if ranges nest or mismatch."""
    active: list = []
    current = None
    for item in items:
        if isinstance(item, bc.TryBegin):
            if current is not None:
                return None
            current = item
        elif isinstance(item, bc.TryEnd):
            if item.entry is not current:
                return None
            current = None
        active.append(current)
    return active


def _rebuild(items: list, active: list, seen: set[int]) -> list:
    """Labels and the reached instructions, with each run of kept instructions under the same
    original range wrapped in a fresh copy of that range's ``TryBegin``/``TryEnd``."""
    out: list = []
    open_entry = open_copy = None
    previous = None  # the last kept instruction
    for i, item in enumerate(items):
        if isinstance(item, bc.Label):
            out.append(item)
            continue
        if not isinstance(item, bc.Instr) or i not in seen:
            continue  # old range markers, dead instructions
        entry = active[i]
        if entry is not open_entry:
            if open_copy is not None:
                out.append(bc.TryEnd(open_copy))
            open_entry = entry
            open_copy = None
            if entry is not None:
                open_copy = bc.TryBegin(entry.target, entry.push_lasti, entry.stack_depth)
                out.append(open_copy)
                if item.name != "NOP" and not loop_exit_cleanup(item, previous):
                    # a range never starts with an instruction that can raise: 3.13 looks up
                    # the handler of a Python call that raised by the code unit before it, so
                    # a call first in its range (its range cut at a jump target) went unhandled
                    out.append(bc.Instr("NOP", location=item.location))
        out.append(item)
        previous = item
    if open_copy is not None:
        out.append(bc.TryEnd(open_copy))
    return out


def loop_exit_cleanup(item: bc.Instr, previous: bc.Instr | None) -> bool:
    """Whether ``item`` is the cleanup a ``FOR_ITER`` exit skips by a fixed count of code units:
    3.12+'s ``END_FOR`` at its jump target (and on 3.13 the ``POP_TOP`` right after it). An
    exhausted ``FOR_ITER`` pops its iterator and jumps one (3.13: two) code units PAST its
    target, so nothing may come between the target and those: a ``NOP`` put before the
    ``END_FOR`` made the exit land on the ``END_FOR``, which popped two more slots of a stack
    that no longer held them (3.12/3.13 ``test_decimal`` segfault). They cannot raise, so a range
    may start at them."""
    if item.name == "END_FOR":
        return True
    return item.name == "POP_TOP" and previous is not None and previous.name == "END_FOR"
