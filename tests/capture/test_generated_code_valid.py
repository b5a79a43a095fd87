"""Generated code (broken frames, resume functions) keeps what CPython assumes of compiled code
and does not check when it runs it: from 3.12 an unchecked ``LOAD_FAST`` (and 3.13's two-local
loads) of a bound local only, a stack within ``co_stacksize``, exception-table depths the try
range's stack holds (``tests/code_check.py``). Breaking one of these crashes the interpreter
rather than raising (3.13 ``test_decimal`` crashed so, exit -11, under an interim encoding of
two-local instructions): every program here breaks its graph where those matter (more than 16
locals, a try range, a deleted local, a comprehension) and each generated code object is checked,
besides the differential comparison."""

from __future__ import annotations

import sys

import bytecode as bc
import numpy as np
import pytest

from npdynamo.capture.bytecode import break_code, generate, liveness
from tests.code_check import problems
from tests.differential import check_same

PY = sys.version_info[:2]


@pytest.fixture
def generated(monkeypatch):
    """Every code object the capture assembles during the test."""
    made: list = []
    to_code, encode = generate.to_code, liveness.encode

    def keep(code):
        made.append(code)
        return code

    # resume functions (generate) and broken frames' code (break_code) end in to_code
    for module in (generate, break_code):
        monkeypatch.setattr(module, "to_code", lambda b, original: keep(to_code(b, original)))
    monkeypatch.setattr(liveness, "encode", lambda b: keep(encode(b)))
    return made


def many_locals_loop(x):
    # more than 16 locals, so that a resume function's stack arguments push a loop's locals past
    # the 4-bit fields of 3.13's two-local instructions (test_flags_irrelevant's shape)
    a0, a1, a2, a3, a4, a5, a6, a7 = 1, 2, 3, 4, 5, 6, 7, 8
    b0, b1, b2, b3, b4, b5, b6, b7 = x * 1, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7, x * 8
    out = []
    for fn, args in [(max, [a0, a1]), (min, [a2, a3]), (max, [a4, a5, a6, a7])]:
        ans = fn(*args)
        flags = [k for k, v in {"p": ans > 2, "q": ans > 5}.items() if v]
        for extra in [[a0], [a1, a2]]:
            expected = list(flags)
            for flag in extra:
                if flag not in expected:
                    expected.append(flag)
            expected.sort(key=str)
            out.append((ans, expected, b0.tolist()))  # .tolist(): a graph break
    return out, b1 + b2 + b3 + b4 + b5 + b6 + b7


def break_in_a_try(x):
    before = x + 1
    try:
        y = before.tolist()
        z = y[10]
    except IndexError:
        z = before * 2
    return z, before


def deleted_then_maybe_bound(x, flag):
    t = x * 2
    del t
    print("break")
    if flag:
        t = x + 3
    try:
        return t
    except UnboundLocalError:
        return None


def comprehension_around_a_break(x):
    v = "outer"
    total = [v.tolist() + i for i in range(3) for v in (x, x * 2)]
    return total, v


#: (program, its arguments, (graphs, breaks)). 3.12+ inline comprehensions (PEP 709), so their
#: breaks are the caller's: many_locals_loop breaks once more, and comprehension_around_a_break
#: graphs ``x * 2`` before the ``+`` of a list and an int (which raises, in Python)
PEP709 = sys.version_info >= (3, 12)
PROGRAMS = [
    (many_locals_loop, lambda: (np.arange(3.0),), (2, 9) if PEP709 else (2, 8)),
    (break_in_a_try, lambda: (np.arange(3.0),), (1, 1)),
    (deleted_then_maybe_bound, lambda: (np.arange(3.0), True), (1, 1)),
    (deleted_then_maybe_bound, lambda: (np.arange(3.0), False), (0, 1)),
    (comprehension_around_a_break, lambda: (np.arange(2.0),), (1, 2) if PEP709 else (0, 1)),
]


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn,make,counts", PROGRAMS,
                         ids=[f"{p[0].__name__}-{i}" for i, p in enumerate(PROGRAMS)])
def test_generated_code_is_valid(generated, fn, make, counts, backend):
    check_same(fn, *make(), backend=backend, graphs=counts[0], breaks=counts[1])
    assert generated, "no code was generated: the program no longer breaks"
    assert [p for code in generated for p in problems(code)] == []


@pytest.mark.skipif(PY < (3, 12), reason="3.11's LOAD_FAST checks the local itself")
def test_the_check_finds_an_unchecked_load_of_an_unbound_local():
    def f(a):
        b = a
        return b

    code = bc.Bytecode.from_code(f.__code__)
    stores = [i for i, ins in enumerate(code) if getattr(ins, "name", None) == "STORE_FAST"]
    del code[stores[0]]  # b is never stored, its LOAD_FAST stays
    code.insert(stores[0], bc.Instr("POP_TOP"))
    assert problems(code.to_code()) == [f"f: offset {_offset_of_load(code.to_code(), 'b')}: "
                                        "LOAD_FAST of 'b', not bound on every path"]
    assert problems(f.__code__) == []


@pytest.mark.skipif(PY < (3, 13), reason="depths are checked from 3.13")
def test_the_check_finds_a_stack_deeper_than_its_size():
    def f(a, b, c):
        return (a, b, c)

    assert problems(f.__code__) == []
    short = f.__code__.replace(co_stacksize=2)
    assert any("co_stacksize 2" in p for p in problems(short))


def _offset_of_load(code, name: str) -> int:
    import dis

    return next(i.offset for i in dis.get_instructions(code)
                if i.opname.startswith("LOAD_FAST") and name in str(i.argval))
