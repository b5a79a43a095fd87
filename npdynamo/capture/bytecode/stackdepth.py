"""The stack size of generated code, found by one walk of its flat instruction list.

Part of the bytecode layer: ``pairs.assemble`` asks here before encoding a broken frame's code,
a resume function or a hand-over rewrite. The bytecode library finds the stack size on a
control-flow graph it builds for the purpose (copying every instruction into blocks, then
converting back): about half of the cost of encoding, and encoding was about half of the cost of
a graph break (CPython's test_complex: 489 encodes, 16 of its 33 s profiled in that graph).

The walk here follows the same rules on the list itself: each instruction's stack effect (the
library's own ``pre_and_post_stack_effect``, taken or not taken for a jump), jumps to their
labels, and from every instruction inside a try range to its handler, which starts at the depth
the exception table restores (kept as decoded: ``generate.decode``), plus the exception and,
with ``push_lasti``, the offset. It answers None where it does not model the code (nested or
mismatched try ranges, a handler depth not known, a stack that underflows or has two depths at
one instruction): the library then computes the size, or refuses the code, as before.
"""

from __future__ import annotations

import dis
from collections.abc import Sequence

import bytecode as bc

from npdynamo.capture.bytecode.reachable import active_ranges


def max_stack_depth(items: Sequence) -> int | None:
    """The largest stack depth a run of ``items`` (an abstract instruction list, entry at index
    0) reaches; None when the walk cannot be sure (see the module docstring)."""
    active = active_ranges(items)
    if active is None:
        return None
    labels = {id(item): i for i, item in enumerate(items) if isinstance(item, bc.Label)}
    depth_at: dict[int, int] = {}
    handled: set[int] = set()
    deepest = 0
    work = [(0, 0)]
    while work:
        i, depth = work.pop()
        while i < len(items):
            known = depth_at.get(i)
            if known is not None:
                if known != depth:
                    return None
                break
            depth_at[i] = depth
            item = items[i]
            i += 1
            if not isinstance(item, bc.Instr):
                continue
            entry = active[i - 1]
            if entry is not None and id(entry) not in handled:
                handled.add(id(entry))
                target = labels.get(id(entry.target))
                if type(entry.stack_depth) is not int or target is None:
                    return None
                start = entry.stack_depth + 1 + bool(entry.push_lasti)
                deepest = max(deepest, start)
                work.append((target, start))
            if item.has_jump():
                taken = _after(item, depth, jump=True)
                target = labels.get(id(item.arg))
                if taken is None or target is None:
                    return None
                deepest = max(deepest, taken)
                work.append((target, taken))
                if item.is_uncond_jump():
                    break
            after = _after(item, depth, jump=False)
            if after is None:
                return None
            if item.is_final():
                break
            depth = after
            deepest = max(deepest, depth)
    return deepest


#: (opcode, what of the argument sizes the effect, jump) -> (pops, pushes): the library's
#: answer, which asks ``dis.stack_effect`` anew for every instruction
_EFFECTS: dict[tuple, tuple[int, int]] = {}
_CONSTS = frozenset(dis.hasconst)


def _after(ins: bc.Instr, depth: int, jump: bool) -> int | None:
    """The depth after ``ins`` runs on ``depth``; None for an underflow."""
    arg = ins.arg
    # an int argument counts items (a call's, a build's); a (flag, name) pair's flag says
    # whether a NULL is pushed; names, constants and labels do not change the effect
    if type(arg) is int and ins.opcode not in _CONSTS:
        sized = arg
    elif type(arg) is tuple and arg and type(arg[0]) is bool:
        sized = arg[0]
    else:
        sized = None
    key = (ins.opcode, sized, jump)
    effect = _EFFECTS.get(key)
    if effect is None:
        effect = _EFFECTS[key] = ins.pre_and_post_stack_effect(jump=jump)
    pops, pushes = effect
    if depth + pops < 0:
        return None
    return depth + pops + pushes

