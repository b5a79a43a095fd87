"""Bytecode generation for graph breaks, part two: the code a broken frame runs (``break_code``).

Built as ``generate`` builds resume functions (capture-pitfalls.md, Q2): the ORIGINAL instruction
list kept whole, behind a forward-jumping prologue. The prologue calls the generated *prefix*
function (the compiled graph of everything before the break, plus rebuilding the live values),
stores the locals, pushes the stack and jumps to the unsupported instruction, which runs
natively. Right after it (and at its jump target, for a branch) a trampoline, appended after all
original code and outside every try range, pops the stack into temporaries and calls the resume
function. The frame's code is built once per plan and each entry gets it with its own prefix.
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass

import bytecode as bc

from npdynamo.capture.bytecode.code import (
    CO_VARARGS,
    CO_VARKEYWORDS,
    NULL_ABOVE_CALLABLE,
    PY,
    closure_names,
)
from npdynamo.capture.bytecode.generate import (
    call,
    drop_null,
    first_lineno,
    fresh_copy,
    header_end,
    load_attr,
    load_cell,
    push_callable,
    split_try_at,
    to_code,
)
from npdynamo.capture.bytecode.reachable import live_only


@dataclass
class Continuation:
    """Where execution goes after the native instruction: ``call(cells, *stack, *locals)``."""

    callable: object
    stack: tuple[str, ...]
    locals: tuple[str, ...] | None = None  # the locals handed over; None: the plan's
    #: call ``callable.<attribute>`` as read at run time (a dispatcher regenerated as entries
    #: are added), rather than ``callable`` itself
    attribute: str | None = None


@dataclass
class BreakPlan:
    """Everything ``break_code`` needs, decided by the translator."""

    code: types.CodeType
    arg_names: tuple[str, ...]  # the frame arguments, in order
    start: int  # first instruction run natively (KW_NAMES/PRECALL before a CALL count)
    index: int  # the unsupported instruction
    stack: tuple[str, ...]  # kinds at ``start``
    locals: tuple[str, ...]  # bound plain locals, rebuilt by the prefix
    cells: tuple[str, ...]  # bound cell variables (of this frame), rebuilt by the prefix
    prefix: object  # prefix(*frame_args) -> (locals..., cells..., non-NULL stack values...)
    fallthrough: Continuation | None
    branch: Continuation | None  # for a conditional jump: where its jump goes
    #: a function's own frame's last call, ``handoff(resume.dispatch(cells, *args))``, drives
    #: the resume chain; a resume function's frame (None) returns a ``tail_call`` instead
    handoff: object = None
    #: ``tail_call([*reversed(stack + locals), cells, resume.take])``: the list-like marker
    tail_call: object = None
    #: frame arguments unbound at the break (deleted before it): cleared by the prologue
    unbound: tuple[str, ...] = ()
    #: native tail (``breaks/native_tail.py``): instead of ``fallthrough``/``branch``, the original
    #: code runs on after the instruction and hands over before each of these instruction indices
    stops: tuple[tuple[int, Continuation], ...] = ()


class _PrefixSlot:
    """Stands for the prefix in a cached broken frame's code: each entry's own prefix is put in
    its place (``break_code``). A class of its own, so no constant of the user's equals it."""

    __slots__ = ()


#: The broken frames' code already built, keyed by their plan without its prefix:
#: ``(plan, code, index of the prefix slot in co_consts)``, the 512 most recently added.
#: A loop whose body breaks captures the same resume function again at each guard miss (a new
#: type among the items), and each capture breaks at the same instruction with the same stack,
#: locals and resume functions: only the prefix, the graph before the break, differs. Encoding
#: is most of a break's cost, so its code is built once and each entry swaps its prefix in.
_BREAK_CODES: dict[tuple, tuple[BreakPlan, types.CodeType, int]] = {}
BREAK_CODES_KEPT = 512


def _plan_key(plan: BreakPlan) -> tuple:
    """What ``_build_break_code`` reads of ``plan``, but the prefix. Objects go by identity (code
    objects compare by value: equal code in another file; the plan held with the cached code
    keeps each id valid)."""

    def cont(c: Continuation | None) -> tuple | None:
        return None if c is None else (id(c.callable), c.stack, c.locals, c.attribute)

    return (id(plan.code), plan.arg_names, plan.start, plan.index, plan.stack, plan.locals,
            plan.cells, cont(plan.fallthrough), cont(plan.branch), id(plan.handoff),
            id(plan.tail_call), plan.unbound,
            tuple((position, cont(c)) for position, c in plan.stops))


