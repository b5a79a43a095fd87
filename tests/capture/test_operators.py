"""``capture/opcodes/operators.py``: the handlers of binary, in-place, comparison, unary, identity
and membership operators. The operator tables against CPython's own, then each handler in a small
program, plain against compiled with exact graph/break counts, the programs together reaching
every handler the module registers on the running Python. Scalar arithmetic is tested at length
in ``test_scalar_math.py`` and the conformance tests; here each operator form once."""

from __future__ import annotations

import dis
import operator

import numpy as np
import pytest

from npdynamo.capture.opcodes import operators
from npdynamo.capture.opcodes.operators import BINARY_SYMBOLS, COMPARE_SYMBOLS, PY_OPERATORS
from npdynamo.generated import evaluate
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import check_same


def test_the_tables_are_cpythons():
    for name, symbol in dis._nb_ops:  # (NB_ADD, '+'), (NB_INPLACE_ADD, '+='), ...
        bare = name.removeprefix("NB_").removeprefix("INPLACE_")
        assert BINARY_SYMBOLS[bare] == symbol.removesuffix("="), name
    assert sorted(COMPARE_SYMBOLS.values()) == sorted(dis.cmp_op)
    a, b = np.array([[7, 2], [1, 3]]), np.array([[3, 1], [2, 2]])  # every operator takes them
    for symbol, fn in PY_OPERATORS.items():
        assert np.array_equal(evaluate(f"a {symbol} b", {"a": a, "b": b}), fn(a, b)), symbol
    assert PY_OPERATORS["@"] is operator.matmul


def arithmetic(x, m, n):
    a = (x + n) * 2 - x / 3 ** n  # BINARY_OP
    b = (x // 2) % 3  # floor division, remainder
    mm = m @ m
    k = ((n << 2) >> 1) & 7 | 1 ^ 2  # integer operators on Python numbers
    a += 1  # an in-place form of BINARY_OP (a new array: ``a`` is the frame's own)
    return a, b, mm, -x, +x, ~k, abs(x), k


def comparisons(x, n, opt, d):
    small = x < n  # COMPARE_OP on an array: an array of bools
    same = opt is None  # IS_OP
    inside = "a" in d and n not in (1, 2)  # CONTAINS_OP on a dict and a tuple of constants
    neg = not n  # UNARY_NOT (TO_BOOL on 3.13)
    return small, same, inside, neg, x == x, n >= 2


def list_to_tuple(x, rest):
    return (x * 2, *rest)  # CALL_INTRINSIC_1 INTRINSIC_LIST_TO_TUPLE (3.12+)


class Bag:
    def __contains__(self, item):
        return item == 1


def in_a_user_object(x, bag):
    y = x * 2
    found = 1 in bag  # its __contains__ is user code: a break
    return y + found


PROGRAMS = [arithmetic, comparisons, list_to_tuple, in_a_user_object]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_operators_match_python(backend):
    x, m = np.arange(1.0, 4.0), np.eye(2)
    check_same(arithmetic, x, m, 2, backend=backend, graphs=1, breaks=0)
    check_same(comparisons, x, 2, None, {"a": 1}, backend=backend, graphs=1, breaks=0)
    check_same(list_to_tuple, x, [1, 2], backend=backend, graphs=1, breaks=0)
    check_same(in_a_user_object, x, Bag(), backend=backend, graphs=2, breaks=1)


def test_the_programs_reach_every_handler_of_the_module():
    # UNARY_POSITIVE is 3.11's (then CALL_INTRINSIC_1); TO_BOOL 3.13's
    assert handled_by(operators) <= opnames(*PROGRAMS)
