"""Bytecode generation for graph breaks: decoding, the shared helpers, resume functions.

Resume functions and the code a broken frame runs (``break_code.py``) are built the same way
(capture-pitfalls.md, Q2): take the ORIGINAL instruction list, keep it whole, and put a forward-
jumping prologue in front that rebuilds the Python stack and locals and jumps to the instruction
where execution continues. The original exception table stays in force (a try range active at the
jump target is split so its start is not dead code), so ``try``, ``with`` and loops keep their
exact semantics.

* ``resume_code``: the original function continued after the break; its arguments are the stack
  values (NULL slots are re-pushed by the prologue) and the bound locals; the frame's cells come
  in as its closure, so closures made before the break see later assignments.

Per-version sequences (how to call, how to drop a NULL) live in the helpers at the top.
"""

from __future__ import annotations

import dis
import gc
import re
import types
from dataclasses import dataclass

import bytecode as bc

from npdynamo.capture.bytecode.code import (
    CO_NESTED,
    CO_VARARGS,
    CO_VARKEYWORDS,
    NULL_ABOVE_CALLABLE,
    PY,
    call_slots,
    closure_names,
)
from npdynamo.capture.bytecode.pairs import assemble
from npdynamo.capture.bytecode.reachable import live_only

TERMINAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}


def _nop() -> None:
    """Called to consume a NULL slot: popping a NULL with POP_TOP crashes CPython."""


# -- per-version instruction sequences ---------------------------------------------------------
def push_callable(obj: object, lineno: int) -> list[bc.Instr]:
    """Push a constant callable ready for ``call`` (NULL below it until 3.12, above from 3.13)."""
    return list(call_slots(bc.Instr("LOAD_CONST", obj, lineno=lineno),
                           bc.Instr("PUSH_NULL", lineno=lineno)))


def call(nargs: int, lineno: int) -> list[bc.Instr]:
    if PY == (3, 11):
        return [bc.Instr("PRECALL", nargs, lineno=lineno), bc.Instr("CALL", nargs, lineno=lineno)]
    return [bc.Instr("CALL", nargs, lineno=lineno)]


def drop_null(lineno: int) -> list[bc.Instr]:
    """Consume the NULL on top of the stack by calling a no-op through it."""
    seq = [bc.Instr("LOAD_CONST", _nop, lineno=lineno)]
    if NULL_ABOVE_CALLABLE:  # the no-op goes below the NULL
        seq.append(bc.Instr("SWAP", 2, lineno=lineno))
    return seq + call(0, lineno) + [bc.Instr("POP_TOP", lineno=lineno)]


def load_attr(name: str, lineno: int) -> bc.Instr:
    """Replace the top of the stack by its attribute ``name`` (3.12+ packs a method flag)."""
    return bc.Instr("LOAD_ATTR", name if PY == (3, 11) else (False, name), lineno=lineno)


def load_cell(var, lineno: int) -> bc.Instr:
    """Push a cell object itself (to build a closure tuple)."""
    if PY >= (3, 13):
        return bc.Instr("LOAD_FAST", var, lineno=lineno)  # 3.13 spells LOAD_CLOSURE so
    return bc.Instr("LOAD_CLOSURE", var, lineno=lineno)


# -- reading and splitting the original ---------------------------------------------------------
def decode(code: types.CodeType) -> bc.Bytecode:
    """``code`` as an editable instruction list. The exception table's stack depths are kept as
    written (and ``encode`` does not recompute them): a prologue's jump into a try range must
    not change the depth its handler restores."""
    return bc.Bytecode.from_code(code, conserve_exception_block_stackdepth=True)


def encode(b: bc.Bytecode) -> types.CodeType:
    """The code object of an instruction list from ``decode``."""
    return assemble(b)


