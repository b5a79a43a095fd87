"""Which locals are live at an instruction: read on some path from there before being written.

Graph breaks use it to hand a resume function only the locals it can read. A dead local passed
on would be one more argument for the resume function's guards, and a dead loop counter
(``for _ in range(n):`` around a break) would make every iteration a new cache entry.

A backward data-flow over the ``bytecode`` library's instruction list: jumps and fall-throughs
are edges, and so is every instruction inside a ``try`` range to the range's handler (an
exception may leave from anywhere in it). ``DELETE_FAST`` counts as a read (it raises on an
unbound local). Code that can see its locals without naming them (``locals()``, ``vars()``,
``exec``/``eval``, ``dir()``, 3.11's zero-argument ``super()``) keeps every local live.

``hand_over`` uses the same analysis on generated code (dispatchers, runners): a local passed to
a call whose result is returned, and not read after it, is cleared as it is passed, so that the
callee holds the only reference, as a Python frame's own local would be its only holder.
"""

from __future__ import annotations

import types
from functools import lru_cache

import bytecode as bc

from npdynamo.capture.bytecode.generate import TERMINAL, decode, decoded_instructions, encode

#: Names whose call can read the frame's locals implicitly.
IMPLICIT_READERS = frozenset({"locals", "vars", "exec", "eval", "dir", "super"})
READS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "DELETE_FAST"}
WRITES = {"STORE_FAST"}
UNCONDITIONAL = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"}


def live_locals(code: types.CodeType, index: int) -> frozenset[str] | None:
    """The locals of ``code`` live before instruction ``index``; None when every local may be
    read (the code reads its locals implicitly)."""
    live_in = _analyse(code)
    return None if live_in is None else live_in[index]


def _reads_writes(ins: bc.Instr) -> tuple[tuple[str, ...], tuple[str, ...]]:
    name, arg = ins.name, ins.arg
    if not isinstance(arg, (str, tuple)) or isinstance(arg, bc.CellVar):
        return (), ()
    if name in READS:
        return (arg,), ()
    if name in WRITES:
        return (), (arg,)
    if name == "LOAD_FAST_LOAD_FAST":
        return tuple(arg), ()
    if name == "STORE_FAST_STORE_FAST":
        return (), tuple(arg)
    if name == "STORE_FAST_LOAD_FAST":  # stores arg[0], then loads arg[1]
        stored, loaded = arg
        return ((loaded,) if loaded != stored else ()), (stored,)
    return (), ()


@lru_cache(maxsize=256)
def _analyse(code: types.CodeType) -> tuple[frozenset[str], ...] | None:
    if IMPLICIT_READERS & set(code.co_names):
        return None
    return _live_in(decoded_instructions(code))


def _live_in(instrs: list) -> tuple[frozenset[str], ...]:
    """The locals live before each item of ``instrs``."""
    labels = {item: i for i, item in enumerate(instrs) if isinstance(item, bc.Label)}
    successors: list[list[int]] = []
    handler = None  # the TryBegin whose range is open at this point, if any
    for i, item in enumerate(instrs):
        if isinstance(item, bc.TryBegin):
            handler = item
        elif isinstance(item, bc.TryEnd) and item.entry is handler:
            handler = None
        succ = []
        if isinstance(item, bc.Instr):
            if item.name not in TERMINAL and item.name not in UNCONDITIONAL:
                succ.append(i + 1)
            if isinstance(item.arg, bc.Label):
                succ.append(labels[item.arg])
            if handler is not None:
                succ.append(labels[handler.target])
        else:
            succ.append(i + 1)
        successors.append([s for s in succ if s < len(instrs)])
    effects = [
        _reads_writes(item) if isinstance(item, bc.Instr) else ((), ()) for item in instrs
    ]
    live: list[frozenset[str]] = [frozenset()] * len(instrs)
    changed = True
    while changed:  # iterate to the fixed point, last instruction first
        changed = False
        for i in range(len(instrs) - 1, -1, -1):
            out: set[str] = set()
            for s in successors[i]:
                out |= live[s]
            reads, writes = effects[i]
            new = frozenset(out.difference(writes).union(reads))
            if new != live[i]:
                live[i] = new
                changed = True
    return tuple(live)


#: Instructions that push without reading the stack below or running user code that could see
#: the frame's locals: a call's callable and arguments are pushed by these.
_PUSHES = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL",
           "LOAD_DEREF", "PUSH_NULL"}


#: code -> its ``hand_over`` form. Code objects compare without their file name, and the
#: generated code of one shape (a dispatcher of n entries and arity k) is the same text for
#: every resume point: each shape is rewritten once (the bytecode library's round trip costs
#: ~40 ms, and a dispatcher is regenerated at each new entry).
_HANDED: dict[types.CodeType, types.CodeType] = {}
HANDED_KEPT = 512


def hand_over(code: types.CodeType) -> types.CodeType:
    """``code`` (generated, never the user's) with each local that a ``return f(..., x, ...)``
    passes and that is dead after the call cleared as it is pushed (``LOAD_FAST x;
    DELETE_FAST x``): the called frame then holds the only reference, so the object dies when
    the callee drops it, as it would in the user's own frame (a weak reference dies, a cycle
    is collected, a generator is finalised at the same point as in Python)."""
    done = _HANDED.get(code)
    if done is None:
        if len(_HANDED) >= HANDED_KEPT:
            del _HANDED[next(iter(_HANDED))]
        done = _HANDED[code] = _hand_over(code)
    return done.replace(co_filename=code.co_filename)


def _hand_over(code: types.CodeType) -> types.CodeType:
    if IMPLICIT_READERS & set(code.co_names):
        return code
    b = decode(code)
    instrs = list(b)
    live = _live_in(instrs)
    clear: dict[int, set[int]] = {}  # index of a load -> which of its names to clear
    for i, item in enumerate(instrs):
        if not (isinstance(item, bc.Instr) and item.name == "CALL"
                and _returns(instrs, i + 1)):
            continue
        seen: set[str] = set()
        j = i - 1
        if isinstance(instrs[j], bc.Instr) and instrs[j].name == "PRECALL":
            j -= 1
        while j >= 0 and isinstance(instrs[j], bc.Instr) and instrs[j].name in _PUSHES:
            names = _reads_writes(instrs[j])[0] if instrs[j].name != "LOAD_DEREF" else ()
            for k in range(len(names) - 1, -1, -1):  # the last load of a name clears it
                if names[k] not in seen and names[k] not in live[i]:
                    clear.setdefault(j, set()).add(k)
                seen.add(names[k])
            j -= 1
    if not clear:
        return code
    out: list = []
    for j, item in enumerate(instrs):
        if j not in clear:
            out.append(item)
            continue
        names = _reads_writes(item)[0]
        for k, name in enumerate(names):  # a LOAD_FAST_LOAD_FAST becomes two loads
            out.append(bc.Instr("LOAD_FAST", name, lineno=item.lineno)
                       if len(names) > 1 else item)
            if k in clear[j]:
                out.append(bc.Instr("DELETE_FAST", name, lineno=item.lineno))
    b.clear()
    b.extend(out)
    return encode(b)


def _returns(instrs: list, index: int) -> bool:
    """The next instruction at ``index`` (past labels and try markers: a handler's reads are in
    the liveness of the call, which its range covers) returns the top of the stack."""
    while index < len(instrs) and not isinstance(instrs[index], bc.Instr):
        index += 1
    return index < len(instrs) and instrs[index].name == "RETURN_VALUE"
