"""``capture/guards/kinds.py``: for each guard kind, the generated check holds on the value seen
at capture and fails on a changed one, and its description and miss reason say what the user
reads. End to end (guards on captured programs) in ``test_guards.py`` and
``test_guards_methods.py``."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from npdynamo.capture.guards.kinds import (
    KINDS,
    GuardKind,
    NonEmptyRange,
    Owners,
    Seen,
    held,
    safe_repr,
)
from npdynamo.capture.guards.sources import LocalSource
from npdynamo.capture.pysource import Namespace
from npdynamo.generated import evaluate
from tests.differential import check_same


class Thing:
    pass


THING = Thing()
ARR = np.zeros((2, 3))
K = GuardKind

#: kind, expected, a value that passes, one that fails, the description, a piece of the miss
CASES = [
    (K.TYPE, np.ndarray, ARR, [1], "type(x) is ndarray", "expected ndarray, got list"),
    (K.ID, THING, THING, Thing(), "x is <Thing>", "expected the object seen at capture"),
    (K.NOT_ID, THING, Thing(), THING, "x is not <Thing>", "is now the object"),
    (K.CONSTANT, 3, 3, 4, "x == 3", "expected 3, got 4"),
    (K.CONSTANT, 1.0, 1.0, 1, "x == 1.0", "1"),  # 1 == 1.0 but a float is not an int
    (K.LENGTH, 2, [0, 1], [0], "len(x) == 2", "expected 2, got 1"),
    (K.LENGTH, 2, (0, 1), (0, 1, 2), "len(x) == 2", "expected 2, got 3"),
    (K.HAS_KEY, ("k", True), {"k": 1}, {}, "'k' in x", "the key 'k' is missing"),
    (K.HAS_KEY, ("k", False), {}, {"k": 1}, "'k' not in x", "which it did not have"),
    (K.DICT_KEYS, ("a", "b"), {"a": 0, "b": 1}, {"b": 1, "a": 0}, "list(x) == ['a', 'b']",
     "expected ['a', 'b'], got ['b', 'a']"),
    (K.DTYPE, np.dtype("float64"), ARR, ARR.astype(np.float32), "x.dtype == float64",
     "expected float64, got float32"),
    (K.SHAPE, (2, 3), ARR, ARR.T, "x.shape == (2, 3)", "x.shape"),
    (K.READ_ONLY, None, np.broadcast_to(ARR, (2, 3)), ARR, "x is read-only", "now writeable"),
    (K.METHOD, list.append, [1].append, [].pop, "x is a bound list.append",
     "expected a bound list.append"),
]


@pytest.mark.parametrize("kind, expected, good, bad, text, miss", CASES,
                         ids=[f"{c[0].name}-{i}" for i, c in enumerate(CASES)])
def test_kind_checks_describes_and_explains(kind, expected, good, bad, text, miss):
    rules, ns = KINDS[kind], Namespace()
    exp = held(kind, expected)
    check = rules.check("a0", exp, ns)
    assert evaluate(check, {**ns.values, "a0": good}) is True
    assert evaluate(check, {**ns.values, "a0": bad}) is False
    assert rules.describe("x", exp).startswith(text)
    assert miss in rules.miss("x", exp, bad)


def test_relations_between_two_sources():
    other = LocalSource("y", 1)
    a, b = np.ones(3), np.ones(3)
    cases = [(K.ALIAS, (a, a), (a, b)), (K.DISTINCT, (a, b), (a, a)),
             (K.NO_OVERLAP, (a, b), (a, a[1:]))]
    for kind, good, bad in cases:
        ns = Namespace()
        check = KINDS[kind].check("a0", other, ns)
        assert evaluate(check, {**ns.values, "a0": good[0], "a1": good[1]}) is True, kind
        assert evaluate(check, {**ns.values, "a0": bad[0], "a1": bad[1]}) is False, kind
        assert "y" in KINDS[kind].describe("x", other)


def test_owners_and_writeable_inline_and_called():
    base = np.ones(4)
    owners = Owners(("p", "q"), written=(1,))
    p, q = np.ones(2), np.ones(2)
    assert owners.holds(p, q)
    assert not owners.holds(p, p)  # the same array twice
    assert not owners.holds(p, base[:2])  # a view
    frozen = np.ones(2)
    frozen.flags.writeable = False
    assert not owners.holds(p, frozen)
    assert owners.miss((p, base[:2])) == "q: is now a view of another array; it owned its memory"
    assert owners.miss((p, frozen)) == "q: is now read-only; it was writeable"
    assert owners.miss((p, p)) == "q: is now the same array as p"
    ns = Namespace()
    inline = KINDS[K.OWNERS].check_each(["a0", "a1"], owners, ns)
    assert "OWN" not in inline  # two arrays: written out inline, no call
    assert evaluate(inline, {"a0": p, "a1": q}) and not evaluate(inline, {"a0": p, "a1": p})
    nine = [f"a{i}" for i in range(9)]
    assert "OWN" in KINDS[K.OWNERS].check_each(nine, Owners(tuple(nine)), ns)
    writeable = KINDS[K.WRITEABLE].check_each(["a0", "a1"], ("p", "q"), ns)
    assert evaluate(writeable, {"a0": p, "a1": q})
    assert not evaluate(writeable, {"a0": p, "a1": frozen})


def test_nonempty_range_reads_missing_bounds_from_the_values():
    assert NonEmptyRange(0, None, "range(0, n)").holds(1)
    assert not NonEmptyRange(0, None, "range(0, n)").holds(0)
    assert NonEmptyRange(None, None, "range(i, n)").holds(2, 5)
    assert not NonEmptyRange(None, 3, "range(i, 3)").holds(3)


def test_seen_holds_user_objects_weakly_and_a_dead_one_matches_nothing():
    thing = Thing()
    seen = Seen(thing)
    ns = Namespace()
    check = seen.check("a0", ns)
    assert seen.get() is thing and evaluate(check, {**ns.values, "a0": thing})
    del thing
    gc.collect()
    assert repr(seen.get()) and seen.get() is not None
    assert not evaluate(check, {**ns.values, "a0": None})  # not even None is the dead object
    assert Seen(None).get() is None  # no weak reference to None: held as it is


def test_safe_repr_of_an_int_past_the_digit_limit():
    assert safe_repr(7) == "7"
    assert safe_repr(1 << 70_000) == "<int of 70001 bits>"


def scaled(x, n, flag):
    return x * n if flag else x - n


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_each_guarded_fact_changing_recompiles(backend):
    x = np.arange(4.0)
    compiled = check_same(scaled, x, 2, True, backend=backend, graphs=1, breaks=0)
    check_same(scaled, x, 2, False, compiled=compiled, graphs=2, breaks=0)  # CONSTANT
    check_same(scaled, x.astype(np.float32), 2, False, compiled=compiled, graphs=3, breaks=0)
    check_same(scaled, [1.0, 2.0], 2, True, compiled=compiled, graphs=3, breaks=0)  # TYPE: no graph
