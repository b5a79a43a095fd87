"""Compact guards over large containers: one loop per container instead of one guard per item.

The facts checked must stay exactly the per-item facts: every test changes one item of a large
container after the first call and checks that the compiled function recompiles (or not) and
returns what plain Python returns.
"""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.guards.compact import COMPACT_MIN_ITEMS
from npdynamo.capture.hooks import compiled_entries, recompile_reasons
from tests.differential import CountingBackend, check_same

pytestmark = pytest.mark.usefixtures("fresh_caches")


def sum_values(d, x):
    s = x
    for k in d:
        s = s + d[k]
    return s


def sum_list(items, x):
    s = x
    for item in items:
        s = s * item
    return s


def update_in_place(d, g):
    for k in d:
        d[k] -= 0.5 * g
    return len(d)


def only_keys(d, x):
    n = 0
    for k in d:
        n += len(k)
    return x * n if "k5" in d else x


def arrays(n, shape=(3,), dtype=np.float64):
    return {f"k{i}": np.full(shape, i % 7, dtype=dtype) for i in range(n)}


def guard_lines(compiled) -> list[str]:
    (entry,) = compiled_entries(compiled)
    return entry.guard_set.describe()


def test_a_dict_of_2000_arrays_is_guarded_in_a_few_lines():
    compiled = check_same(sum_values, arrays(2000), np.ones(3), graphs=1, breaks=0)
    lines = guard_lines(compiled)
    assert len(lines) <= 8
    assert any("for each of 2000 items of d" in line for line in lines)
    (entry,) = compiled_entries(compiled)
    assert entry.guard_set.source.count("\n") < 20


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("k35", np.ones(1)),  # shape
        lambda d: d.__setitem__("k3", np.ones(3, np.float32)),  # dtype
        lambda d: d.__setitem__("k0", [1.0, 2.0, 3.0]),  # type
        lambda d: d.__setitem__("k39", np.ones((3, 1))),  # ndim
    ],
)
def test_one_changed_item_of_a_compact_container_is_a_miss(change):
    backend = CountingBackend()
    compiled = npdynamo.compile(sum_values, backend=backend)
    check_same(sum_values, arrays(40), np.ones(3), compiled=compiled, graphs=1, breaks=0)
    d = arrays(40)
    change(d)
    check_same(sum_values, d, np.ones(3), compiled=compiled, calls=1, graphs=2, breaks=0)
    assert backend.count == 2
    reason = recompile_reasons(compiled)[-1]
    assert "d['k" in reason, reason  # the miss is still named item by item


def test_a_long_list_of_arrays_and_a_different_item():
    items = [np.full(2, 1.5)] * 3 + [np.ones(2) for _ in range(30)]
    compiled = check_same(sum_list, items, np.ones(2), graphs=1, breaks=0)
    assert any("items of items" in line for line in guard_lines(compiled))
    items = [np.ones(2) for _ in range(33)]
    items[20] = np.ones(2, np.int64)
    check_same(sum_list, items, np.ones(2), compiled=compiled, calls=1, graphs=2, breaks=0)
    assert len(compiled_entries(compiled)) == 2


def test_few_items_keep_one_guard_each():
    compiled = check_same(sum_values, arrays(COMPACT_MIN_ITEMS - 1), np.ones(3), graphs=1,
                          breaks=0)
    assert not any("items of" in line for line in guard_lines(compiled))


def test_mixed_items_are_grouped_by_their_facts():
    d = arrays(20)
    d.update({f"f{i}": np.ones(3, np.float32) for i in range(10)})
    compiled = check_same(sum_values, d, np.ones(3), graphs=1, breaks=0)
    lines = guard_lines(compiled)
    assert any("for each of 20 items of d" in line for line in lines)
    assert any("for each of 10 items of d" in line for line in lines)
    swapped = dict(d)
    swapped["k2"], swapped["f2"] = d["f2"], d["k2"]
    check_same(sum_values, swapped, np.ones(3), compiled=compiled, calls=1, graphs=2, breaks=0)
    assert len(compiled_entries(compiled)) == 2


