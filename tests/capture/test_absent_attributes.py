"""A missing attribute the capture models (``getattr`` with a default, ``hasattr``) is a guarded
fact (``capture/absent_attributes.py``): an entry captured while ``o.k`` was missing never
serves a call where it is there (on the instance, its class, a module or a class object), and
only ``AttributeError`` is swallowed, as in Python."""

from __future__ import annotations

import types

import numpy as np
import pytest

import npdynamo
from tests.differential import assert_compiled, assert_same_value, run_both

BACKENDS = ["eager", "numba"]


class Plain:
    pass


class Slotted:
    __slots__ = ("k",)


class Raising:
    @property
    def k(self):
        raise ValueError("the property's own error")


def scale_or_one(x, o):
    return x * getattr(o, "k", 1.0)


def two_or_three(x, o):
    return x * (2.0 if hasattr(o, "k") else 3.0)


def check_calls(fn, calls, backend, graphs, breaks=0):
    """``fn`` compiled once, then each ``(before, args)`` of ``calls``: ``before()`` changes the
    world (a class or module attribute), the call must match plain Python."""
    compiled = npdynamo.compile(fn, backend=backend)
    raised = False
    for before, args in calls:
        before()
        run = run_both(fn, compiled, args, {})
        raised |= run.exc is not None
        if run.exc is None:
            assert_same_value(run.expected, run.got)
    assert_compiled(compiled, graphs=graphs, breaks=breaks, raised=raised)


def nothing():
    pass


def with_k(value):
    o = Plain()
    o.k = value
    return o


@pytest.fixture
def clean_plain():
    yield
    if "k" in vars(Plain):
        del Plain.k


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [scale_or_one, two_or_three])
def test_instance_gains_the_attribute(fn, backend):
    x = np.arange(3.0)
    check_calls(fn, [(nothing, (x, Plain())), (nothing, (x, with_k(5.0))),
                     (nothing, (x, Plain()))], backend, graphs=2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [scale_or_one, two_or_three])
def test_class_gains_the_attribute(fn, backend, clean_plain):
    x, o = np.arange(3.0), Plain()
    check_calls(fn, [(nothing, (x, o)), (lambda: setattr(Plain, "k", 7.0), (x, o))],
                backend, graphs=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_gains_the_attribute(backend):
    mod = types.ModuleType("settings")  # a module cannot be deep-copied: compared by hand
    x = np.arange(3.0)
    compiled = npdynamo.compile(scale_or_one, backend=backend)
    assert_same_value(scale_or_one(x, mod), compiled(x, mod))
    mod.k = 9.0
    assert_same_value(scale_or_one(x, mod), compiled(x, mod))
    assert_compiled(compiled, graphs=2, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_class_object_gains_the_attribute(backend, clean_plain):
    x = np.arange(3.0)
    check_calls(scale_or_one, [(nothing, (x, Plain)),
                               (lambda: setattr(Plain, "k", 7.0), (x, Plain))],
                backend, graphs=2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_slot_is_a_graph_break(backend):
    x, filled = np.arange(3.0), Slotted()
    filled.k = 4.0
    # the empty slot cannot be guarded: the line runs in Python (a break, whichever the slot
    # holds later), and the rest is a resume function's graph (one per type of the number)
    check_calls(scale_or_one, [(nothing, (x, Slotted())), (nothing, (x, filled)),
                               (nothing, (x, Slotted()))], backend, graphs=2, breaks=1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [scale_or_one, two_or_three])
def test_only_attribute_error_means_missing(fn, backend):
    # Python's getattr(o, name, default) and hasattr swallow AttributeError only
    x = np.arange(3.0)
    check_calls(fn, [(nothing, (x, Raising())), (nothing, (x, Raising()))], backend, graphs=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_builtin_value_needs_no_guard(backend):
    x = np.arange(3.0)
    compiled = npdynamo.compile(scale_or_one, backend=backend)
    for n in (3, 3, 2.5):
        assert_same_value(scale_or_one(x, n), compiled(x, n))
    found = npdynamo.inspect(compiled)
    assert not [g for entry in found.entries for g in entry.guards if "__dict__" in g]


# -- a method found on the class (``class_function``) -------------------------------------------
def call_method(o, x):
    return o.f(x)


def read_then_call(o, x):
    method = o.f  # LOAD_ATTR (not the method form): a bound method read first, called after
    return method(x)


def _with_method():
    class WithMethod:
        def f(self, x):
            return x * 2.0
    return WithMethod


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [call_method, read_then_call])
@pytest.mark.parametrize("change", ["class", "instance", "both"])
def test_a_method_replaced_after_capture_is_what_runs(backend, fn, change):
    """The entry inlined the class's method: a later call where the class holds another one, or
    the instance an attribute of that name (which Python reads first), does not run the old."""
    klass = _with_method()
    o, x = klass(), np.arange(3.0)
    compiled = npdynamo.compile(fn, backend=backend)
    for _ in range(2):
        run = run_both(fn, compiled, (o, x.copy()), {})
        assert_same_value(run.expected, run.got)
    assert_compiled(compiled, graphs=1, breaks=0)
    if change in ("class", "both"):
        klass.f = lambda self, x: x * 10.0
    if change in ("instance", "both"):
        o.f = lambda x: x * 100.0
    for _ in range(2):
        run = run_both(fn, compiled, (o, x.copy()), {})
        assert_same_value(run.expected, run.got)
    assert_compiled(compiled, graphs=2, breaks=0)
