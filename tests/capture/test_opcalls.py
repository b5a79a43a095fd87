"""``capture/opcalls.py``: how a NumPy call becomes a graph node. The argument forms ops take
(``raw``: constants plain, arrays tracked, inside nested tuples and lists; ``raw_sizes`` keeps
symbolic sizes; ``raw_numbers`` keeps numbers the graph computes), then ``op_call`` end to end:
a call on constants only is folded (no node), a view op's result is recorded as a view (a write
through it reaches its base, as in NumPy), a composite call is its pieces, and a call on a
boolean-mask selection is a break. Each program plain against compiled with exact counts."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.opcalls import has_array, raw, raw_numbers, raw_sizes
from npdynamo.capture.values import (
    ArrayValue,
    ComputedNumberValue,
    Const,
    ListValue,
    SizeValue,
    TupleValue,
)
from npdynamo.fx.graph import Graph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from tests.differential import check_same


def test_argument_forms():
    g = Graph()
    array = ArrayValue(g.placeholder("x", ArrayMeta((3,), np.dtype("float64"))))
    size = SizeValue("s0", 3, None)
    number = ComputedNumberValue(1.5, g.placeholder("f", ScalarMeta(float)), None)
    nested = TupleValue([Const(1), ListValue([array, Const("a")]), size])
    assert raw(nested) == (1, [array, "a"], 3)
    assert raw(Const(None)) is None
    assert raw_sizes(nested) == (1, [array, "a"], "s0")  # the size stays symbolic
    assert raw_numbers(TupleValue([number, Const(2)]))[0] is number  # a graph float stays
    assert has_array(raw(nested)) and not has_array((1, [2, {"k": 3}]))
    assert has_array({"k": [array]})


def folded(x):
    return x * np.sqrt(4.0) + np.float64(np.exp(0.0))  # sqrt(4.0), exp(0.0): no node


def views(x):
    v = x[1:4]  # a view: the write below reaches x, as in NumPy
    v[0] = 100.0
    c = x[np.array([0, 1])]  # integer-array indexing copies: this write reaches nothing
    c[0] = 7.0
    return x.sum(), c


def reshaped_views(x):
    v = x.reshape(2, 3)  # recorded as a view: a write through it is a break, never lost
    v[0, 0] = 100.0
    t = x.reshape(3, 2).T
    t[1, 1] = -1.0
    return x.sum()


def composite(x):
    a, b = np.split(x, 2)  # a composite: its pieces, in the list NumPy returns
    return a * 2, b + 1


def on_a_selection(x):
    y = x * 2
    return np.exp(x[x > 2]) + 0 * y.sum()  # np.exp of a selection: a break


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_op_calls_match_python(backend):
    x = np.arange(6.0)
    compiled = check_same(folded, x, backend=backend, graphs=1, breaks=0)
    (graph,) = npdynamo.inspect(compiled).graphs
    assert "sqrt" not in graph.ops and "exp" not in graph.ops, graph.ops
    check_same(views, x.copy(), backend=backend, graphs=1, breaks=0)
    check_same(composite, x, backend=backend, graphs=1, breaks=0)


def test_what_a_graph_cannot_hold_breaks():
    check_same(reshaped_views, np.arange(6.0), graphs=1, breaks=2)
    check_same(on_a_selection, np.arange(5.0), graphs=2, breaks=1)