def test_in_place_updates_of_many_arrays_check_distinctness_in_one_line():
    compiled = check_same(update_in_place, arrays(30), np.ones(3), graphs=1, breaks=0)
    lines = guard_lines(compiled)
    assert len(lines) <= 10
    assert any("distinct arrays, each owning its memory" in line for line in lines)
    # the same array under two keys: the compiled entry must not serve (a write would be lost)
    d = arrays(30)
    d["k7"] = d["k3"]
    check_same(update_in_place, d, np.ones(3), compiled=compiled, calls=1, graphs=2, breaks=0)
    assert len(compiled_entries(compiled)) == 2


def test_keys_only_dict_has_no_item_guards():
    d = {f"k{i}": object() for i in range(500)}
    compiled = npdynamo.compile(only_keys)
    x = np.ones(2)
    np.testing.assert_array_equal(only_keys(d, x), compiled(d, x))
    np.testing.assert_array_equal(only_keys(d, x), compiled(d, x))
    assert len(guard_lines(compiled)) <= 5
    del d["k5"]
    np.testing.assert_array_equal(only_keys(d, x), compiled(d, x))
    assert len(compiled_entries(compiled)) == 2


# --- dict keys: guarded as far as the capture used them --------------------------------------


def looks_up(d, x):
    return x * d["k3"] + (1.0 if "zz" in d else 0.0) + (d["k9"] if "k9" in d else 0.5)


def stores_then_counts(d, x):
    d["new"] = x
    return len(d)


def deletes_then_lists(d, x):
    del d["k1"]
    return list(d), x


def pops_a_missing_key(d, x):
    return d.pop("zz", None), x + 1


def merges(d, x):
    return {**d, "k0": x}


def looks_up_many(d, x):
    s = x
    for i in range(0, 40, 2):
        s = s + d[f"k{i}"]
    return s


def keys_dict(n, drop=(), extra=()):
    d = {f"k{i}": float(i) for i in range(n) if f"k{i}" not in drop}
    d.update({k: 1.0 for k in extra})
    return d


@pytest.mark.parametrize(
    "fn,first,later,entries,graphs",
    [
        # other keys do not matter to lookups
        (looks_up, keys_dict(500), [keys_dict(600), keys_dict(20, extra=["q"])], 1, (1, 1, 1)),
        # a looked-up key that appears, or disappears (plain raises KeyError too: that entry
        # reruns in Python, no graph)
        (looks_up, keys_dict(10), [keys_dict(10, extra=["zz"]), keys_dict(10, drop=["k3"])], 3,
         (1, 2, 2)),
        (looks_up, keys_dict(10), [keys_dict(10, drop=["k9"])], 2, (1, 2)),
        # the stored key was there already: the length is not the captured one
        (stores_then_counts, keys_dict(10), [{**keys_dict(9), "new": 0.0}, keys_dict(11)], 3,
         (0, 0, 0)),
        # iteration: the whole key list, in order
        (deletes_then_lists, keys_dict(5), [dict(reversed(keys_dict(5).items()))], 2, (0, 0)),
        # dict methods: at least as many entries as the keys they use need
        (pops_a_missing_key, keys_dict(5), [keys_dict(50), keys_dict(5, extra=["zz"])], None,
         (1, 1, 2)),
        (merges, keys_dict(10), [dict(reversed(keys_dict(10).items()))], 2, (0, 0)),
    ],
)
def test_dict_key_guards_follow_what_the_capture_used(fn, first, later, entries, graphs):
    # graphs: the count after the first call and after each later one (no array op in
    # stores_then_counts, deletes_then_lists and merges: entries without a graph); no break
    compiled = check_same(fn, first, np.ones(2), graphs=graphs[0], breaks=0)
    for d, made in zip(later, graphs[1:], strict=True):
        check_same(fn, d, np.ones(2), compiled=compiled, graphs=made, breaks=0)
    if entries is not None:
        assert len(compiled_entries(compiled)) == entries


