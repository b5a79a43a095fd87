"""Interpreter: same results as GraphModule; overridable per node kind."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.errors import NpdynamoError
from npdynamo.fx import Graph, GraphModule, Interpreter


def _graph(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(ops["add"], (x, y))
    t = g.call_function(ops["tanh"], (a,))
    s = g.call_function(np.sum, (t,), {"axis": 0})
    i = g.call_function(lambda v, idx: v[idx], (t, (slice(0, 2), None)))
    g.output((s, i, x, 2.5))
    return g


def test_interpreter_matches_graph_module(ops):
    g = _graph(ops)
    inputs = (np.arange(6.0).reshape(3, 2), np.array([0.5, -1.0]))
    want = GraphModule(g)(*inputs)
    interp = Interpreter(g)
    got = interp.run(*inputs)
    assert isinstance(got, tuple) and len(got) == len(want) == 4
    for a, b in zip(got, want, strict=True):
        assert type(a) is type(b)
        assert np.array_equal(a, b)
    assert got[2] is inputs[0]
    # The interpreter calls the op objects themselves; the generated code calls their impls.
    assert ops["add"].calls == 1 and ops["tanh"].calls == 1
    assert set(interp.env) == {n for n in g.nodes if n.op != "output"}
    assert Interpreter(GraphModule(g)).graph is g


def test_run_node_and_env(ops):
    g = _graph(ops)
    interp = Interpreter(g)
    interp.run(np.ones((3, 2)), np.zeros(2))
    add = next(n for n in g.nodes if n.name == "add")
    interp.env[add.args[0]] = np.full((3, 2), 2.0)
    assert np.array_equal(interp.run_node(add), np.full((3, 2), 2.0))


def test_subclass_overriding_call_function(ops):
    seen = []

    class Tracing(Interpreter):
        def call_function(self, node, target, args, kwargs):
            seen.append(node.name)
            if node.name == "tanh":
                return np.zeros_like(args[0])  # swap one op's behaviour
            return super().call_function(node, target, args, kwargs)

    g = _graph(ops)
    out = Tracing(g).run(np.ones((3, 2)), np.ones(2))
    assert seen == ["add", "tanh", "sum", "lambda_"]
    assert np.array_equal(out[0], np.zeros(2))
    assert ops["tanh"].calls == 0


def test_overriding_placeholder_and_output(ops):
    class Doubling(Interpreter):
        def placeholder(self, node, target, args, kwargs):
            return super().placeholder(node, target, args, kwargs) * 2

        def output(self, node, target, args, kwargs):
            return ("wrapped", *super().output(node, target, args, kwargs))

    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(ops["neg"], (x,)))
    assert Doubling(g).run(np.array(3))[0] == "wrapped"
    assert Doubling(g).run(np.array(3))[1] == -6


def test_wrong_arity_and_bad_order(ops):
    g = _graph(ops)
    with pytest.raises(TypeError, match="takes 2 inputs but 1"):
        Interpreter(g).run(np.ones(2))
    bad = Graph()
    x = bad.placeholder("x")
    a = bad.call_function(ops["neg"], (x,))
    b = bad.call_function(ops["neg"], (a,))
    bad.output(b)
    a.prepend(b)
    with pytest.raises(NpdynamoError, match="'negative' is used before"):
        Interpreter(bad).run(np.ones(2))
