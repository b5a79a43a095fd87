"""A checker for code objects npdynamo generates (broken frames, resume functions): what CPython
assumes of compiled code and does not check when it runs it.

A test helper (``tests/capture/test_generated_code_valid.py``, and any script hunting a crash):
from 3.12, ``LOAD_FAST`` and 3.13's two-local loads read a local without checking that it is
bound (the compiler emits them only where it proves so, ``LOAD_FAST_CHECK`` elsewhere), and the
interpreter trusts ``co_stacksize``. Generated code that breaks either crashes the process rather
than raising. ``problems(code)`` walks the code's control flow, exception edges included, and
lists:

- an unchecked load of a local that is not bound on every path to it;
- (3.13) a stack deeper than ``co_stacksize``, below empty, or of two depths where paths meet;
- (3.13) an instruction in a try range with a shallower stack than its handler's table entry says
  (the unwinder pops down to that depth, never up: the handler would read below the stack);
- (3.12+) a ``FOR_ITER`` whose jump target is not its loop exit's cleanup, which the interpreter
  skips by a fixed count of code units (``generate.loop_exits_misplaced``).
"""

from __future__ import annotations

import dis
import sys
import types

from npdynamo.capture.bytecode.generate import loop_exits_misplaced

PY = sys.version_info[:2]
_UNCONDITIONAL = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE",
                  "JUMP", "JUMP_NO_INTERRUPT"}
_ENDS = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))


def problems(code: types.CodeType) -> list[str]:
    """What is wrong with ``code`` (empty when nothing), nested code objects included."""
    found = [f"{code.co_name}: {p}" for p in _problems(code)]
    found += [f"{code.co_name}: offset {at}: FOR_ITER does not jump to its END_FOR cleanup"
              for at in loop_exits_misplaced(code)]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += problems(const)
    return found


def _problems(code: types.CodeType) -> list[str]:
    instrs = list(dis.get_instructions(code))
    at = {ins.offset: i for i, ins in enumerate(instrs)}
    handlers = dis._parse_exception_table(code)  # (start, end, target, depth, lasti) entries
    cells = set(code.co_cellvars) | set(code.co_freevars)
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    bound0 = frozenset(code.co_varnames[:nargs]) | cells
    # state before each instruction: (depth, locals bound on every path)
    state: dict[int, tuple[int, frozenset]] = {}
    out: list[str] = []
    state[0] = (0, bound0)
    work = [(0, 0, bound0)]

    def reach(index: int, depth: int, bound: frozenset) -> None:
        old = state.get(index)
        if old is None:
            state[index] = (depth, bound)
            work.append((index, depth, bound))
            return
        if old[0] != depth and PY >= (3, 13):
            out.append(f"offset {instrs[index].offset}: stack depth {old[0]} and {depth} meet")
        merged = old[1] & bound
        if merged != old[1]:
            state[index] = (old[0], merged)
            work.append((index, old[0], merged))

    while work:
        index, depth, bound = work.pop()
        if state[index][1] != bound:
            continue  # a later merge narrowed it: that visit carries on
        ins = instrs[index]
        for start, end, target, hdepth, lasti in handlers:
            if start <= ins.offset < end:
                if depth < hdepth and PY >= (3, 13):  # unwinding pops down to hdepth, never up
                    out.append(f"offset {ins.offset}: {ins.opname} at depth {depth} in a try"
                               f" range whose handler expects {hdepth}")
                reach(at[target], hdepth + lasti + 1, bound)
        bound, unbound_reads = _locals_step(ins, bound, cells)
        out += [f"offset {ins.offset}: {ins.opname} of {n!r}, not bound on every path"
                for n in unbound_reads]
        name = ins.opname
        if name in _ENDS:
            continue
        if ins.opcode in _JUMPS:
            target_depth = depth + dis.stack_effect(ins.opcode, ins.arg, jump=True)
            _check_depth(out, ins, target_depth, code)
            reach(at[ins.argval], target_depth, bound)
            if name in _UNCONDITIONAL:
                continue
        next_depth = depth + dis.stack_effect(ins.opcode, ins.arg, jump=False) \
            if ins.opcode >= dis.HAVE_ARGUMENT else depth + dis.stack_effect(ins.opcode)
        _check_depth(out, ins, next_depth, code)
        if index + 1 < len(instrs):
            reach(index + 1, next_depth, bound)
    return out


def _check_depth(out: list[str], ins, depth: int, code: types.CodeType) -> None:
    # 3.12's dis gives no stack effect to RETURN_GENERATOR's push nor FOR_ITER's exit as the
    # interpreter runs them: depths are checked from 3.13
    if PY >= (3, 13) and depth < 0 or depth > code.co_stacksize:
        out.append(f"offset {ins.offset}: {ins.opname} leaves depth {depth}"
                   f" (co_stacksize {code.co_stacksize})")


def _locals_step(ins, bound: frozenset, cells: set) -> tuple[frozenset, list[str]]:
    """The locals bound after ``ins``, and the unchecked reads it makes of unbound ones."""
    name, arg = ins.opname, ins.argval
    reads: list[str] = []
    if name == "LOAD_FAST" and PY >= (3, 12):
        reads = [arg]
    elif name == "LOAD_FAST_LOAD_FAST":
        reads = list(arg)
    elif name == "STORE_FAST_LOAD_FAST":
        bound = bound | {arg[0]}
        reads = [arg[1]]
    elif name == "STORE_FAST_STORE_FAST":
        bound = bound | set(arg)
    elif name in ("STORE_FAST", "LOAD_FAST_CHECK"):
        bound = bound | {arg}
    elif name in ("DELETE_FAST", "LOAD_FAST_AND_CLEAR"):
        bound = bound - {arg}
    return bound, [n for n in reads if n not in bound and n not in cells]