def test_many_lookups_of_one_dict_are_one_key_set_check():
    d = {f"k{i}": np.full(2, i) for i in range(60)}
    compiled = check_same(looks_up_many, d, np.ones(2), graphs=1, breaks=0)
    lines = guard_lines(compiled)
    assert any("has the 20 keys" in line for line in lines)
    assert len(lines) <= 8
    check_same(looks_up_many, {**d, "extra": 1}, np.ones(2), compiled=compiled, graphs=1,
               breaks=0)
    assert len(compiled_entries(compiled)) == 1
    del d["k38"]
    # KeyError, as in plain
    check_same(looks_up_many, d, np.ones(2), compiled=compiled, graphs=1, breaks=0)


def test_every_dict_method_that_reads_keys_guards_them():
    from npdynamo.capture.builder import _LazyDict

    # methods that read no key (or none of the input's: ``clear`` empties it, ``fromkeys`` is a
    # class method building another dict)
    neutral = {
        "__class__", "__class_getitem__", "__delattr__", "__dir__", "__doc__", "__format__",
        "__ge__", "__getattribute__", "__getstate__", "__gt__", "__hash__", "__init__",
        "__init_subclass__", "__le__", "__lt__", "__new__", "__setattr__", "__sizeof__",
        "__str__", "__subclasshook__", "clear", "fromkeys",
    }  # fmt: skip
    unguarded = [
        name
        for name in dir(dict)
        if name not in neutral and getattr(_LazyDict, name) is getattr(dict, name)
    ]
    assert unguarded == []


def test_aliasing_of_arrays_written_in_place_is_one_guard_not_one_per_pair():
    from npdynamo.capture.guards import GuardKind

    compiled = check_same(update_in_place, arrays(300), np.ones(3), calls=1, graphs=1, breaks=0)
    (entry,) = compiled_entries(compiled)
    kinds = [g.kind for g in entry.guard_set.guards]
    assert kinds.count(GuardKind.OWNERS) == 1
    assert kinds.count(GuardKind.NO_OVERLAP) + kinds.count(GuardKind.DISTINCT) == 0
    d = arrays(300)
    d["k5"] = d["k9"][:]  # a view of another written array: the owners guard fails
    assert not entry.check(d, np.ones(3))
    assert "k5']: is now a view of another array" in entry.miss_reason(d, np.ones(3))
    # overlapping arrays written in place: that call runs in Python, no second graph
    check_same(update_in_place, d, np.ones(3), compiled=compiled, calls=1, graphs=1, breaks=0)


def make_scaler(w):
    return lambda v: v * w


def apply_all(fns, x):
    for fn in fns:
        x = fn(x)
    return x


def test_a_long_list_of_closures_over_arrays_is_one_loop():
    """Closures made by one factory, each over an array: each is guarded on its parts (the
    function seen, or one of its globals; its code and defaults; its cell's array), all in
    one loop. A closure of other code or globals, or over another dtype, is a miss."""
    import types

    fns = [make_scaler(np.full(2, 1.0 + i % 2)) for i in range(12)]
    compiled = check_same(apply_all, fns, np.ones(2), graphs=1, breaks=0)
    assert any("for each of 12 items of fns" in line for line in guard_lines(compiled))
    # new closures of the same code and globals: a hit
    check_same(apply_all, [make_scaler(np.full(2, 3.0)) for _ in range(12)], np.ones(2),
               compiled=compiled, calls=1, graphs=1, breaks=0)
    changes = [
        lambda v: v * 2.0,  # other code
        types.FunctionType(fns[0].__code__, {}, None, None, fns[0].__closure__),  # globals
        make_scaler(np.full(2, 3, np.int64)),  # its cell's array of another dtype
    ]
    for graphs, change in enumerate(changes, start=2):
        changed = list(fns)
        changed[7] = change
        check_same(apply_all, changed, np.ones(2), compiled=compiled, calls=1, graphs=graphs,
                   breaks=0)
