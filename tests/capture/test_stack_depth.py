"""Generated code's stack size without the bytecode library's control-flow graph (issue 23, item 5).

``bytecode/stackdepth.py`` walks the flat instruction list; the library built a graph of blocks
for the same answer at every encode, about half of a graph break's cost in CPython's test
modules. Counted, never timed:

- the walk gives the library's stack size on real code (standard library functions, with their
  try ranges, handlers, loops and ``with`` blocks) and on the code graph breaks generate;
- the code encoded is the library's, instruction for instruction, with the same exception table;
- a capture with graph breaks builds no control-flow graph at all;
- code the walk does not model (nested try ranges, an underflow) goes to the library as before.
"""

from __future__ import annotations

import contextlib
import dis
import inspect
import io
import types

import bytecode as bc
import numpy as np
import pytest

import npdynamo
from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.bytecode import pairs
from npdynamo.capture.bytecode.stackdepth import max_stack_depth
from tests.capture.test_capture_cost import PROGRAMS
from tests.fidelity import check_fidelity


def _codes(module) -> list[types.CodeType]:
    """Every code object of ``module``'s functions and methods, nested ones included."""
    out, todo = [], []
    for value in vars(module).values():
        if isinstance(value, type):
            todo += [v for v in vars(value).values() if isinstance(v, types.FunctionType)]
        elif isinstance(value, types.FunctionType):
            todo.append(value)
    stack = [fn.__code__ for fn in todo if fn.__module__ == module.__name__]
    while stack:
        code = stack.pop()
        out.append(code)
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return out


def _library_depth(b: bc.Bytecode) -> int:
    return bc.ControlFlowGraph.from_bytecode(b).compute_stacksize()


@pytest.mark.parametrize("module_name", ["_pydecimal", "statistics", "functools", "contextlib"])
def test_walk_gives_the_library_stack_size_on_library_code(module_name):
    # generator code is left out: no graph break generates any (its RETURN_GENERATOR's push is
    # not in the stack effects; the walk sees an underflow and leaves it to the library)
    codes = [c for c in _codes(__import__(module_name)) if not c.co_flags & _SUSPENDING]
    assert len(codes) > 20
    for code in codes:
        b = gen.decode(code)
        assert max_stack_depth(list(b)) == _library_depth(b), code.co_qualname


_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _index_table(raw: bytes) -> list:
    """An exception table as (start, end, target, depth-and-lasti) ranges, adjacent equal ones
    merged (the library's graph splits a range at block boundaries; CPython reads both alike)."""
    out = []
    for entry in dis._parse_exception_table(types.SimpleNamespace(co_exceptiontable=raw)):
        rest = (entry.target, entry.depth, entry.lasti)
        if out and out[-1][1] == entry.start and out[-1][2] == rest:
            out[-1][1] = entry.end
        else:
            out.append([entry.start, entry.end, rest])
    return out


@pytest.fixture
def encodes(monkeypatch):
    """Every instruction list encoded, with the code the library's own route gives for it."""
    seen: list[tuple[str, types.CodeType, types.CodeType, int]] = []
    walked = pairs._to_code

    def checked(b):
        code = walked(b)
        reference = b.to_code(compute_exception_stack_depths=False)
        seen.append((b.name, code, reference, _library_depth(b)))
        return code

    monkeypatch.setattr(pairs, "_to_code", checked)
    return seen


def test_break_code_encodes_as_the_library_does(encodes):
    for fn, n in PROGRAMS:  # breaks in try ranges, handlers, with blocks and loops
        npdynamo.reset()  # the resume codes are generated anew, through the fixture
        graphs = 0 if fn.__name__ == "break_in_handler" and n == 5 else None
        with contextlib.redirect_stdout(io.StringIO()):
            check_fidelity(fn, np.arange(4.0), n, backend="eager", graphs=graphs)
    assert len(encodes) > 30
    for name, code, reference, depth in encodes:
        assert code.co_code == reference.co_code, name
        assert code.co_consts == reference.co_consts and code.co_names == reference.co_names
        assert list(code.co_positions()) == list(reference.co_positions()), name
        assert _index_table(code.co_exceptiontable) == _index_table(
            reference.co_exceptiontable), name
        assert code.co_stacksize == reference.co_stacksize == depth, name


def test_a_break_builds_no_control_flow_graph(monkeypatch):
    built = []
    original = bc.ControlFlowGraph.from_bytecode

    def counting(b):
        built.append(b.name)
        return original(b)

    monkeypatch.setattr(bc.ControlFlowGraph, "from_bytecode", staticmethod(counting))
    npdynamo.reset()
    fn, n = PROGRAMS[-1]  # nested handlers in a loop: breaks in try ranges and handlers
    with contextlib.redirect_stdout(io.StringIO()):
        check_fidelity(fn, np.arange(4.0), n, backend="eager")
    assert gen._RESUME_CODES, "the prints should have broken the graph"
    assert built == []


def test_code_the_walk_does_not_model_goes_to_the_library():
    outer_handler, inner_handler = bc.Label(), bc.Label()
    outer = bc.TryBegin(outer_handler, push_lasti=False, stack_depth=0)
    inner = bc.TryBegin(inner_handler, push_lasti=False, stack_depth=0)
    nested = [outer, inner, bc.Instr("NOP"), bc.TryEnd(inner), bc.TryEnd(outer),
              bc.Instr("RETURN_CONST", None) if "RETURN_CONST" in dis.opmap
              else bc.Instr("LOAD_CONST", None),
              outer_handler, inner_handler, bc.Instr("RERAISE", 0)]
    assert max_stack_depth(nested) is None
    underflow = [bc.Instr("POP_TOP"), bc.Instr("LOAD_CONST", None), bc.Instr("RETURN_VALUE")]
    assert max_stack_depth(underflow) is None
    b = bc.Bytecode(underflow)
    with pytest.raises(RuntimeError):  # the library refuses it, as before: a CannotBreak
        pairs.assemble(b)