#: code -> (its decoded Bytecode's attributes, an empty Bytecode; its items as a tuple), the 512
#: most recently added. Decoding is most of a break's cost on a long function (a 2,800-instruction
#: test method: ~25 ms a decode), so each code is decoded once; a resume function's decoding is
#: the very list it was assembled from (``_build_resume_code``), so it is never decoded at all.
#: The items are held once (a tuple), not also in the Bytecode list: the collector walks each.
_DECODED: dict[types.CodeType, tuple[bc.Bytecode, tuple]] = {}
DECODED_KEPT = 512


def _remember(code: types.CodeType, decoded: bc.Bytecode) -> tuple[bc.Bytecode, tuple]:
    if len(_DECODED) >= DECODED_KEPT:
        # another thread's gc.collect() may empty the cache between these lines
        _DECODED.pop(next(iter(_DECODED), None), None)
    attributes = decoded.copy()
    list.clear(attributes)
    _DECODED[code] = both = (attributes, tuple(decoded))
    return both


def _decoded_both(code: types.CodeType) -> tuple[bc.Bytecode, tuple]:
    both = _DECODED.get(code)
    if both is None:
        both = _remember(code, decode(code))
    return both


def _empty_at_full_collection(phase: str, info: dict) -> None:
    """Empty the decode cache when a full collection starts (a ``gc.callbacks`` hook).

    The cache only saves time, and holds tens of thousands of instruction objects in a session
    with many breaks (8,300 objects and 68,000 references after 18 of 3.12 ``test_deque``'s
    tests, a third of what compiling added to the heap): a full collection walks them all, so
    a program calling ``gc.collect()`` in a loop paid for that walk at each call (3.12
    ``test_deque`` ``test_gc_doesnt_blowup``, 100 collections: over 3x its plain time + 2 s).
    Emptied first, they are freed before the walk; the next capture decodes what it needs."""
    if phase == "start" and info.get("generation") == 2:
        _DECODED.clear()


gc.callbacks.append(_empty_at_full_collection)


def _decoded(code: types.CodeType) -> tuple:
    return _decoded_both(code)[1]


def decoded_instructions(code: types.CodeType) -> list:
    """The abstract instruction list of ``code`` (positions match the translator's)."""
    return list(_decoded(code))


def fresh_copy(code: types.CodeType) -> tuple[bc.Bytecode, list]:
    """A decoded copy whose LIST can be edited without touching the cache.

    The instruction, label and try-marker objects are the cached ones, shared: the builders
    below only insert and replace list items, never change an item in place (nor does the
    assembler, which works on copies)."""
    attributes, items = _decoded_both(code)
    b = attributes.copy()
    list.extend(b, items)  # the items were checked when decoded
    return b, list(items)


def split_try_at(instrs: list, position: int) -> None:
    """Insert nothing; make the try range open at ``position`` (if any) start again there.

    The prologue jumps straight to ``position``: a ``TryBegin`` before it would sit in dead code,
    so the range is closed before ``position`` and a copy opened at it."""
    open_entry = None
    for item in instrs[:position]:
        if isinstance(item, bc.TryBegin):
            open_entry = item
        elif isinstance(item, bc.TryEnd) and item.entry is open_entry:
            open_entry = None
    if open_entry is None:
        return
    copy = bc.TryBegin(open_entry.target, open_entry.push_lasti, open_entry.stack_depth)
    for i in range(position, len(instrs)):
        item = instrs[i]
        if isinstance(item, bc.TryEnd) and item.entry is open_entry:
            instrs[i] = bc.TryEnd(copy)
            break
    instrs[position:position] = [bc.TryEnd(open_entry), copy]


def header_end(instrs: list) -> int:
    """Index just after the first RESUME (MAKE_CELL / COPY_FREE_VARS come before it)."""
    for i, item in enumerate(instrs):
        if isinstance(item, bc.Instr) and item.name == "RESUME":
            return i + 1
    return 0


def first_lineno(code: types.CodeType) -> int:
    return code.co_firstlineno


