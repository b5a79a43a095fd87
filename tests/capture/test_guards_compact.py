"""Compact guards over large containers: one loop per container instead of one guard per item.

The facts checked must stay exactly the per-item facts: every test changes one item of a large
container after the first call and checks that the compiled function recompiles (or not) and
returns what plain Python returns.
"""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.frames import compiled_entries, recompile_reasons, reset
from npdynamo.capture.guards.guard import COMPACT_MIN_ITEMS
from tests.differential import CountingBackend, check_same


@pytest.fixture(autouse=True)
def clean():
    reset()
    yield
    reset()


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
    compiled = check_same(sum_values, arrays(2000), np.ones(3))
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
    check_same(sum_values, arrays(40), np.ones(3), compiled=compiled)
    d = arrays(40)
    change(d)
    check_same(sum_values, d, np.ones(3), compiled=compiled, calls=1)
    assert backend.count == 2
    reason = recompile_reasons(compiled)[-1]
    assert "d['k" in reason, reason  # the miss is still named item by item


def test_a_long_list_of_arrays_and_a_different_item():
    compiled = check_same(
        sum_list, [np.full(2, 1.5)] * 3 + [np.ones(2) for _ in range(30)], np.ones(2)
    )
    assert any("items of items" in line for line in guard_lines(compiled))
    items = [np.ones(2) for _ in range(33)]
    items[20] = np.ones(2, np.int64)
    check_same(sum_list, items, np.ones(2), compiled=compiled, calls=1)
    assert len(compiled_entries(compiled)) == 2


def test_few_items_keep_one_guard_each():
    compiled = check_same(sum_values, arrays(COMPACT_MIN_ITEMS - 1), np.ones(3))
    assert not any("items of" in line for line in guard_lines(compiled))


def test_mixed_items_are_grouped_by_their_facts():
    d = arrays(20)
    d.update({f"f{i}": np.ones(3, np.float32) for i in range(10)})
    compiled = check_same(sum_values, d, np.ones(3))
    lines = guard_lines(compiled)
    assert any("for each of 20 items of d" in line for line in lines)
    assert any("for each of 10 items of d" in line for line in lines)
    swapped = dict(d)
    swapped["k2"], swapped["f2"] = d["f2"], d["k2"]
    check_same(sum_values, swapped, np.ones(3), compiled=compiled, calls=1)
    assert len(compiled_entries(compiled)) == 2


def test_in_place_updates_of_many_arrays_check_distinctness_in_one_line():
    compiled = check_same(update_in_place, arrays(30), np.ones(3))
    lines = guard_lines(compiled)
    assert len(lines) <= 10
    assert any("distinct objects" in line for line in lines)
    # the same array under two keys: the compiled entry must not serve (a write would be lost)
    d = arrays(30)
    d["k7"] = d["k3"]
    check_same(update_in_place, d, np.ones(3), compiled=compiled, calls=1)
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
