"""``capture/guards/guard.py``: a ``GuardSet`` built by hand compiles into one generated check
that holds on the frame seen and fails on each changed fact, names the first failing guard with
the user's line, keeps one guard per fact, and reads closure cells of resume functions. Guards
recorded by real captures are tested end to end in ``test_guards.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.guards.guard import Guard, GuardSet, frame_params
from npdynamo.capture.guards.kinds import GuardKind, SameFunction
from npdynamo.capture.guards.sources import (
    AttrSource,
    ClosureSource,
    GlobalSource,
    ItemSource,
    LocalSource,
)
from tests.differential import check_same

K = GuardKind
X, CFG = LocalSource("x", 0), LocalSource("cfg", 1)
WHERE = ("/home/user/train.py", 12)


def array_guards() -> GuardSet:
    guards = GuardSet(arg_count=2)
    guards.add(Guard(X, K.SHAPE, (3,), WHERE))
    guards.add(Guard(X, K.TYPE, np.ndarray, WHERE))
    guards.add(Guard(X, K.DTYPE, np.dtype("float64"), WHERE))
    guards.add(Guard(CFG, K.TYPE, dict))
    guards.add(Guard(ItemSource(CFG, "lr"), K.CONSTANT, 0.5))
    guards.compile()
    return guards


def test_one_function_holds_on_the_frame_seen_and_fails_on_each_change():
    guards = array_guards()
    assert guards.source.count("def check(a0, a1)") == 1
    ok = (np.zeros(3), {"lr": 0.5})
    assert guards.check(*ok) is True
    assert guards.miss_reason(ok) == "no guard failed"
    for args in [(np.zeros(4), ok[1]), (np.zeros(3, np.float32), ok[1]), ([0.0] * 3, ok[1]),
                 (ok[0], {"lr": 0.1}), (ok[0], {}), (ok[0], [0.5])]:
        assert guards.check(*args) is False, args


def test_a_miss_names_the_guard_and_the_users_line():
    guards = array_guards()
    assert guards.miss_reason((np.zeros(4), {"lr": 0.5})) == (
        "x.shape[0]: expected 3, got 4 (train.py:12)")
    assert guards.miss_reason((np.zeros(3), {"lr": 0.1})) == "cfg['lr']: expected 0.5, got 0.1"
    # the failed read of a missing key is a miss too, named as unreadable
    assert guards.miss_reason((np.zeros(3), {})).startswith("cfg['lr']: could not be read")


def test_cheap_kinds_run_first_and_each_fact_is_one_guard():
    guards = array_guards()
    guards.add(Guard(X, K.SHAPE, (3,)))  # the same fact again: kept once
    assert len(guards.guards) == 5
    assert [g.kind for g in guards.ordered()] == sorted(g.kind for g in guards.guards)
    assert guards.has(X, K.DTYPE) and not guards.has(CFG, K.DTYPE)
    assert guards.expected(X, K.SHAPE) == (3,)
    assert guards.describe()[0] == "type(x) is ndarray"
    # relations are keyed by the other source: two DISTINCT guards on x are two facts
    guards.add(Guard(X, K.DISTINCT, LocalSource("y", 2)))
    guards.add(Guard(X, K.DISTINCT, LocalSource("z", 3)))
    assert len(guards.guards) == 7


class Model:
    def __init__(self, scale):
        self.scale = scale


def test_a_chain_read_twice_is_bound_once_and_still_checked():
    w = AttrSource(LocalSource("m", 0), "scale")
    guards = GuardSet(arg_count=1)
    guards.add(Guard(LocalSource("m", 0), K.TYPE, Model))
    guards.add(Guard(w, K.TYPE, np.ndarray))
    guards.add(Guard(w, K.SHAPE, (2,)))
    guards.add(Guard(w, K.DTYPE, np.dtype("float64")))
    guards.compile()
    assert "S0 := a0.scale" in guards.source
    assert guards.check(Model(np.ones(2)))
    assert not guards.check(Model(np.ones(3)))
    assert not guards.check(Model(2.0))  # the later reads raise: a miss, not an error


def test_globals_and_the_cells_of_a_resume_function():
    offset = 1.5

    def make():
        return lambda: offset

    cells = make().__closure__
    guards = GuardSet(arg_count=1, namespace_base={"G": {"SCALE": 2}}, cell_count=1)
    guards.add(Guard(ClosureSource("offset", 0), K.CONSTANT, 1.5))
    guards.add(Guard(GlobalSource("SCALE"), K.CONSTANT, 2))
    guards.add(Guard(X, K.TYPE, float))
    guards.compile()
    assert frame_params(1, 1) == ("C, a0", "CELL0, = C")
    assert frame_params(2, None) == ("a0, a1", "")
    assert guards.check(cells, 1.0)
    assert not guards.check(cells, 1)
    offset = 2.5
    assert not guards.check(make().__closure__, 1.0)
    assert guards.miss_reason((make().__closure__, 1.0)) == "offset: expected 1.5, got 2.5"


def shifted(x, cfg):
    return x * cfg["lr"] - x.shape[0]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_changed_fact_misses_and_recompiles(backend):
    cfg = {"lr": 0.5}
    compiled = check_same(shifted, np.arange(3.0), cfg, backend=backend, graphs=1, breaks=0)
    check_same(shifted, np.arange(3.0), {"lr": 0.25}, compiled=compiled, graphs=2, breaks=0)
    check_same(shifted, np.arange(3.0), cfg, compiled=compiled, graphs=2, breaks=0)  # a hit


# -- cheaper forms of the same checks (issues 25 and 26): each still fails where it must ----
def one_dim_guards(typed: bool = True) -> GuardSet:
    guards = GuardSet(arg_count=1)
    if typed:
        guards.add(Guard(X, K.TYPE, np.ndarray))
    guards.add(Guard(X, K.DTYPE, np.dtype("float64")))
    guards.add(Guard(X, K.SHAPE, (3,)))
    guards.compile()
    return guards


class Sub(np.ndarray):
    pass


def test_a_one_dimensional_shape_is_checked_as_rank_and_length():
    guards = one_dim_guards()
    assert "(a0.ndim == 1 and len(a0) == 3)" in guards.source
    assert "shape" not in guards.source
    for ok in (np.zeros(3), np.zeros(6)[::2], np.zeros((3, 2))[:, 0]):
        assert guards.check(ok) is True
    for bad in (np.zeros(4), np.zeros((3, 1)), np.zeros((3, 3)), np.zeros((1, 3)),
                np.array(3.0), np.zeros(0), np.zeros(3, np.float32), np.zeros(3).view(Sub),
                [0.0, 0.0, 0.0], (0.0, 0.0, 0.0)):
        assert guards.check(bad) is False, bad
    assert guards.miss_reason((np.zeros((3, 1)),)) == "x.ndim: expected 1, got 2"
    # where the type is not guarded exactly, the shape's tuple is compared
    assert ".shape == (3, )" in one_dim_guards(typed=False).source


class Counted:
    """An attribute read through a property that counts its reads (and may change between
    them, as a user's property may)."""

    def __init__(self, *values) -> None:
        self.values, self.reads = list(values), 0

    @property
    def k(self):
        self.reads += 1
        return self.values[min(self.reads, len(self.values)) - 1]


def test_a_check_reading_its_source_twice_reads_it_once():
    k = AttrSource(LocalSource("m", 0), "k")
    guards = GuardSet(arg_count=1)
    guards.add(Guard(LocalSource("m", 0), K.TYPE, Counted))
    guards.add(Guard(k, K.CONSTANT, 0.5))
    guards.compile()
    assert "(S0 := a0.k)" in guards.source
    m = Counted(0.5)
    assert guards.check(m) is True and m.reads == 1
    # the type test and the value test see the same object
    assert guards.check(Counted(0.5, 1.0)) is True
    assert guards.check(Counted(1.0, 0.5)) is False
    for bad in (0.25, np.float64(0.5), 1, "0.5"):
        assert guards.check(Counted(bad)) is False, bad
    assert guards.check(Model(0.5)) is False  # another type: no attribute read


def test_code_objects_and_modules_are_held_and_checked_by_identity():
    def helper(v):
        return v + 1

    code = helper.__code__
    namespace = {"G": {"np": np, "helper": helper}}
    guards = GuardSet(arg_count=1, namespace_base=namespace)
    guards.add(Guard(GlobalSource("np"), K.ID, np))
    guards.add(Guard(AttrSource(GlobalSource("helper"), "__code__"), K.ID, code))
    guards.add(Guard(GlobalSource("helper"), K.ID, helper))
    guards.compile()
    # the function itself is held weakly (its call: ``() is not None``), its code and the
    # module as they are
    assert guards.source.count("() is not None") == 1, guards.source
    assert guards.check(1.0) is True
    try:
        helper.__code__ = (lambda v: v - 1).__code__
        assert guards.check(1.0) is False
        helper.__code__ = code.replace()  # an equal code object is not the one seen
        assert guards.check(1.0) is False
        helper.__code__ = code
        assert guards.check(1.0) is True
        namespace["G"]["np"] = __import__("types").ModuleType("numpy")
        assert guards.check(1.0) is False
    finally:
        helper.__code__ = code
        namespace["G"]["np"] = np


def bumped(v):
    return v + 1


class Impostor:
    """Not a function, with a function's attributes."""

    __code__ = bumped.__code__
    __globals__ = bumped.__globals__
    __defaults__ = None


def test_a_function_is_the_one_seen_or_another_of_the_same_globals():
    import gc
    import types

    fn = types.FunctionType(bumped.__code__, bumped.__globals__)
    scope = {"f": fn}
    f = GlobalSource("f")
    guards = GuardSet(arg_count=1, namespace_base={"G": scope})
    guards.add(Guard(f, K.FUNCTION, SameFunction.of(fn)))
    guards.add(Guard(AttrSource(f, "__code__"), K.ID, fn.__code__))
    guards.compile()
    assert guards.ordered()[0].kind is K.FUNCTION
    assert "() is not None or (type(" in guards.source  # the identity first
    assert guards.check(1.0) is True
    # the same code and globals in another function object (a closure made anew): a hit
    scope["f"] = types.FunctionType(bumped.__code__, bumped.__globals__)
    assert guards.check(1.0) is True
    for other in (types.FunctionType(bumped.__code__, {}), Impostor(), bumped.__code__, None):
        scope["f"] = other
        assert guards.check(1.0) is False, other
    scope["f"] = Impostor()
    assert guards.miss_reason((1.0,)) == "type(f): expected function, got Impostor"
    scope["f"] = types.FunctionType(bumped.__code__, {"__name__": "elsewhere"})
    assert guards.miss_reason((1.0,)) == (
        f"f.__globals__: expected the globals of module {__name__}, got other ones")
    # the function seen, its code assigned: the code's own guard misses
    scope["f"] = fn
    try:
        fn.__code__ = (lambda v: v - 1).__code__
        assert guards.check(1.0) is False
    finally:
        fn.__code__ = bumped.__code__
    assert guards.check(1.0) is True
    # the function seen freed: its reference matches nothing, the type and globals decide
    del fn, scope["f"]
    gc.collect()
    scope["f"] = types.FunctionType(bumped.__code__, bumped.__globals__)
    assert guards.check(1.0) is True
    scope["f"] = types.FunctionType(bumped.__code__, {})
    assert guards.check(1.0) is False
