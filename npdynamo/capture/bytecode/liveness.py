"""Which locals are live at an instruction: read on some path from there before being written.

Graph breaks use it to hand a resume function only the locals it can read. A dead local passed
on would be one more argument for the resume function's guards, and a dead loop counter
(``for _ in range(n):`` around a break) would make every iteration a new cache entry.

A backward data-flow over the ``bytecode`` library's instruction list: jumps and fall-throughs
are edges, and so is every instruction inside a ``try`` range to the range's handler (an
exception may leave from anywhere in it). ``DELETE_FAST`` counts as a read (it raises on an
unbound local). Code that can see its locals without naming them (``locals()``, ``vars()``,
``exec``/``eval``, ``dir()``, 3.11's zero-argument ``super()``) keeps every local live.
"""

from __future__ import annotations

import types
from functools import lru_cache

import bytecode as bc

from npdynamo.capture.bytecode.generate import TERMINAL, decoded_instructions

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
    instrs = decoded_instructions(code)
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
