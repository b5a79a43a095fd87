"""More regressions found by ``make conformance`` on Python 3.11 (round 3 of issue 23), one class
per section, each a small program of the shape the CPython test had: plain and compiled must
agree on results, identities and exceptions (``check_fidelity``), on both backends."""

from __future__ import annotations

import operator

import pytest

from tests.fidelity import check_fidelity

BACKENDS = ["eager", "numba"]


# -- a string built at run time is not the code's constant (test_operator.test_is,
#    test_class.testSetattrWrapperNameIntern): rebuilt after a break, it was a literal of the
#    generated code, which the compiler interns or shares with an equal literal ------------------
def computed_string_after_break():
    a = b = "xyzpdq"
    c = a[:3] + b[3:]
    print("break")
    return operator.is_(a, b), operator.is_(a, c), a is c, c == a


def decoded_name_after_break():
    name = str(b"__add__", "ascii")
    literal = "__add__"
    print("break")
    return name is literal, name is not literal, name == literal


def computed_numbers_after_break(n):
    big = n * 10**20
    f = n / 3
    print("break")
    return big is n * 10**20, f is n / 3, big == n * 10**20, f == n / 3


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (computed_string_after_break, ()),
    (decoded_name_after_break, ()),
    (computed_numbers_after_break, (7,)),
])
def test_computed_constants_keep_their_identity(fn, args, backend):
    check_fidelity(fn, *args, backend=backend)
