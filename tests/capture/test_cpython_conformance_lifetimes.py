"""Object lifetimes across graph breaks (``make conformance`` on 3.11-3.13, issue 23: test_weakref
of test_functools/test_set/test_deque, test_copy's weak dictionaries, test_dict/test_set
test_container_iterator, test_generators finalisation, test_scope.testCellLeak, test_exceptions
test_3114/testExceptionCleanupState).

An object must die where Python frees it: when the resumed code drops its last name (the frames
that hand a resume function its values must keep none), and not before (a local the rest of the
code only overwrites is still the object's holder until then). Each program returns what it
observed (weak references alive or dead, finalisers run, in order), compared plain vs compiled
on both backends, first call (capture) and cached call."""

from __future__ import annotations

import copy
import gc
import itertools
import weakref

import pytest

import npdynamo
from npdynamo import explain
from tests.fidelity import check_fidelity

BACKENDS = ["eager", "numba"]


class Thing:
    pass


class Noisy:
    """Records its own finalisation on a shared log."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def __del__(self):
        self.log.append(f"del {self.name}")


def make_thing():
    print("a break inside the call")
    return Thing()


def dies_with_its_last_name():
    x = Thing()
    r = weakref.ref(x)
    print("break")
    x = None
    gc.collect()
    return r() is None


def dies_at_del_without_collect():
    x = Thing()
    r = weakref.ref(x)
    print("break")
    del x
    return r() is None


def cycle_collected_after_break():
    c = Thing()
    c.me = c
    r = weakref.ref(c)
    print("break")
    del c
    gc.collect()
    return r() is None


def generator_finalised_at_del(log):
    def gen():
        try:
            yield 1
            yield 2
        finally:
            log.append("closed")

    g = gen()
    first = next(g)
    print("break")
    del g
    seen = list(log)
    return first, seen


def finaliser_order(log):
    a = Noisy(log, "a")
    b = Noisy(log, "b")
    print("break")
    log.append("before")
    a = None  # noqa: F841 (dropping the last name is the point)
    log.append("between")
    b = None  # noqa: F841 (dropping the last name is the point)
    log.append("after")
    return list(log)


def alive_until_overwritten():
    # x is dead at the break (only overwritten later), but Python's frame still holds it
    x = Thing()
    r = weakref.ref(x)
    print("break")
    alive = r() is not None
    x = None
    return alive, r() is None


def temporary_from_a_breaking_call():
    r = weakref.ref(make_thing())
    return r() is None


def in_a_loop_that_breaks(n):
    refs = []
    x = None
    for _ in range(n):
        x = Thing()
        refs.append(weakref.ref(x))
        print("break")
    x = None
    return [r() is None for r in refs]


def two_breaks_then_drop():
    x = Thing()
    r = weakref.ref(x)
    print("first break")
    y = [x]
    print("second break")
    x = None
    first = r() is None
    y = None  # noqa: F841 (dropping the last name is the point)
    return first, r() is None


PROGRAMS = [
    (dies_with_its_last_name, ()),
    (dies_at_del_without_collect, ()),
    (cycle_collected_after_break, ()),
    (generator_finalised_at_del, ([],)),
    (finaliser_order, ([],)),
    (alive_until_overwritten, ()),
    (temporary_from_a_breaking_call, ()),
    (in_a_loop_that_breaks, (3,)),
    (two_breaks_then_drop, ()),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_an_object_dies_where_python_frees_it(fn, args, backend):
    check_fidelity(fn, *args, backend=backend)


@pytest.mark.parametrize("fn, args", PROGRAMS, ids=[fn.__name__ for fn, _ in PROGRAMS])
def test_the_programs_break_and_stay_compiled(fn, args):
    # what the differential test checks is the hand-over between compiled frames: no frame may
    # have fallen back to Python (where lifetimes are exact by construction)
    out = explain(fn)(*copy.deepcopy(args))
    assert out.graph_break_count >= 1, str(out)
    assert out.python_frames == [], str(out)


# -- guards do not own what they check (test_functools.test_lru_cache_weakrefable): an identity
#    guard on a class made inside the function (and a type guard on its instances) kept the
#    class, and through it its methods, alive as long as the entry --------------------------------
def local_class_dies_with_its_last_name():
    class A:
        def method(self):
            return 1

    a = A()
    refs = [weakref.ref(A), weakref.ref(a)]
    print("break")
    value = a.method() + (A is type(a))
    del a, A
    gc.collect()
    return value, [r() is None for r in refs]


@pytest.mark.parametrize("backend", BACKENDS)
def test_guards_hold_no_user_object(backend):
    check_fidelity(local_class_dies_with_its_last_name, backend=backend)


# -- the collector stays paused through a miss (test_generators.
#    test_handle_frame_object_in_creation: gc.set_threshold(1) with a callback that calls
#    inspect.stack(); the capture and its look-up ran a collection, and the callback, on every
#    allocation: 28 s against 0.2 s plainly) ------------------------------------------------------
def collects_with_threshold_one(log):
    def gen():
        yield 1

    print("break")
    g = gen()
    first = next(g)
    del g
    return first, list(log)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_capture_runs_no_collection_of_its_own(backend):
    import inspect

    import npdynamo

    calls = []

    def callback(phase, info):
        if phase == "start":
            calls.append(len(inspect.stack(0)))

    compiled = npdynamo.compile(collects_with_threshold_one, backend=backend)
    thresholds = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 0, 0)
    try:
        got = compiled([])
        during_compiled = len(calls)
        expected = collects_with_threshold_one([])
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(callback)
    assert got == expected
    # a first call captures three entries (the function, two resume points); each capture
    # allocates thousands of objects, each a collection with the callback when not paused
    assert during_compiled < 200, during_compiled


# -- a capture's own collection leaves the user's young tuples tracked (3.13 test_itertools) ---
def young_tuples_stay_tracked(pairs):
    it = itertools.pairwise(pairs)  # a break: made natively, then a miss captures the rest
    first = next(it)
    made = tuple([None, None])
    return gc.is_tracked(first), gc.is_tracked(made), first


@pytest.mark.parametrize("backend", BACKENDS)
def test_capture_leaves_young_tuples_tracked(backend):
    """A miss ends with a pass over the youngest generation to free the capture's cycles; it
    untracked the user's fresh tuples of atoms, which Python's next collection does only later
    (``gc.is_tracked(next(pairwise(...)))`` was False after a break)."""
    check_fidelity(young_tuples_stay_tracked, [None, None, None], backend=backend)
    assert npdynamo.compile(young_tuples_stay_tracked, backend=backend)([None, None])[:2] == (
        True, True)
