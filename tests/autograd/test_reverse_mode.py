"""``reverse_mode`` on hand-built fx graphs: what it emits, for which nodes, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.autograd import graph_emitter, reverse_mode
from npdynamo.errors import GradError
from npdynamo.fx import Graph, GraphModule, map_arg
from npdynamo.ops import ArrayMeta

F3 = ArrayMeta((3,), np.float64)


def call(graph, op, *args, **kwargs):
    node = graph.call_function(op, args, kwargs)
    node.meta["val"] = op.infer(*map_arg(args, lambda n: n.meta["val"]), **kwargs)
    return node


def branching_graph():
    """a, b -> out = sum(a * exp(b)); sin(a) is computed but unused by out."""
    g = Graph()
    a, b = g.placeholder("a", F3), g.placeholder("b", F3)
    c = call(g, ops.exp, b)
    d = call(g, ops.multiply, a, c)
    e = call(g, ops.sin, a)
    out = call(g, ops.sum, d)
    return g, a, b, c, d, e, out


def recording(graph):
    emitted = []
    inner = graph_emitter(graph)

    def emit(op, *args, **kwargs):
        node = inner(op, *args, **kwargs)
        emitted.append(node)
        return node

    return emit, emitted


def test_emits_only_for_the_path_from_wrt_to_output():
    g, a, b, c, d, e, out = branching_graph()
    emit, emitted = recording(g)
    (ga,) = reverse_mode([c, d, e, out], out, [a], emit)
    assert [n.target.name for n in emitted] == ["ones", "reshape", "broadcast_to", "multiply"]
    assert all(e not in n.all_input_nodes and b not in n.all_input_nodes for n in emitted)
    g.output((ga,))
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(GraphModule(g)(x, y)[0], np.exp(y))


def test_nothing_is_emitted_without_a_path():
    g, a, b, c, d, e, out = branching_graph()
    emit, emitted = recording(g)
    assert reverse_mode([c, d, e, out], e, [b], emit, cotangent=a) == [None]
    assert emitted == []


def test_intermediate_and_several_wrt():
    g, a, b, c, d, e, out = branching_graph()
    emit, _ = recording(g)
    gb, gc, ga = reverse_mode([c, d, e, out], out, [b, c, a], emit)
    g.output((gb, gc, ga))
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    rb, rc, ra = GraphModule(g)(x, y)
    np.testing.assert_allclose(rc, x)
    np.testing.assert_allclose(rb, x * np.exp(y))
    np.testing.assert_allclose(ra, np.exp(y))


def test_several_outputs_with_cotangents_and_an_output_that_is_an_input():
    g, a, b, c, d, e, out = branching_graph()
    t1, t2 = g.placeholder("t1", F3), g.placeholder("t2", F3)
    emit, _ = recording(g)
    (ga,) = reverse_mode([c, d, e, out], [e, a], [a], emit, cotangent=[t1, t2])
    g.output((ga,))
    x, y = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    u, v = np.array([1.0, -1.0, 2.0]), np.array([0.5, 0.5, 0.5])
    np.testing.assert_allclose(GraphModule(g)(x, y, u, v)[0], u * np.cos(x) + v)


def test_masks_and_indices_carry_no_gradient():
    g = Graph()
    a = g.placeholder("a", F3)
    mask = call(g, ops.greater, a, 0.0)
    w = call(g, ops.where, mask, a, 0.0)
    idx = call(g, ops.argmax, a)
    pick = call(g, ops.getitem, w, (idx,))
    emit, emitted = recording(g)
    (ga,) = reverse_mode([mask, w, idx, pick], pick, [a], emit)
    g.output((ga,))
    np.testing.assert_array_equal(GraphModule(g)(np.array([-1.0, 2.0, 0.5]))[0], [0, 1, 0])


def test_non_scalar_output_needs_a_cotangent():
    g, a, b, c, d, e, out = branching_graph()
    with pytest.raises(GradError, match="has shape \\(3,\\)"):
        reverse_mode([c, d], d, [a], graph_emitter(g))


def test_non_differentiable_op_on_the_path_names_the_source_line():
    g = Graph()
    a = g.placeholder("a", F3)
    q = call(g, ops.floor_divide, a, 2.0)
    q.meta["source"] = ("model.py", 12, "    q = a // 2.0\n")
    s = call(g, ops.sum, q)
    with pytest.raises(GradError, match=r"np.floor_divide is not differentiable.*model.py:12"):
        reverse_mode([q, s], s, [a], graph_emitter(g))


def test_gradient_dtype_follows_the_input():
    g = Graph()
    a = g.placeholder("a", ArrayMeta((3,), np.float32))
    b = g.placeholder("b", F3)
    prod = call(g, ops.multiply, a, b)  # float64 result
    s = call(g, ops.sum, prod)
    ga, gb = reverse_mode([prod, s], s, [a, b], graph_emitter(g))
    assert ga.meta["val"].dtype == np.float32 and gb.meta["val"].dtype == np.float64
    g.output((ga, gb))
    ra, rb = GraphModule(g)(np.ones(3, np.float32), np.arange(3.0))
    assert ra.dtype == np.float32
    np.testing.assert_array_equal(ra, [0, 1, 2])