def break_code(plan: BreakPlan) -> types.CodeType:
    """The code a broken frame runs: prologue, the original body, trampolines at the end.
    Built once per plan (``_BREAK_CODES``); each call gets it with its own prefix."""
    key = _plan_key(plan)
    known = _BREAK_CODES.get(key)
    if known is None:
        slot = _PrefixSlot()
        kept = dataclasses.replace(plan, prefix=slot)  # holds no entry's graph alive
        built = _build_break_code(kept)
        at = next(i for i, const in enumerate(built.co_consts) if const is slot)
        if len(_BREAK_CODES) >= BREAK_CODES_KEPT:
            del _BREAK_CODES[next(iter(_BREAK_CODES))]
        known = _BREAK_CODES[key] = (kept, built, at)
    _plan, built, at = known
    consts = list(built.co_consts)
    consts[at] = plan.prefix
    return built.replace(co_consts=tuple(consts))


def _build_break_code(plan: BreakPlan) -> types.CodeType:
    code = plan.code
    lineno = first_lineno(code)
    b, instrs = fresh_copy(code)
    ins, first = instrs[plan.index], instrs[plan.start]
    tail: list = []
    for position, cont in sorted(plan.stops, key=lambda stop: -stop[0]):
        # right before the instruction, after its label: every native path there hands over,
        # while the prologue's own label (inserted below, nearer) still reaches ``first``
        label = bc.Label()
        instrs.insert(position, bc.Instr("JUMP_FORWARD", label, lineno=instrs[position].lineno))
        tail += [label, *_trampoline(plan, cont, code, instrs[position + 1].lineno)]
    index = _identity_index(instrs, ins)
    start = _identity_index(instrs, first)
    after = []
    if plan.fallthrough is not None:
        label = bc.Label()
        after.append(bc.Instr("JUMP_FORWARD", label, lineno=ins.lineno))
        tail += [label, *_trampoline(plan, plan.fallthrough, code, ins.lineno)]
    if plan.branch is not None:
        label = bc.Label()
        name = ins.name.replace("BACKWARD", "FORWARD")
        instrs[index] = bc.Instr(name, label, lineno=ins.lineno)
        tail.append(label)
        if name == "FOR_ITER" and PY >= (3, 12):
            # an exhausted FOR_ITER jumps past its target's END_FOR (3.13: END_FOR, POP_TOP)
            tail.append(bc.Instr("END_FOR", lineno=ins.lineno))
            if PY >= (3, 13):
                tail.append(bc.Instr("POP_TOP", lineno=ins.lineno))
        tail += _trampoline(plan, plan.branch, code, ins.lineno)
    instrs[index + 1 : index + 1] = after
    target = bc.Label()
    instrs.insert(start, target)
    split_try_at(instrs, start)
    header = header_end(instrs)
    instrs[header:header] = _prologue(plan, target, lineno)
    b.clear()
    b.extend(live_only(instrs + tail))  # what runs: the prologue, the native part, trampolines
    b.argnames = list(plan.arg_names)
    b.argcount = len(plan.arg_names)
    b.posonlyargcount = 0
    b.kwonlyargcount = 0
    b.flags = b.flags & ~(CO_VARARGS | CO_VARKEYWORDS)
    b.name = code.co_name
    return to_code(b, code)


def _identity_index(instrs: list, item: object) -> int:
    # list.index compares by value, and two instructions can be equal
    return next(i for i, x in enumerate(instrs) if x is item)


def _load_arg(name: str, cells: set[str], lineno: int) -> bc.Instr:
    if name in cells:  # an argument that is also a cell was moved into its cell by MAKE_CELL
        return bc.Instr("LOAD_DEREF", bc.CellVar(name), lineno=lineno)
    return bc.Instr("LOAD_FAST", name, lineno=lineno)


