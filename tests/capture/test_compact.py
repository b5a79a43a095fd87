"""``capture/guards/compact.py``: ``compact_layout`` on hand-made guards: which item guards
become one loop, which keys one subset check, which pairwise DISTINCT guards one set of
identities, and that each compacted check still fails on any one changed item. Compacted guards
on real captures (a dict of 2,000 arrays, in-place updates of many parameters) are tested end to
end in ``test_guards_compact.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.guards.compact import (
    COMPACT_MIN_ITEMS,
    DistinctGroup,
    ItemGroup,
    KeySet,
    compact_layout,
)
from npdynamo.capture.guards.guard import Guard, GuardSet
from npdynamo.capture.guards.kinds import GuardKind
from npdynamo.capture.guards.sources import AttrSource, ItemSource, LocalSource
from tests.differential import check_same

K = GuardKind
D = LocalSource("d", 0)
N = COMPACT_MIN_ITEMS


def item_guards(n: int, shape=(3,), attr: str | None = None) -> list[Guard]:
    guards = [Guard(D, K.TYPE, dict), Guard(D, K.DICT_KEYS, tuple(f"k{i}" for i in range(n)))]
    for i in range(n):
        item = ItemSource(D, f"k{i}")
        src = AttrSource(item, attr) if attr else item
        guards += [Guard(src, K.TYPE, np.ndarray), Guard(src, K.SHAPE, shape),
                   Guard(src, K.DTYPE, np.dtype("float64"))]
    return guards


def compiled(guards: list[Guard]) -> GuardSet:
    gs = GuardSet(arg_count=1)
    for g in guards:
        gs.add(g)
    gs.compile()
    return gs


def test_items_with_the_same_facts_become_one_loop():
    layout = compact_layout(sorted(item_guards(N), key=lambda g: g.kind))
    groups = [x for x in layout if isinstance(x, ItemGroup)]
    assert len(groups) == 1 and len(groups[0].keys) == N and len(groups[0].members) == 3 * N
    assert len(layout) == 3  # type and keys of the dict, then the loop
    assert groups[0].describe() == (
        f"type(d[*]) is ndarray and d[*].dtype == float64 and d[*].shape == (3,), "
        f"for each of {N} items of d")
    # below the threshold every item keeps its own guards
    small = compact_layout(sorted(item_guards(N - 1), key=lambda g: g.kind))
    assert not any(isinstance(x, ItemGroup) for x in small) and len(small) == 2 + 3 * (N - 1)


@pytest.mark.parametrize("attr", [None, "w"])
def test_a_compacted_check_fails_on_any_one_changed_item(attr):
    class Box:
        def __init__(self, w):
            self.w = w

    wrap = (lambda a: Box(a)) if attr else (lambda a: a)
    gs = compiled(item_guards(2 * N, attr=attr))
    assert "for v in" in gs.source
    d = {f"k{i}": wrap(np.zeros(3)) for i in range(2 * N)}
    assert gs.check(d)
    for change in [np.zeros(4), np.zeros(3, np.float32), [0.0] * 3]:
        bad = dict(d, k11=wrap(change))
        assert not gs.check(bad)
        assert gs.miss_reason((bad,)).startswith("type(d['k11']" if type(change) is list
                                                 else "d['k11']")


def test_items_group_by_their_facts_and_equal_values_of_other_types_do_not_merge():
    guards = [Guard(ItemSource(D, i), K.CONSTANT, 1 if i % 2 else 1.0) for i in range(2 * N)]
    groups = [x for x in compact_layout(guards) if isinstance(x, ItemGroup)]
    assert sorted(len(g.keys) for g in groups) == [N, N]  # 1 == 1.0, yet two profiles
    gs = compiled(guards)
    assert gs.check([1.0 if i % 2 == 0 else 1 for i in range(2 * N)])
    assert not gs.check([1 for _ in range(2 * N)])


def test_many_looked_up_keys_are_one_subset_check():
    guards = [Guard(D, K.HAS_KEY, (f"k{i}", True)) for i in range(N)]
    guards.append(Guard(D, K.HAS_KEY, ("gone", False)))
    layout = compact_layout(guards)
    (keys,) = layout
    assert isinstance(keys, KeySet) and keys.absent == frozenset({"gone"})
    assert keys.describe() == f"d has the {N} keys 'k0', 'k1', 'k2', 'k3', ... ({N} in all) " \
                              "and d has none of 'gone'"
    gs = compiled(guards)
    d = {f"k{i}": i for i in range(N)}
    assert gs.check(d)
    assert not gs.check({**d, "gone": 0})
    del d["k3"]
    assert not gs.check(d)
    # with the key list guarded the key guards are implied: dropped
    listed = compact_layout([Guard(D, K.DICT_KEYS, ("k0",)), Guard(D, K.HAS_KEY, ("k0", True))])
    assert [g.kind for g in listed] == [K.DICT_KEYS]


def test_pairwise_distinct_guards_are_one_set_of_identities():
    srcs = [LocalSource(f"p{i}", i) for i in range(4)]
    pairs = [Guard(a, K.DISTINCT, b) for i, a in enumerate(srcs) for b in srcs[i + 1:]]
    layout = compact_layout(pairs)
    (group,) = layout
    assert isinstance(group, DistinctGroup) and group.describe().endswith("4 distinct objects")
    gs = GuardSet(arg_count=4)
    for g in pairs:
        gs.add(g)
    gs.compile()
    arrays = [np.ones(2) for _ in range(4)]
    assert gs.check(*arrays)
    assert not gs.check(arrays[0], arrays[1], arrays[2], arrays[0])
    # not every pair said distinct: the guards stay as they are
    assert len(compact_layout(pairs[:-1])) == len(pairs) - 1


def sum_items(d, x):
    s = x
    for k in d:
        s = s + d[k]
    return s


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_changed_item_of_a_compacted_dict_recompiles(backend):
    d = {f"k{i}": np.full(2, float(i)) for i in range(2 * N)}
    compiled = check_same(sum_items, d, np.ones(2), backend=backend, graphs=1, breaks=0)
    d["k5"] = np.ones(2, np.float32)  # one item of another dtype: the loop's check misses
    check_same(sum_items, d, np.ones(2), compiled=compiled, graphs=2, breaks=0)
