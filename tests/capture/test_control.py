"""``capture/opcodes/control.py``: the handlers of jumps, loops, returns, raises, calls and
function creation. Each runs in a small program, plain against compiled with exact graph/break
counts, and the programs together reach every handler the module registers on the running
Python. Loop and branch formation have their own tests (``test_for_formation.py``,
``test_if_formation.py``, ``test_while_formation.py``); here the handlers' own work."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.opcodes import control
from tests.capture.assert_programs import on_python_value
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import check_same


def branches(x, n, opt):
    if n > 2:  # POP_JUMP_IF_FALSE
        x = x + 1
    if not n:  # POP_JUMP_IF_TRUE
        x = x - 1
    if opt is None:  # POP_JUMP_IF_NOT_NONE
        x = x * 2
    if opt is not None:  # POP_JUMP_IF_NONE
        x = x * opt
    k = n > 1 and n or -n  # JUMP_IF_FALSE_OR_POP / JUMP_IF_TRUE_OR_POP (3.11)
    return x * k


def loops(x, items):
    total = x * 0
    for v in items:  # GET_ITER, FOR_ITER, END_FOR (3.12+), JUMP_BACKWARD
        if v < 0:
            continue
        total = total + v
    i = 0
    while i < 3:
        total = total + x
        i += 1
    return total


def while_forms(x, n):
    i = 0
    while not i >= n:  # POP_JUMP_BACKWARD_IF_FALSE (3.11)
        x = x + 1
        i += 1
    v = None
    while v is None:  # POP_JUMP_BACKWARD_IF_NONE (3.11)
        v = i
    w = 1
    while w is not None:  # POP_JUMP_BACKWARD_IF_NOT_NONE (3.11)
        w = None
    if n > 2:
        a = 1.0
    else:  # JUMP_FORWARD over it
        a = 2.0
    m = n and 2  # JUMP_IF_FALSE_OR_POP (3.11)
    return x * a * m, v


def calls(x, w):
    def affine(v, scale=2.0, *, shift=0.0):  # MAKE_FUNCTION (SET_FUNCTION_ATTRIBUTE on 3.13)
        return v * scale + shift + w  # w: a closure

    args = (x,)
    kwargs = {"shift": 1.0}
    a = affine(x, shift=3.0)  # KW_NAMES + CALL (3.11/3.12), CALL_KW (3.13)
    b = affine(*args, **kwargs)  # CALL_FUNCTION_EX
    return a + b


def matches(x, pair):
    match pair:  # GET_LEN
        case (a, b):
            return x * a + b
        case _:
            return x


def returns_none(x):
    x += 1
    return None  # RETURN_CONST (3.12+)


def raises(x, n):
    if n > 3:
        raise ValueError("too big")  # RAISE_VARARGS
    return x


# on_python_value: LOAD_ASSERTION_ERROR, RAISE_VARARGS (outside this module: pytest rewrites
# the assert statements of test modules)
PROGRAMS = [branches, loops, while_forms, calls, matches, returns_none, on_python_value, raises]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_jumps_loops_calls_and_returns_match_python(backend):
    x = np.arange(3.0)
    check_same(branches, x, 3, None, backend=backend, graphs=1, breaks=0)
    check_same(branches, x, 0, 2.0, backend=backend, graphs=2, breaks=0)  # other constants
    check_same(loops, x, [1.0, -2.0, 3.0], backend=backend, graphs=1, breaks=0)
    check_same(while_forms, x, 3, backend=backend, graphs=1, breaks=0)
    check_same(calls, x, 0.5, backend=backend, graphs=1, breaks=0)
    # MATCH_SEQUENCE is not captured (a break); the resume function after it runs GET_LEN
    check_same(matches, x, (2.0, 1.0), backend=backend, graphs=1, breaks=1)
    check_same(returns_none, x, backend=backend, graphs=1, breaks=0)
    check_same(on_python_value, x, 2, backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("fn, args", [(on_python_value, (np.ones(2), 0)),
                                      (raises, (np.ones(2), 5))])
def test_a_raise_on_a_known_value_raises_as_python(fn, args):
    check_same(fn, *args, graphs=0, breaks=0)


def test_the_programs_reach_every_handler_of_the_module():
    # JUMP_BACKWARD_NO_INTERRUPT: only in ``yield from``/``await`` loops (generators)
    unreached = handled_by(control) - opnames(*PROGRAMS)
    assert unreached <= {"JUMP_BACKWARD_NO_INTERRUPT"}, unreached
