"""``capture/special_methods.py``: operators, truth tests and ``len()`` on user objects follow
CPython's protocol under capture: the user's dunder inlined, the reflected one tried when the
first returns NotImplemented (a subclass's first), identity deciding ``==`` when neither side
does, and CPython's own TypeErrors; a dunder written in C or a class deriving from a builtin is
a break. The tables against the ``operator`` module's names, then programs, plain against
compiled with exact graph/break counts."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from npdynamo.capture.opcodes.operators import BINARY_SYMBOLS
from npdynamo.capture.special_methods import BINARY_DUNDERS, COMPARE_DUNDERS
from tests.differential import check_same


def test_the_tables_name_cpythons_methods():
    assert set(BINARY_DUNDERS) == set(BINARY_SYMBOLS.values())
    for symbol, name in BINARY_DUNDERS.items():
        assert hasattr(operator, f"__{name}__") and hasattr(np.ndarray, f"__r{name}__"), symbol
    for symbol, (name, reflected) in COMPARE_DUNDERS.items():
        # a reflected comparison is the mirrored operator: a < b is b > a
        assert getattr(operator, name)(1, 2) == getattr(operator, reflected)(2, 1), symbol


class Scaled:
    def __init__(self, k):
        self.k = k

    def __mul__(self, other):
        if type(other) is Scaled:
            return NotImplemented
        return other * self.k

    def __rmul__(self, other):
        return other * self.k

    def __eq__(self, other):
        return isinstance(other, Scaled) and other.k == self.k

    def __lt__(self, other):
        return self.k < other.k

    def __bool__(self):
        return self.k != 0

    def __len__(self):
        return 3


class Sub(Scaled):
    def __rmul__(self, other):  # a subclass's reflected method goes first
        return other * (self.k + 100)


class Plain:
    pass


class Sized:
    def __len__(self):
        return 2


class MyList(list):
    pass


def protocol(x, a, b, c, p, q, sized):
    # (an array with a user object is NumPy's business: an object array, never this protocol)
    k = a * 2.0 + 3.0 * a + 2.0 * c  # __mul__; float.__mul__ NotImplemented, then __rmul__
    k = k + a * c  # c's class derives from a's: its __rmul__ goes first (206.0, not 6.0)
    return (x * k, a == b, a != b, b < a, a > b, bool(a), len(a), p == p, p != q,
            not sized, bool(p))


def not_supported(a, b):
    return a * b  # Scaled * Scaled: both NotImplemented, CPython's TypeError


def c_method(x, items):
    y = x + 1
    n = items * 2  # a subclass of a builtin type: a break
    return y, n


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_the_protocol_matches_python(backend):
    x = np.arange(3.0)
    check_same(protocol, x, Scaled(2.0), Scaled(1.0), Sub(3.0), Plain(), Plain(), Sized(),
               backend=backend,
               graphs=1, breaks=0)


def test_what_python_refuses_raises_and_what_cannot_be_inlined_breaks():
    check_same(not_supported, Scaled(1.0), Scaled(2.0), graphs=0, breaks=0)
    check_same(c_method, np.arange(3.0), MyList([1]), graphs=1, breaks=1)
