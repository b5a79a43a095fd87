"""Which opcodes a handler module of ``capture/opcodes`` registers for the running Python, and
which ones a set of test programs runs through, so that each module's mirror test shows its
programs reach every handler it has (or names those they cannot reach, and why)."""

from __future__ import annotations

import dis
from types import CodeType, ModuleType

from npdynamo.capture.registry import HANDLERS


def handled_by(module: ModuleType) -> set[str]:
    """The opcode names ``module`` registered a handler for that are real instructions of this
    Python (a handler also registers the names other versions spell the instruction with, and
    pseudo-instructions such as ``JUMP``, which the compiler rewrites before the code exists)."""
    real = {name for name, op in dis.opmap.items() if op < 256}
    return {name for name, fn in HANDLERS.items()
            if fn.__module__ == module.__name__ and name in real}


def opnames(*functions) -> set[str]:
    """Every opcode in the code of ``functions`` and of the code objects nested in them."""
    found: set[str] = set()
    todo: list[CodeType] = [f.__code__ for f in functions]
    while todo:
        code = todo.pop()
        found.update(ins.opname for ins in dis.get_instructions(code))
        todo += [c for c in code.co_consts if isinstance(c, CodeType)]
    return found
