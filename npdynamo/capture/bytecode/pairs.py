"""3.13's two-local instructions (``LOAD_FAST_LOAD_FAST``, ``STORE_FAST_STORE_FAST``,
``STORE_FAST_LOAD_FAST``) in generated code: checked after encoding, split when misencoded.

Part of the bytecode layer (``generate.encode`` asks here): a resume function takes its stack as
extra leading locals, which pushes a loop's locals past the 4-bit fields these instructions pack
two local indices into, and the bytecode library does not always notice.
"""

from __future__ import annotations

import dis
import types

import bytecode as bc

from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.bytecode.stackdepth import max_stack_depth


def assemble(b: bc.Bytecode) -> types.CodeType:
    """``b`` as a code object (exception-table depths as written), its two-local instructions
    naming the locals ``b`` names."""
    code = _to_code(b)
    if PY >= (3, 13) and pairs_misencoded(b, code):
        return _to_code(split_pairs(b))
    return code


def _to_code(b: bc.Bytecode) -> types.CodeType:
    # the stack size from one walk of the list where it can tell (``stackdepth``), else from
    # the library's control-flow graph, which also refuses code whose stack underflows
    depth = max_stack_depth(list.copy(b))  # list.copy: no per-item checks of Bytecode.__iter__
    return b.to_code(stacksize=depth, compute_exception_stack_depths=False)


#: 3.13's two-local instructions, as their two one-local halves.
_PAIRS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
          "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
          "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST")}
_PAIR_OPCODES = {dis.opmap.get(name) for name in _PAIRS}


def pairs_misencoded(b: bc.Bytecode, code: types.CodeType) -> bool:
    """Whether a two-local instruction of ``code`` names other locals than ``b`` wrote. Their
    oparg holds two 4-bit indices, which the bytecode library packs from the indices it has
    while assembling, not the final ones, and packs 16 as ``(i << 4) + 16``: a resume function,
    with its stack as extra locals, lost ``args`` of ``for exc, args, ... in`` (3.13
    test_exceptions.testAttributes, ``UnboundLocalError``)."""
    wanted = [tuple(ins.arg) for ins in b if getattr(ins, "name", None) in _PAIRS]
    if not wanted:
        return False
    names, raw, got, extended = code.co_varnames, code.co_code, [], 0
    for at in range(0, len(raw), 2):
        op, arg = raw[at], raw[at + 1] | extended
        extended = arg << 8 if op == dis.EXTENDED_ARG else 0
        if op in _PAIR_OPCODES:
            first, second = arg >> 4, arg & 15
            got.append(tuple(names[i] if i < len(names) else None for i in (first, second)))
    return got != wanted


def split_pairs(b: bc.Bytecode) -> bc.Bytecode:
    """``b`` with its two-local instructions as two one-local ones."""
    out = b.copy()
    out.clear()
    for ins in b:
        halves = _PAIRS.get(getattr(ins, "name", None))
        if halves is None:
            out.append(ins)
        else:
            out.extend(bc.Instr(half, local, location=ins.location)
                       for half, local in zip(halves, ins.arg))
    return out