def stack_after(block: list[bc.Instr], kinds: tuple[str, ...], jump: bool) -> tuple[str, ...]:
    """Stack kinds ('V' value, 'N' NULL) after ``block`` runs natively on a stack of ``kinds``;
    ``jump`` applies to the last instruction (3.11 splits a call over PRECALL and CALL)."""
    block = [ins for ins in block if isinstance(ins, bc.Instr)]
    for i, ins in enumerate(block):
        last_jump = jump and i == len(block) - 1
        if ins.name == "FOR_ITER":  # next item pushed, or (exhausted) the iterator popped
            kinds = kinds[:-1] if last_jump else (*kinds, "V")
            continue
        pre, _post = ins.pre_and_post_stack_effect(jump=last_jump)
        pops = max(0, -pre)
        pushes = ins.stack_effect(jump=last_jump) + pops
        kinds = (kinds[: len(kinds) - pops] if pops else kinds) + ("V",) * pushes
    return kinds


# -- resume functions ----------------------------------------------------------------------------
_RESUME_NAME = re.compile(r"^__resume_at_\d+_(.*)$")


def user_name(code: types.CodeType) -> str:
    """The user's function name behind a (possibly resume) code object."""
    name = code.co_name
    match = _RESUME_NAME.match(name)
    while match:
        name = match.group(1)
        match = _RESUME_NAME.match(name)
    return name


def user_label(code: types.CodeType) -> str:
    """How a report names the frame of ``code`` to the user: ``fit``, or for a resume function
    ``fit (from line 44)``, the line of the user's code where it continues after a break."""
    if not _RESUME_NAME.match(code.co_name):
        return code.co_qualname
    name = user_name(code)
    key = next((k for k, made in list(_RESUME_CODES.items()) if made is code), None)
    if key is not None:
        for ins in decoded_instructions(key.code)[key.start:]:
            if isinstance(ins, bc.Instr) and isinstance(ins.lineno, int) and ins.lineno > 0:
                return f"{name} (from line {ins.lineno})"
    return f"{name} (after a graph break)"


@dataclass(frozen=True)
class ResumeKey:
    code: types.CodeType
    start: int  # index in the decoded instruction list where the resume function continues
    stack: tuple[str, ...]  # kinds of the stack slots, bottom first
    locals: tuple[str, ...]  # names of the locals passed as arguments


_RESUME_CODES: dict[ResumeKey, types.CodeType] = {}
#: id(resume code) -> (resume code, original code, {resume position: original position}): a
#: break inside a resume function is keyed by where it sits in the ORIGINAL code, so every loop
#: iteration reuses the same resume functions instead of nesting new ones.
_ORIGINS: dict[int, tuple[types.CodeType, types.CodeType, dict[int, int]]] = {}


def original_position(code: types.CodeType, index: int) -> tuple[types.CodeType, int] | None:
    """``(original code, position)`` of the instruction at ``index`` of ``code``; ``code`` itself
    unless it is a resume function's code; None for generated instructions (its prologue)."""
    known = _ORIGINS.get(id(code))
    if known is None or known[0] is not code:
        return code, index
    position = known[2].get(index)
    return None if position is None else (known[1], position)


def frame_position(code: types.CodeType, original: types.CodeType, position: int) -> int | None:
    """The index in ``code`` of the instruction at ``position`` of ``original`` (the inverse of
    ``original_position``); None when ``code`` does not hold it."""
    known = _ORIGINS.get(id(code))
    if known is None or known[0] is not code:
        return position if code is original else None
    if known[1] is not original:
        return None
    for index, at in known[2].items():
        if at == position:
            return index
    return None


def exhausted_start(instrs: list, target: int) -> int:
    """Where a loop continues once FOR_ITER (jump target ``target``) is exhausted: 3.12 skips
    the END_FOR there, 3.13 END_FOR and the POP_TOP after it (the iterator is already popped)."""
    if PY < (3, 12):
        return target
    skip = 1 if PY == (3, 12) else 2
    i = target
    while skip:
        if isinstance(instrs[i], bc.Instr):
            skip -= 1
        i += 1
    return i


#: Instructions of code generated so far for the graph breaks of each original code object
#: (``regenerated``): each break decodes and re-assembles the whole function, a cost in its size.
_REGENERATED: dict[types.CodeType, int] = {}


