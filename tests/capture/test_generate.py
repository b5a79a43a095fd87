"""``capture/bytecode/generate.py``: resume functions and the per-version pieces the break code
is made of. A resume function is built for hand-made keys (stack values, locals, a resume point
inside a ``try``) and run; its positions map back to the original code; the NULL and call
sequences run on this Python; ``stack_after`` gives the kinds CPython's stack holds. The
decode/encode round trip over the standard library is ``test_bytecode_roundtrip.py``."""

from __future__ import annotations

import types

import bytecode as bc
import numpy as np
import pytest

from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.bytecode.pairs import assemble
from tests.differential import check_same


def _at(fn, name: str, nth: int = 0) -> int:
    found = [i for i, ins in enumerate(gen.decoded_instructions(fn.__code__))
             if getattr(ins, "name", "").startswith(name)]
    return found[nth]


def _resumed(key: gen.ResumeKey):
    return types.FunctionType(gen.resume_code(key), globals())


def straight(x):
    y = x + 1
    z = y - 3
    return z, y


def test_a_resume_function_takes_its_stack_then_its_locals():
    # resuming at ``y - 3``'s subtraction: y and 3 on the stack, y a local
    key = gen.ResumeKey(straight.__code__, _at(straight, "BINARY_OP", 1), ("V", "V"), ("y",))
    resumed = _resumed(key)
    assert resumed(10, 3, 10) == (7, 10)
    assert gen.resume_code(key) is gen.resume_code(key)  # one code per key
    assert gen.user_name(resumed.__code__) == "straight"
    assert gen.user_label(resumed.__code__) == f"straight (from line {_line(straight, 2)})"


def _line(fn, offset: int) -> int:
    return fn.__code__.co_firstlineno + offset


def guarded(x):
    try:
        y = 10 // x
    except ZeroDivisionError:
        y = -1
    return y


def test_a_resume_point_inside_a_try_keeps_its_handler():
    key = gen.ResumeKey(guarded.__code__, _at(guarded, "BINARY_OP"), ("V", "V"), ())
    resumed = _resumed(key)
    assert resumed(10, 5) == 2
    assert resumed(10, 0) == -1  # the ZeroDivisionError is caught by the original handler


def test_resume_positions_map_back_to_the_original():
    start = _at(straight, "BINARY_OP", 1)
    code = gen.resume_code(gen.ResumeKey(straight.__code__, start, ("V", "V"), ("y",)))
    inside = gen.frame_position(code, straight.__code__, start)
    assert inside is not None
    assert gen.original_position(code, inside) == (straight.__code__, start)
    assert gen.original_position(straight.__code__, 4) == (straight.__code__, 4)
    assert gen.original_position(code, 0) is None  # the prologue is generated code
    gen.forget_resume_codes()
    assert gen.original_position(code, inside) == (code, inside)


def _run(seq: list) -> object:
    b = bc.Bytecode([bc.Instr("RESUME", 0), *seq, bc.Instr("RETURN_VALUE")])
    return types.FunctionType(assemble(b), {})()


def test_the_call_sequences_run_on_this_python():
    assert _run([*gen.push_callable(len, 1), bc.Instr("LOAD_CONST", "abc"), *gen.call(1, 1)]) == 3
    # a NULL pushed and dropped again leaves the stack as it was
    assert _run([bc.Instr("LOAD_CONST", 7), bc.Instr("PUSH_NULL"), *gen.drop_null(1)]) == 7
    assert _run([bc.Instr("LOAD_CONST", 1j), gen.load_attr("imag", 1)]) == 1.0


@pytest.mark.parametrize("fn, name, kinds, jump, after", [
    (straight, "BINARY_OP", ("V", "V"), False, ("V",)),
    (guarded, "BINARY_OP", ("V", "V"), False, ("V",)),
])
def test_stack_after(fn, name, kinds, jump, after):
    block = [gen.decoded_instructions(fn.__code__)[_at(fn, name)]]
    assert gen.stack_after(block, kinds, jump) == after


def test_stack_after_a_for_iter_and_a_call():
    def loop(xs):
        for x in xs:
            print(x)

    block = [gen.decoded_instructions(loop.__code__)[_at(loop, "FOR_ITER")]]
    assert gen.stack_after(block, ("V",), jump=False) == ("V", "V")  # the next item
    assert gen.stack_after(block, ("V",), jump=True) == ()  # exhausted: the iterator popped
    assert gen.stack_after(gen.call(1, 1), ("N", "V", "V") if PY < (3, 13) else ("V", "N", "V"),
                           jump=False) == ("V",)


def break_inside_try(x, items):
    total = x * 0.0
    try:
        for v in items:
            total = total + v
            print("item")
    except TypeError:
        total = total - 1.0
    return total


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_break_in_a_loop_inside_a_try_resumes_under_its_handler(backend):
    # the frame breaks at the print; the resume function continues in the loop (and breaks
    # at the print of each later item), then the code after the loop
    check_same(break_inside_try, np.ones(2), [1.0, 2.0], backend=backend, graphs=2, breaks=2)
    # "a" makes the resume function's capture find a TypeError: it runs in Python, where the
    # original handler catches it
    check_same(break_inside_try, np.ones(2), [1.0, "a"], backend=backend, graphs=1, breaks=1)
