"""``capture/builder.py``: what wrapping an object read from the frame guards. Each kind of
input is compiled once and its entry's guards read: arrays on type, dtype and shape; numbers on
value; functions, ufuncs and modules on identity; a dict on the keys read, a list on its length
and the items read; a bound method of a C object on which method it is and its ``__self__``'s
type, never its identity (made anew at each read). Then the same programs run again with what
the guards leave free changed: no recompile. The constant test is asked directly. Guard kinds
and sources themselves are tested in ``test_guards*.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.builder import constant_value, is_constant, is_trusted_module
from npdynamo.capture.values import Const, TupleValue
from tests.differential import check_same

BACKENDS = ["eager", "numba"]
SCALE = 2.0


def reads_each_kind(x, n, table, items, fn):
    return x * n * SCALE + table["a"] + items[0] + fn(x) + np.exp(x)


def _guards(compiled) -> set[str]:
    (entry,) = npdynamo.inspect(compiled).entries
    return set(entry.guards)


def _args(b: str = "unused", last: object = "x"):
    return np.ones(2), 3, {"a": 1.0, "b": b}, [1.0, last], np.sin


def test_each_kind_is_guarded_as_far_as_it_is_used():
    compiled = check_same(reads_each_kind, *_args(), graphs=1, breaks=0)
    assert {"type(x) is ndarray", "x.dtype == float64", "x.shape == (2,)",  # an array
            "n == 3", "SCALE == 2.0",  # numbers, an argument's and a global's
            "fn is <ufunc sin>", "np is <module numpy>",  # by identity
            "type(table) is dict", "'a' in table", "table['a'] == 1.0",  # the key read
            "type(items) is list", "len(items) == 2", "items[0] == 1.0",  # the item read
            } == _guards(compiled)


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_the_guards_leave_free_does_not_recompile(backend):
    compiled = check_same(reads_each_kind, *_args(), backend=backend, graphs=1, breaks=0)
    check_same(reads_each_kind, *_args(b="other", last=None), compiled=compiled, graphs=1,
               breaks=0)
    check_same(reads_each_kind, *_args()[:1], 4, *_args()[2:], compiled=compiled, graphs=2,
               breaks=0)  # n is guarded on value


def draws_with(x, draw):
    return x + draw(size=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bound_method_made_anew_is_not_guarded_on_identity(backend):
    compiled = npdynamo.compile(draws_with, backend=backend)
    # a draw through a bound method passed in runs natively at a break (draws are captured as
    # ``rng.random(...)`` calls); each call a new Generator and a new bound method, and the
    # frame's entry serves them all
    for seed in range(3):
        check_same(draws_with, np.ones(2), np.random.default_rng(seed).random, graphs=1, breaks=1,
                   compiled=compiled)
    guards = set(npdynamo.inspect(compiled).entries[0].guards)
    assert "type(draw.__self__) is Generator" in guards
    assert any(g.startswith("draw.__func__ is ") for g in guards)
    assert not any(g.startswith("draw is ") for g in guards)


@pytest.mark.parametrize("value, expected", [
    (1, True), (2.5, True), ("s", True), (None, True), (range(3), True), (slice(1, 2), True),
    (np.float32(1), True), (np.dtype("f8"), True), ((1, (2.0, "a")), True), (..., True),
    ([1], False), ((1, [2]), False), (np.ones(1), False), ({}, False),
])
def test_constants_are_the_immutable_values(value, expected):
    assert is_constant(value) is expected


def test_constant_values_and_trusted_modules():
    made = constant_value((1, (2, 3)))
    assert type(made) is TupleValue and type(made.items[1]) is TupleValue
    assert type(constant_value(4)) is Const and constant_value(4).value == 4
    import math
    import os.path

    import numpy.linalg
    assert is_trusted_module(np) and is_trusted_module(numpy.linalg) and is_trusted_module(math)
    assert not is_trusted_module(os.path) and not is_trusted_module(pytest)