def regenerated(code: types.CodeType, more: int = 0) -> int:
    """Instructions generated for ``code``'s breaks so far, after adding ``more``."""
    _REGENERATED[code] = _REGENERATED.get(code, 0) + more
    return _REGENERATED[code]


def forget_resume_codes() -> None:
    """Drop every generated resume code (``npdynamo.reset()``): they hold the user's code."""
    _RESUME_CODES.clear()
    _REGENERATED.clear()
    _ORIGINS.clear()
    _DECODED.clear()


def resume_code(key: ResumeKey) -> types.CodeType:
    """The code of the resume function for ``key`` (cached: one per key)."""
    if key not in _RESUME_CODES:
        _RESUME_CODES[key] = _build_resume_code(key)
    return _RESUME_CODES[key]


def _build_resume_code(key: ResumeKey) -> types.CodeType:
    code = key.code
    b, instrs = fresh_copy(code)
    original_index = {id(item): i for i, item in enumerate(instrs)}
    lineno = first_lineno(code)
    cells = set(code.co_cellvars)
    passed = set(key.locals)
    target = bc.Label()
    instrs.insert(key.start, target)
    split_try_at(instrs, key.start)
    body = []
    origins: list[tuple[bc.Instr, int]] = []
    seen_resume = False
    for item in instrs:
        if isinstance(item, bc.Instr):
            if item.name in ("MAKE_CELL", "COPY_FREE_VARS"):
                continue  # the cells arrive as the closure
            if item.name == "RESUME" and not seen_resume:
                seen_resume = True
                continue
            rewritten = _rewrite_for_resume(item, cells, passed)
            origins.append((rewritten[0], original_index[id(item)]))
            body.extend(rewritten)
        else:
            body.append(item)
    names = closure_names(code)
    stack_args = [f"___stack{i}" for i, kind in enumerate(key.stack) if kind == "V"]
    prologue = []
    if names:
        prologue.append(bc.Instr("COPY_FREE_VARS", len(names), lineno=lineno))
    prologue.append(bc.Instr("RESUME", 0, lineno=lineno))
    arg_iter = iter(stack_args)
    for kind in key.stack:
        if kind == "N":
            prologue.append(bc.Instr("PUSH_NULL", lineno=lineno))
        else:  # the stack holds it now, and nothing else must (a frame has no copy)
            name = next(arg_iter)
            prologue.append(bc.Instr("LOAD_FAST", name, lineno=lineno))
            prologue.append(bc.Instr("DELETE_FAST", name, lineno=lineno))
    prologue.append(bc.Instr("JUMP_FORWARD", target, lineno=lineno))
    built = live_only(prologue + body)  # the code before the resume point is dead (mostly)
    b.clear()
    b.extend(built)
    b.argnames = stack_args + list(key.locals)
    b.argcount = len(b.argnames)
    b.posonlyargcount = 0
    b.kwonlyargcount = 0
    b.cellvars = []
    b.freevars = list(names)
    flags = b.flags & ~(CO_VARARGS | CO_VARKEYWORDS)
    b.flags = flags | CO_NESTED if names else flags
    b.name = f"__resume_at_{key.start}_{user_name(code)}"
    if hasattr(b, "qualname"):
        b.qualname = b.name
    new = to_code(b, code)
    # the translator reads ``new`` as the list it was assembled from (the same program as a
    # decode of it gives, in the same order): no decoding, and positions map by identity
    _remember(new, b)
    from_built = {id(ins): index for ins, index in origins}
    positions = {i: from_built[id(ins)] for i, ins in enumerate(built) if id(ins) in from_built}
    _ORIGINS[id(new)] = (new, code, positions)
    return new


def _as_free(arg):
    if isinstance(arg, bc.CellVar):
        return bc.FreeVar(arg.name)
    return arg


