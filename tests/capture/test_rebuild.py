"""``capture/rebuild.py``: Python values made real again after a graph (at a break and at the
return). The iterator helpers against CPython's own iterators, ``python_type``, then programs
broken in the middle: objects read from the frame come back as the same objects (``is``), a
container built in the function and held twice is one object twice, views stay views of their
base, iterators continue where the graph left them; plain against compiled with exact counts.
Identity across captures is tested at length in ``test_identity.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.rebuild import (
    advanced_iterator,
    iterator_at,
    python_type,
    reversed_at,
    rows_at,
)
from npdynamo.capture.values import Const, ListValue, TupleValue, UserObjectValue
from tests.differential import check_same


@pytest.mark.parametrize("seq", [[1, 2, 3, 4], (1, 2, 3, 4), range(1, 5)])
def test_iterator_at_is_cpythons_iterator_moved_on(seq):
    real = iter(seq)
    next(real)
    next(real)
    ours = iterator_at(seq, 2)
    assert type(ours) is type(real) and list(ours) == list(real) == [3, 4]


def test_rows_reversed_and_dict_iterators_moved_on():
    a = np.arange(6.0).reshape(3, 2)
    rows = rows_at(a, 1)
    assert type(rows) is type(iter(a))
    assert [r.tolist() for r in rows] == [[2.0, 3.0], [4.0, 5.0]]
    assert np.shares_memory(next(rows_at(a, 2)), a)  # rows are views, as CPython's are
    back = reversed_at([1, 2, 3], 1)
    assert type(back) is type(reversed([])) and list(back) == [2, 1]
    d = {"a": 1, "b": 2, "c": 3}
    items = advanced_iterator(d.items(), 1)
    assert type(items) is type(iter(d.items())) and list(items) == [("b", 2), ("c", 3)]


def test_python_type_of_tracked_values():
    class Thing:
        pass

    assert python_type(Const(1.5)) is float and python_type(ListValue([])) is list
    assert python_type(TupleValue([])) is tuple
    assert python_type(UserObjectValue(Thing())) is Thing


def held_twice(x, items, d):
    built = [x * 2]
    pair = (built, built)
    npdynamo.graph_break()
    built.append(len(items))
    return items, d, pair, built


def continues_iterators(x, items):
    it = iter(items)
    first = next(it)
    rows = iter(x.reshape(3, 2) * 2)
    top = next(rows)
    npdynamo.graph_break()  # it and rows are rebuilt moved on by one item
    return first, next(it), top, next(rows) + 1


def keeps_views(x):
    v = x[1:]
    npdynamo.graph_break()
    v[0] = -1.0  # a write through the view reaches x after the break, as in Python
    return x, v


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_values_after_a_break_keep_their_identity(backend):
    items, d = [1, 2], {"k": 3}
    compiled = npdynamo.compile(held_twice, backend=backend)
    got_items, got_d, pair, built = compiled(np.arange(3.0), items, d)
    assert got_items is items and got_d is d  # read from the frame: the same objects
    assert pair[0] is pair[1] is built  # one list held three times, as in Python
    assert len(built) == 2
    # the resume function only appends to a list: no graph
    check_same(held_twice, np.arange(3.0), [1, 2], {"k": 3}, backend=backend,
               compiled=compiled, graphs=1, breaks=1)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_iterators_and_views_continue_after_a_break(backend):
    x = np.arange(6.0)
    # after the break, next() of an iterator read from the frame is a break of its own (one
    # each): what this checks is where the rebuilt iterators stand
    check_same(continues_iterators, x, [1, 2, 3], backend=backend, graphs=2, breaks=3)
    # no op before the break: the view is rebuilt as ``x[1:]`` from the frame's x, and the
    # resume function, writing into overlapping arguments, runs in Python (its own break)
    compiled = check_same(keeps_views, x, backend=backend, graphs=0, breaks=2)
    base, view = compiled(np.arange(6.0))
    assert view.base is base  # rebuilt as a view of the rebuilt base