def _prologue(plan: BreakPlan, target: bc.Label, lineno: int) -> list:
    cells = set(plan.code.co_cellvars)
    tmp = "___npdynamo_live"
    # prefix(cells, *frame_args): the cells let closures made before the break be rebuilt
    seq = push_callable(plan.prefix, lineno)
    seq += _closure_tuple(plan.code, lineno)
    seq += [_load_arg(n, cells, lineno) for n in plan.arg_names]
    seq += call(1 + len(plan.arg_names), lineno)
    seq.append(bc.Instr("STORE_FAST", tmp, lineno=lineno))
    # arguments the code before the break deleted (``del x``; a resume function's stack
    # arguments, on the stack from here): the frame must not keep the old objects alive
    seq += [bc.Instr("DELETE_FAST", name, lineno=lineno) for name in plan.unbound]
    position = 0

    def item(i: int) -> list:
        return [
            bc.Instr("LOAD_FAST", tmp, lineno=lineno),
            bc.Instr("LOAD_CONST", i, lineno=lineno),
            bc.Instr("BINARY_SUBSCR", lineno=lineno),
        ]

    for name in plan.locals:
        seq += item(position) + [bc.Instr("STORE_FAST", name, lineno=lineno)]
        position += 1
    for name in plan.cells:
        seq += item(position) + [bc.Instr("STORE_DEREF", bc.CellVar(name), lineno=lineno)]
        position += 1
    for kind in plan.stack:
        if kind == "N":
            seq.append(bc.Instr("PUSH_NULL", lineno=lineno))
        else:
            seq += item(position)
            position += 1
    seq.append(bc.Instr("DELETE_FAST", tmp, lineno=lineno))
    seq.append(bc.Instr("JUMP_FORWARD", target, lineno=lineno))
    return seq


def _closure_tuple(code: types.CodeType, lineno: int) -> list:
    """Push the tuple of the frame's cell objects (its cells, then its free variables)."""
    seq = []
    names = closure_names(code)
    for name in names:
        var = bc.CellVar(name) if name in code.co_cellvars else bc.FreeVar(name)
        seq.append(load_cell(var, lineno))
    seq.append(bc.Instr("BUILD_TUPLE", len(names), lineno=lineno))
    return seq


def _trampoline(plan: BreakPlan, cont: Continuation, code: types.CodeType, lineno) -> list:
    """Pop the stack into temporaries, then hand them and the locals over: a function's own
    frame returns ``plan.handoff(cont.callable.dispatch(cells, *stack, *locals))`` (the
    handoff drives the tail calls that come back), a resume function's frame returns
    ``plan.tail_call([*reversed(stack + locals), cells, cont.callable.take])``.

    Each temporary and local is cleared as it is pushed: the callee (or the list) then holds
    the only reference (the frame keeps none of them alive while the resumed code runs, as
    Python's own frame would not)."""
    seq: list = []
    temps = []
    for i in range(len(cont.stack) - 1, -1, -1):
        if cont.stack[i] == "N":
            seq += drop_null(lineno)
        else:
            name = f"___npdynamo_s{i}"
            temps.append(name)
            seq.append(bc.Instr("STORE_FAST", name, lineno=lineno))
    temps.reverse()
    names = [*temps, *(plan.locals if cont.locals is None else cont.locals)]

    def passed(order: list) -> list:
        return [ins for name in order for ins in (bc.Instr("LOAD_FAST", name, lineno=lineno),
                                                  bc.Instr("DELETE_FAST", name, lineno=lineno))]

    if plan.handoff is not None:
        # the first resume is called from here, so it runs no deeper than Python's code would
        # by more than its dispatcher (sys.setrecursionlimit(depth + 10) in a test)
        seq += push_callable(plan.handoff, lineno)
        target = [bc.Instr("LOAD_CONST", cont.callable, lineno=lineno),
                  load_attr("dispatch", lineno)]
        null = bc.Instr("PUSH_NULL", lineno=lineno)
        seq += [*target, null] if NULL_ABOVE_CALLABLE else [null, *target]
        seq += _closure_tuple(code, lineno)
        seq += passed(names)
        seq += call(1 + len(names), lineno)
        seq += call(1, lineno)
        seq.append(bc.Instr("RETURN_VALUE", lineno=lineno))
        return seq
    seq += push_callable(plan.tail_call, lineno)
    seq += passed(names[::-1])
    seq += _closure_tuple(code, lineno)
    seq.append(bc.Instr("LOAD_CONST", cont.callable, lineno=lineno))
    if cont.attribute is not None:
        seq.append(load_attr(cont.attribute, lineno))
    seq.append(bc.Instr("BUILD_LIST", len(names) + 2, lineno=lineno))
    seq += call(1, lineno)
    seq.append(bc.Instr("RETURN_VALUE", lineno=lineno))
    return seq


def forget_break_codes() -> None:
    """Drop every built broken frame's code (``npdynamo.reset()``): they hold the user's code."""
    _BREAK_CODES.clear()