def to_code(b: bc.Bytecode, original: types.CodeType) -> types.CodeType:
    """``b`` as a code object whose stack holds at least what the original code's did. The
    bytecode library sizes the stack from the blocks it reaches from the entry: a handler
    reached only through a try range that now starts after a jump can be left out, and a frame
    whose stack overflows its size writes over the next frame (test_exceptions: a method call
    in an ``except`` block after a break returned the globals, or crashed)."""
    new = encode(b)
    if new.co_stacksize < original.co_stacksize:
        new = new.replace(co_stacksize=original.co_stacksize)
    misplaced = loop_exits_misplaced(new)
    if misplaced:  # the caller breaks before it instead (``CannotBreak``): never run such code
        raise InvalidCode(f"{new.co_name}: FOR_ITER at offsets {misplaced} does not jump to its"
                          " END_FOR cleanup")
    return new


class InvalidCode(ValueError):
    """Generated code that CPython would run wrongly (it does not check it): never run."""


#: What a 3.12+ ``FOR_ITER`` must jump to: the exhausted loop skips this many code units past its
#: target (3.12: the ``END_FOR``; 3.13: the ``END_FOR`` and the ``POP_TOP`` after it), trusting
#: they are these, so anything else there is skipped in their place or runs on a stack that
#: lost the iterator (a crash: 3.12/3.13 ``test_decimal``)
_LOOP_EXIT = {(3, 12): ("END_FOR",), (3, 13): ("END_FOR", "POP_TOP")}.get(PY, ())
_FOR_ITER = dis.opmap["FOR_ITER"]


def loop_exits_misplaced(code: types.CodeType) -> list[int]:
    """Offsets of the ``FOR_ITER`` instructions of ``code`` whose jump target is not the loop
    exit's cleanup, which the interpreter skips without looking (3.12+; empty on 3.11, whose
    ``FOR_ITER`` jumps to its target itself)."""
    raw = code.co_code
    if not _LOOP_EXIT or _FOR_ITER not in raw[::2]:
        return []
    instrs = list(dis.get_instructions(code))
    at = {ins.offset: i for i, ins in enumerate(instrs)}
    bad = []
    for ins in instrs:
        if ins.opcode == _FOR_ITER:
            i = at.get(ins.argval, len(instrs))
            found = tuple(x.opname for x in instrs[i:i + len(_LOOP_EXIT)])
            if found != _LOOP_EXIT:
                bad.append(ins.offset)
    return bad


def _rewrite_for_resume(ins: bc.Instr, cells: set[str], passed: set[str]) -> list[bc.Instr]:
    """Cells become free variables; loads of locals that may be unbound become checked loads
    (a plain LOAD_FAST of an unbound local crashes 3.12+)."""
    name = ins.name
    if isinstance(ins.arg, bc.CellVar):
        return [bc.Instr(name, _as_free(ins.arg), lineno=ins.lineno)]
    if PY >= (3, 13) and name == "LOAD_FAST" and isinstance(ins.arg, str) and ins.arg in cells:
        # 3.13's LOAD_CLOSURE of an argument that is also a cell decodes as a plain local
        return [bc.Instr(name, bc.FreeVar(ins.arg), lineno=ins.lineno)]
    if PY < (3, 12):
        return [ins]
    if name == "LOAD_FAST" and isinstance(ins.arg, str) and ins.arg not in passed:
        return [bc.Instr("LOAD_FAST_CHECK", ins.arg, lineno=ins.lineno)]
    if name == "LOAD_FAST_LOAD_FAST":
        return [_checked_load(n, passed, ins.lineno) for n in ins.arg]
    if name == "STORE_FAST_LOAD_FAST":
        store, load = ins.arg
        return [
            bc.Instr("STORE_FAST", store, lineno=ins.lineno),
            _checked_load(load, passed, ins.lineno),
        ]
    return [ins]


def _checked_load(name: str, passed: set[str], lineno) -> bc.Instr:
    # after a store in the same instruction pair the local is bound, but a checked load is cheap
    return bc.Instr("LOAD_FAST" if name in passed else "LOAD_FAST_CHECK", name, lineno=lineno)
