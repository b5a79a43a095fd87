"""Graph.lint(): each invariant broken on purpose is reported, naming the node."""

from __future__ import annotations

import pytest

from npdynamo.errors import NpdynamoError
from npdynamo.fx import Graph, GraphModule, LintError


def _chain(ops):
    """x -> a = neg(x) -> b = tanh(a) -> output(b)."""
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,), name="a")
    b = g.call_function(ops["tanh"], (a,), name="b")
    g.output(b)
    return g, x, a, b


def _expect(graph, node_name, words):
    with pytest.raises(LintError) as info:
        graph.lint()
    message = str(info.value)
    assert node_name in message
    assert words in message
    return info.value


def test_a_good_graph_passes(ops):
    g, *_ = _chain(ops)
    g.lint()
    assert issubclass(LintError, NpdynamoError)


def test_use_before_definition(ops):
    g, x, a, b = _chain(ops)
    a.prepend(b)  # b now runs before the node it reads
    err = _expect(g, "'b'", "before it is defined")
    assert err.node is b
    with pytest.raises(LintError):
        GraphModule(g)


def test_users_missing_an_entry(ops):
    g, x, a, b = _chain(ops)
    del a.users[b]
    _expect(g, "'b'", "missing from its users")


def test_users_listing_a_non_reader(ops):
    g, x, a, b = _chain(ops)
    x.users[b] = None
    _expect(g, "'x'", "does not read it")


def test_args_edited_behind_the_graphs_back(ops):
    g, x, a, b = _chain(ops)
    b._args = (x,)  # bypasses the setter, so the def-use links are stale
    _expect(g, "'b'", "does not read it")
    b._args = (a, x)
    _expect(g, "'b'", "recorded inputs do not match")


def test_node_from_another_graph(ops):
    g, x, a, b = _chain(ops)
    other = Graph()
    y = other.placeholder("y")
    with g.inserting_before(g.output_node):
        g.call_function(ops["neg"], (y,), name="stray")
    _expect(g, "'stray'", "another graph")


def test_erased_input(ops):
    g, x, a, b = _chain(ops)
    extra = g.call_function(ops["neg"], (x,), name="extra")
    g.erase_node(extra)
    b._args = (extra,)
    b._inputs = {extra: None}
    extra.users[b] = None
    del a.users[b]
    _expect(g, "'b'", "not in the graph")


def test_duplicate_names(ops):
    g, x, a, b = _chain(ops)
    b.name = "a"
    _expect(g, "'a'", "same name")


def test_invalid_name(ops):
    g, x, a, b = _chain(ops)
    a.name = "not valid"
    _expect(g, "not valid", "identifier")


def test_missing_output(ops):
    g, x, a, b = _chain(ops)
    g.erase_node(g.output_node)
    with pytest.raises(LintError, match="no output"):
        g.lint()


def test_duplicate_output(ops):
    g, x, a, b = _chain(ops)
    g.create_node("output", "output", (a,))
    _expect(g, "output_1", "duplicate output")


def test_node_after_output(ops):
    g, x, a, b = _chain(ops)
    late = g.call_function(ops["neg"], (x,), name="late")
    g.output_node.append(late)
    _expect(g, "'late'", "after the output")


def test_placeholder_after_body(ops):
    g, x, a, b = _chain(ops)
    y = g.placeholder("y")
    b.append(y)
    _expect(g, "'y'", "after a non-placeholder")


def test_unknown_kind_and_uncallable_target(ops):
    g, x, a, b = _chain(ops)
    a.op = "call_method"
    _expect(g, "'a'", "unknown kind")
    a.op = "call_function"
    a.target = "neg"
    _expect(g, "'a'", "not callable")
