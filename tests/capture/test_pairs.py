"""``capture/bytecode/pairs.py``: code assembled from an instruction list names the locals the
list names, 3.13's two-local instructions included (split into one-local halves when the bytecode
library packs them wrongly). A resume function hit this in CPython's test_exceptions; the graph
break tests run every resume function through ``assemble``."""

from __future__ import annotations

import types

import bytecode as bc
import numpy as np
import pytest

from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.bytecode.generate import decode
from npdynamo.capture.bytecode.pairs import assemble, pairs_misencoded, split_pairs
from tests.differential import check_same

only_313 = pytest.mark.skipif(PY < (3, 13), reason="two-local instructions are 3.13 bytecode")

MANY = [f"v{i}" for i in range(20)]


def _returns_pair(first: str, second: str) -> bc.Bytecode:
    """``def f(v0, ..., v19): return (first, second)`` with one LOAD_FAST_LOAD_FAST."""
    b = bc.Bytecode([bc.Instr("RESUME", 0), bc.Instr("LOAD_FAST_LOAD_FAST", (first, second)),
                     bc.Instr("BUILD_TUPLE", 2), bc.Instr("RETURN_VALUE")])
    b.argnames = MANY
    b.argcount = len(MANY)
    return b


def _call(code: types.CodeType):
    return types.FunctionType(code, {})(*range(len(MANY)))


@only_313
@pytest.mark.parametrize("first, second", [("v1", "v2"), ("v15", "v3"), ("v16", "v17"),
                                           ("v2", "v19")])
def test_a_two_local_instruction_reads_the_locals_it_names(first, second):
    assert _call(assemble(_returns_pair(first, second))) == (int(first[1:]), int(second[1:]))


@only_313
def test_split_pairs_writes_two_one_local_halves():
    split = split_pairs(_returns_pair("v16", "v17"))
    names = [(ins.name, ins.arg) for ins in split if isinstance(ins, bc.Instr)]
    assert names[1:3] == [("LOAD_FAST", "v16"), ("LOAD_FAST", "v17")]
    assert _call(split.to_code()) == (16, 17)


@only_313
def test_a_pair_past_the_4_bit_fields_is_found_misencoded():
    b = _returns_pair("v16", "v17")
    assert pairs_misencoded(b, b.to_code()) == (_call(b.to_code()) != (16, 17))
    good = _returns_pair("v1", "v2")
    assert not pairs_misencoded(good, good.to_code())


def _locals_and_arithmetic(a, b):
    c = a + b
    d = c * a
    return c, d, a - b


def test_assemble_of_a_decoded_function_is_the_function():
    code = assemble(decode(_locals_and_arithmetic.__code__))
    assert code.co_varnames == _locals_and_arithmetic.__code__.co_varnames
    assert code.co_stacksize == _locals_and_arithmetic.__code__.co_stacksize
    again = types.FunctionType(code, globals())
    assert again(3, 4) == _locals_and_arithmetic(3, 4)
    assert not pairs_misencoded(decode(code), code)


def _many_locals_broken(x):
    # a resume function takes the live stack and locals as leading arguments: twenty locals and
    # a break push the loop's pair loads past local 15
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9 = (x + i for i in range(10))
    b0, b1, b2, b3, b4, b5, b6, b7 = (x * i for i in range(8))
    print("break")
    total = x * 0
    for u, v in ((a0, b7), (a9, b0), (a5, b3)):
        total = total + u * v
    return total + a1 + a2 + a3 + a4 + a6 + a7 + a8 + b1 + b2 + b4 + b5 + b6


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_resume_function_with_many_locals(backend):
    check_same(_many_locals_broken, np.arange(3.0), backend=backend, graphs=2, breaks=1)
