"""``capture/random_calls.py``: random draws under capture. Its registrations (the generator
types' methods, the legacy ``np.random.*`` functions on the global RandomState), then draws on a
passed-in Generator and RandomState (a graph input each), ``shuffle`` in place, a legacy function
and a draw NumPy returns as a Python number (a break), plain against compiled on copies of the
same generators: the same numbers, and the generators left in the same state. Draws are tested
at length (errors, states after a raise, merging) in ``test_random_draws.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture import random_calls
from npdynamo.capture.registry import BUILTINS, OBJECT_METHODS
from npdynamo.capture.values import MethodValue, UserObjectValue
from npdynamo.ops.random import GENERATOR_METHODS, LEGACY_METHODS
from tests.differential import assert_compiled, assert_same_value


def test_what_it_registers():
    for kind in (np.random.Generator, np.random.RandomState):
        assert OBJECT_METHODS[kind] == (random_calls.generator_attribute,
                                        random_calls.generator_method)
    assert BUILTINS[np.random.normal] is random_calls._legacy_function
    assert BUILTINS[np.random.shuffle] is random_calls._legacy_function
    assert np.random.default_rng not in BUILTINS  # making a generator is not a draw
    assert "normal" in GENERATOR_METHODS and "randn" in LEGACY_METHODS
    assert "randn" not in GENERATOR_METHODS  # RandomState's only


def test_a_method_read_is_a_method_value_only_for_draws():
    rng = UserObjectValue(np.random.default_rng(0))
    method = random_calls.generator_attribute(None, rng, "normal")
    assert isinstance(method, MethodValue) and method.name == "normal"
    assert random_calls.generator_attribute(None, rng, "bit_generator") is None
    assert random_calls.generator_attribute(None, rng, "randn") is None  # legacy only
    legacy = UserObjectValue(np.random.RandomState(0))
    assert isinstance(random_calls.generator_attribute(None, legacy, "randn"), MethodValue)
    assert random_calls.generator_method(None, rng, "spawn", [], {}) is None


def draws(x, rng):
    noise = rng.normal(0.0, 1.0, size=x.shape)  # a draw node on the generator, an input
    picks = rng.integers(0, 10, size=3)
    return x + noise, picks


def legacy_draws(x, state):
    return x * state.uniform(size=x.shape) + state.randn(*x.shape)


def shuffles(x, rng):
    y = x * 2
    rng.shuffle(y)  # in place, returns None
    return y


def python_number(x, rng):
    y = x + 1
    s = rng.normal()  # a Python float: NumPy draws it natively, in order, at a break
    return y * s


def state(gen) -> object:
    if isinstance(gen, np.random.RandomState):
        return gen.get_state(legacy=True)[1].tolist()
    return gen.bit_generator.state


def check_draws(fn, make, backend: str, graphs: int, breaks: int) -> None:
    """``fn(x, gen)`` plain and compiled on two generators made alike: the same results, the
    generators in the same state after each of two calls, and the counts."""
    compiled = npdynamo.compile(fn, backend=backend)
    for seed in (1, 2):
        plain_gen, compiled_gen = make(seed), make(seed)
        expected = fn(np.arange(4.0), plain_gen)
        assert_same_value(expected, compiled(np.arange(4.0), compiled_gen))
        assert state(compiled_gen) == state(plain_gen)
    assert_compiled(compiled, graphs=graphs, breaks=breaks)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_draws_are_the_same_numbers_and_leave_the_same_state(backend):
    rng, legacy = np.random.default_rng, np.random.RandomState
    check_draws(draws, rng, backend, graphs=1, breaks=0)
    check_draws(legacy_draws, legacy, backend, graphs=1, breaks=0)
    check_draws(shuffles, rng, backend, graphs=1, breaks=0)
    # the resume function after the break reads the drawn float as a constant: the second
    # call's other number is a second resume graph
    check_draws(python_number, rng, backend, graphs=3, breaks=1)


def legacy_global(x):
    return x + np.random.normal(size=x.shape)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_legacy_function_draws_from_the_global_state(backend):
    compiled = npdynamo.compile(legacy_global, backend=backend)
    x = np.arange(3.0)
    for _ in range(2):
        np.random.seed(5)
        expected = legacy_global(x)
        after = np.random.get_state()[1].copy()
        np.random.seed(5)
        assert np.array_equal(compiled(x), expected)
        assert np.array_equal(np.random.get_state()[1], after)
    assert_compiled(compiled, graphs=1, breaks=0)
