"""``capture/flow/higher_order.py``: ``npdynamo.cond``/``while_loop``/``fori_loop`` each become
one node holding their functions' subgraphs, exact for any predicate or trip count; a function
that changes anything outside it (an array written in place, a list appended to) is refused at
the call, which then runs plainly. The carried-structure helpers (``flatten``/``unflatten``) are
asked directly. ``test_control_flow.py`` holds the wider corpus (nested calls, carried numbers,
gradients through these nodes are in ``tests/autograd``)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.higher_order import flatten, unflatten
from npdynamo.capture.values import ArrayValue, Const, DictValue, ListValue, TupleValue
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


class Frame:
    def unsupported(self, reason, hint="", kind="unsupported_construct"):
        return CaptureUnsupported(reason, hint, kind=kind)


def test_flatten_and_unflatten_a_carried_structure():
    a = ArrayValue(Graph().placeholder("a", ArrayMeta((2,), np.dtype(np.float64))))
    one, scalar = Const(1), Const(np.float32(2.0))
    carried = TupleValue([a, ListValue([one, scalar])])
    leaves, structure = flatten(Frame(), carried, "the carried value")
    assert leaves == [a, one, scalar]
    rebuilt = unflatten(structure, leaves)
    assert type(rebuilt) is TupleValue and rebuilt.items[0] is a
    assert type(rebuilt.items[1]) is ListValue and rebuilt.items[1].items == [one, scalar]


@pytest.mark.parametrize("value", [Const("text"), DictValue({"a": Const(1)}), Const(None)],
                         ids=["str", "dict", "None"])
def test_only_arrays_and_numbers_can_be_carried(value):
    with pytest.raises(CaptureUnsupported, match="the carried value holds a"):
        flatten(Frame(), value, "the carried value")


def all_three(x, n):
    y = npdynamo.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
    z = npdynamo.fori_loop(0, n, lambda i, v: v + i, y)
    return npdynamo.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0 + 1.0, z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_call_is_one_node_for_any_predicate_and_trip_count(backend):
    compiled = npdynamo.compile(all_three, backend=backend)
    # the first n is a constant; once it changed it is a graph input (a second graph), and the
    # third n and the other predicate run that same entry
    for x, n, graphs in ((np.arange(1.0, 5.0), 5, 1), (-np.arange(4.0), 50, 2),
                         (np.full(4, 200.0), 0, 2)):
        check_same(all_three, x, n, compiled=compiled, graphs=graphs, breaks=0)
    for graph in npdynamo.inspect(compiled).graphs:
        assert [op for op in graph.ops if op in ("cond", "fori_loop", "while_loop")] == [
            "cond", "fori_loop", "while_loop"]


def writes_outer_array(x, n):
    def body(i, v):
        x[0] = i
        return v + 1.0
    return npdynamo.fori_loop(0, n, body, x * 1.0)


def appends_to_a_list(x, seen):
    def double(v):
        seen.append(1)
        return v * 2.0
    return npdynamo.cond(x.sum() > 0, double, lambda v: v, x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [(writes_outer_array, (np.arange(3.0), 4)),
                                      (appends_to_a_list, (np.arange(3.0), []))],
                         ids=["writes_outer_array", "appends_to_a_list"])
def test_a_function_that_changes_the_outside_is_refused_and_runs_plainly(fn, args, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert "changes objects outside it" in brk.reason


def score_then_store(H, s, t):
    for i in range(1, H.shape[0]):
        if s[i] == t[i]:  # a cond that reads H and gives a number
            d = H[i - 1, 0] + 2.0
        else:
            d = H[i - 1, 0] - 1.0
        H[i, 0] = d  # no view of H can come out of it: the write stays in the graph
    return H


def row_then_store(H, s):
    r = npdynamo.cond(s[0] > 0, lambda A: A[1], lambda A: A[2], H)  # may give a view of H
    H[1, 0] = 1.0
    return r


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_node_giving_numbers_only_leaves_the_arrays_it_read_writable(backend):
    r = np.random.default_rng(2)
    args = (np.zeros((20, 2)), r.integers(0, 2, 20), r.integers(0, 2, 20))
    check_same(score_then_store, *args, backend=backend, graphs=1, breaks=0)
    report = npdynamo.explain(row_then_store)(np.zeros((20, 2)), np.ones(3))
    assert any("in-place write" in b.reason for b in report.break_reasons), report
