"""The native tail of a graph break: bookkeeping instructions run in the broken frame itself.

After the unsupported instruction runs natively, the broken frame used to hand over to a resume
function at once. In a loop whose body breaks, the code right after the break is often only
bookkeeping (``POP_TOP`` of ``print``'s result, the jump back, ``FOR_ITER``, the ``STORE_FAST`` of
the next item): a resume function there would capture an empty graph and break again at
``FOR_ITER``, a second hand-over per iteration that costs more than the bookkeeping itself.

So the broken frame keeps running the original bytecode natively through such instructions and
hands over where real work starts (the next *stop*). Running original bytecode natively is plain
Python by construction; only the stops' stack layouts and bound locals need working out, which
this module does by walking the instructions from the break's successors. Each stop becomes a
resume point of its own (keyed by its position in the original code, like every resume point),
so a loop body that breaks hands over once per iteration, to the same resume function.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.bytecode.liveness import live_locals
from npdynamo.capture.bytecode.reachable import reached_from_handlers

JUMPS = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
#: How many instructions a tail may walk: bookkeeping is short, this only bounds odd code.
WALK_LIMIT = 64


@dataclass(frozen=True)
class Stop:
    """Where the native tail hands over: the instruction at ``position`` of the original code
    has not run; the stack holds ``stack`` and ``locals`` are the live, bound locals."""

    position: int
    stack: tuple[str, ...]
    locals: tuple[str, ...]


def native_stops(
    code: types.CodeType,
    starts: list[tuple[int, tuple[str, ...]]],
    bound: tuple[str, ...],
    kept: frozenset[str] = frozenset(),
    native: tuple[int, ...] = (),
) -> list[Stop] | None:
    """The stops reached from ``starts`` (original positions with their stack kinds, right after
    the native instructions at ``native``) through bookkeeping instructions; None when the walk
    cannot be sure of a stop's bound locals (the caller then hands over right after the break,
    as before). ``kept``: bound locals handed over even where dead (their lifetime can be
    observed), as are the locals the tail stores."""
    instrs = gen.decoded_instructions(code)
    # position -> the locals stored on every path there (bound-on-all-paths is an intersection)
    stored_at: dict[int, frozenset[str]] = {}
    kinds_at: dict[int, tuple[str, ...]] = {}
    stops: set[int] = set()
    work = [(_next_instr(instrs, p), kinds, frozenset()) for p, kinds in starts]
    steps = 0
    while work:
        steps += 1
        if steps > WALK_LIMIT:
            return None
        pos, kinds, stored = work.pop()
        if pos is None:
            return None
        if pos in kinds_at:
            if kinds_at[pos] != kinds:
                return None
            if stored >= stored_at[pos]:
                continue  # nothing new bound on this path
            stored = stored & stored_at[pos]
        kinds_at[pos], stored_at[pos] = kinds, stored
        successors = _successors(instrs, pos, kinds, stored)
        if successors is None:
            stops.add(pos)
        else:
            work.extend(successors)
    raising = [*native, *(p for p in kinds_at if instrs[p].name == "FOR_ITER")]
    handled = _handled_paths(instrs, raising, stops, bound)
    if handled is None:
        return None
    result = []
    order = {name: i for i, name in enumerate(code.co_varnames)}
    for pos in sorted(stops):
        have = set(bound) | stored_at[pos]
        live = live_locals(code, pos)
        if live is not None and not live <= have:
            return None  # a local read later may be unbound here: do not guess
        # a local the tail stored is bound in Python's frame until overwritten, dead or not:
        # handed over (an object made by the native call dies where Python frees it); its
        # value is not read by the resume function, so it is not guarded either
        names = have if live is None else (live | kept | stored_at[pos]) & have
        if pos in handled and not names <= handled[pos]:
            return None
        result.append(Stop(pos, kinds_at[pos], tuple(sorted(names, key=order.__getitem__))))
    return result


def _handled_paths(instrs: list, raising: list[int], stops: set[int],
                   bound: tuple[str, ...]) -> dict[int, frozenset[str]] | None:
    """The stops an exception raised at ``raising`` (the native instructions, the tail's
    ``FOR_ITER``), caught by a handler that goes on, may reach, each with the locals surely
    bound there on that path: those bound at the break that no reached instruction deletes
    (``except E as e`` deletes ``e``). The tail's own stores are not among them: with
    ``from m import x`` raising and ``except ImportError: pass``, the hand-over's unchecked load
    of ``x`` crashed 3.12+ (``UnboundLocalError`` on 3.11). None: the try ranges are not
    understood. (Asynchronous exceptions, a ``KeyboardInterrupt`` at a jump, are not modelled.)"""
    reached = reached_from_handlers(instrs, raising)
    if reached is None:
        return None
    deleted = {instrs[p].arg for p in reached if isinstance(instrs[p], bc.Instr)
               and instrs[p].name in ("DELETE_FAST", "LOAD_FAST_AND_CLEAR")}
    sure = frozenset(bound) - deleted
    return {pos: sure for pos in stops & reached}


def _successors(instrs: list, pos: int, kinds: tuple[str, ...], stored: frozenset[str]):
    """Where a bookkeeping instruction goes on, or None: real work starts here (a stop)."""
    ins = instrs[pos]
    name = ins.name
    top_is_value = bool(kinds) and kinds[-1] == "V"
    if name == "NOP":
        return [(_next_instr(instrs, pos + 1), kinds, stored)]
    if name == "POP_TOP" and top_is_value:  # popping a NULL would crash: never walked
        return [(_next_instr(instrs, pos + 1), kinds[:-1], stored)]
    if name == "STORE_FAST" and top_is_value and isinstance(ins.arg, str):
        return [(_next_instr(instrs, pos + 1), kinds[:-1], stored | {ins.arg})]
    if name in JUMPS:
        return [(_next_instr(instrs, instrs.index(ins.arg)), kinds, stored)]
    if name == "FOR_ITER" and top_is_value:
        exhausted = gen.exhausted_start(instrs, instrs.index(ins.arg))
        return [
            (_next_instr(instrs, pos + 1), (*kinds, "V"), stored),
            (_next_instr(instrs, exhausted), kinds[:-1], stored),
        ]
    return None


def _next_instr(instrs: list, pos: int) -> int | None:
    """The first real instruction at or after ``pos`` (labels and try markers are no code)."""
    while pos < len(instrs) and not isinstance(instrs[pos], bc.Instr):
        pos += 1
    return pos if pos < len(instrs) else None
