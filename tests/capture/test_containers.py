"""``capture/containers.py``: lists, dicts, sets and tuples under capture. Containers the code
makes are mutated freely and come back as Python's (a set in a real set's iteration order);
appending to a list or storing into a dict from outside is replayed on the caller's object;
iterating an array gives its rows as ops; an index or key Python would refuse keeps the frame in
Python with Python's error; a sequence too long to track item by item breaks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.capture.builder import MAX_ITEMS
from npdynamo.capture.containers import check_item_count
from npdynamo.capture.errors import CaptureUnsupported
from tests.differential import check_same

BACKENDS = ["eager", "numba"]
X = np.arange(3.0)


def made_here(x):
    lst = [x, x * 2.0]
    lst.append(x + 1.0)
    lst.extend([x - 1.0])
    lst.insert(0, x * 0.0)
    last = lst.pop()
    d = {"a": x}
    d["b"] = x * 3.0
    d.update(c=x * 4.0)
    s = {3, 1, 2, 300}
    s.add(1)
    s.add(-5)
    t = (1, 2, 3)
    return (lst, last, d, list(s), t.index(2), t.count(1), lst[1:3], list(d.items())[0][0],
            "b" in d, bool(lst), d.get("z", 0.5))


def mutates_the_callers(x, lst, d):
    lst.append(x * 2.0)
    d["k"] = x.sum()
    del d["gone"]
    return x


def rows(x):
    return [row.sum() for row in x], list(zip(*x))[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (made_here, (X,)),
    (mutates_the_callers, (X, [1.0], {"gone": 1})),
    (rows, (np.arange(6.0).reshape(3, 2),)),
], ids=["made_here", "mutates_the_callers", "rows"])
def test_containers_in_one_graph(fn, args, backend):
    check_same(fn, *args, backend=backend, graphs=1, breaks=0)


def index_out_of_range(x, items):
    return x * items[5]


def missing_key(x, d):
    return x * d["zz"]


def pop_empty(x):
    return x * [].pop()


@pytest.mark.parametrize("fn, args", [(index_out_of_range, (X, [1.0])),
                                      (missing_key, (X, {"a": 1.0})), (pop_empty, (X,))],
                         ids=["index", "key", "pop"])
def test_what_python_refuses_raises_pythons_error(fn, args):
    compiled = check_same(fn, *args, graphs=0, breaks=0)
    (entry,) = npdynamo.inspect(compiled).entries
    assert entry.runs_python.split(":")[0] in ("IndexError", "KeyError")


class Frame:
    def unsupported(self, reason, hint="", kind="unsupported_construct"):
        return CaptureUnsupported(reason, hint, kind=kind)


def test_a_sequence_too_long_to_track_breaks():
    check_item_count(Frame(), MAX_ITEMS, "iterating over a list")
    with pytest.raises(CaptureUnsupported, match="iterating over a list of more than 10,000"):
        check_item_count(Frame(), MAX_ITEMS + 1, "iterating over a list")


def grows_a_set(x, first, later):
    s = set(first)
    for v in later:
        s.add(v)
    return x * 1.0, list(s), {3, 1, 2, 300, -5}, list({*first, *later})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-40, 40) | st.integers(-10**6, 10**6), max_size=12),
       st.lists(st.integers(-40, 40), max_size=12))
def test_a_set_iterates_in_pythons_order(first, later):
    # the order depends on the table size and the collisions of the insertion history
    # ({3, 1, 2, 300} then -5 iterated -5 before 300 when the set was re-made from its items)
    npdynamo.reset()  # one compile per example
    check_same(grows_a_set, X, first, later, graphs=1, breaks=0)


def sums_a_long_list(x, items):
    return x * sum(items)


def test_a_long_list_from_outside_runs_in_python():
    compiled = check_same(sums_a_long_list, X, list(range(MAX_ITEMS + 1)), graphs=1,
                          breaks=1)
    reason = npdynamo.inspect(compiled).entries[0].graph_break.reason
    assert "a list of more than 10,000 items, each tracked at capture time" in reason
