"""The bytecode layer of capture: decode, encode, code-object facts and data flow over instructions.

The only part of npdynamo that imports the ``bytecode`` library; the rest of capture reads its
instruction vocabulary from here (``from npdynamo.capture import bytecode as bc``), so a change
of library, or of how a CPython version lays out an instruction, has one home.

- ``code``: facts about a code object (argument layout, flags, the running Python version).
- ``generate``: decode/encode, and the code a broken frame runs and its resume functions are
  built from (the original instructions behind a forward-jumping prologue).
- ``liveness``: which locals are live at an instruction (what a resume function receives).
- ``reachable``: what can run from generated code's entry (dead code is not assembled).
- ``stackdepth``: the stack size of generated code, without the library's control-flow graph.

It imports nothing else of capture: the frame hook (``hooks/``) and every other part sit above it.
"""

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label, TryBegin, TryEnd

__all__ = ["Bytecode", "CellVar", "FreeVar", "Instr", "Label", "TryBegin", "TryEnd"]
