"""Graph and Node: building, naming, def-use links, editing, copying, printing."""

from __future__ import annotations

import keyword

import numpy as np
import pytest

from npdynamo.fx import Graph, Node, map_arg
from npdynamo.ops.meta import ArrayMeta


def _names(graph):
    return [n.name for n in graph.nodes]


def test_names_come_from_targets_and_are_unique(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["add"], (x, x))
    b = g.call_function(ops["add"], (a, x))
    c = g.call_function(np.tanh, (b,))
    d = g.call_function(lambda v: v, (c,))
    e = g.call_function(ops["add"], (d, 1), name="add_1")
    g.output(e)
    names = _names(g)
    assert names[:4] == ["x", "add", "add_1", "tanh"]
    assert len(set(names)) == len(names)
    assert e.name not in ("add", "add_1")
    for name in names:
        assert name.isidentifier() and not keyword.iskeyword(name)


def test_weird_hints_become_identifiers():
    g = Graph()
    p = g.placeholder("L['x']")
    q = g.placeholder("3d")
    r = g.placeholder("class")
    s = g.placeholder("slice")  # would shadow the builtin the generated code calls
    for node in (p, q, r, s):
        assert node.name.isidentifier() and not keyword.iskeyword(node.name)
    assert s.name != "slice"
    assert p.target == "L['x']"


def test_placeholder_meta_as_dict_or_array_meta():
    g = Graph()
    m = ArrayMeta((2, 3), np.float64)
    assert g.placeholder("a", {"val": m, "source": ("f.py", 1, "")}).meta["val"] is m
    assert g.placeholder("b", m).meta == {"val": m}
    assert g.placeholder("c").meta == {}


def test_users_and_all_input_nodes_follow_nested_args(ops):
    g = Graph()
    x, y, z = g.placeholder("x"), g.placeholder("y"), g.placeholder("z")
    n = g.call_function(
        ops["add"], ((slice(0, y), x, None), [x, {"k": z}]), {"w": slice(None, None, y)}
    )
    assert n.all_input_nodes == [y, x, z]
    for inp in (x, y, z):
        assert list(inp.users) == [n]
    n.args = (x,)
    assert list(y.users) == [n]  # still read through kwargs
    assert z.users == {}
    n.kwargs = {}
    assert y.users == {} and list(x.users) == [n]
    assert n.all_input_nodes == [x]


def test_update_arg_and_kwarg_keep_users(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    n = g.call_function(ops["add"], (x, x))
    n.update_arg(0, y)
    assert n.args == (y, x) and n in y.users and n in x.users
    n.update_arg(1, 2.0)
    assert x.users == {}
    n.update_kwarg("out", x)
    assert n.kwargs == {"out": x} and n in x.users


def test_replace_all_uses_with(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(ops["neg"], (x,))
    b = g.call_function(ops["add"], (x, (x, [x])))
    out = g.output((a, b, x))
    changed = x.replace_all_uses_with(y)
    assert set(changed) == {a, b, out}
    assert x.users == {}
    assert b.args == (y, (y, [y]))
    assert out.args == ((a, b, y),)
    assert set(y.users) == {a, b, out}
    g.lint()


def test_replace_all_uses_with_only_if(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,))
    g.output(a)
    with g.inserting_after(a):
        b = g.call_function(ops["tanh"], (a,))
    changed = a.replace_all_uses_with(b, only_if=lambda u: u is not b)
    assert changed == [g.output_node]
    assert b.args == (a,) and g.output_node.args == (b,)
    g.lint()


def test_replace_input_with(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(ops["add"], (x, x), {"k": [x]})
    a.replace_input_with(x, y)
    assert a.args == (y, y) and a.kwargs == {"k": [y]}
    assert x.users == {} and list(y.users) == [a]


def test_nodes_hash_by_identity_and_repr_is_name(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,))
    assert repr(a) == "negative"
    assert {x: 1, a: 2}[a] == 2
    assert a != x and a == a


def test_default_insertion_goes_before_output_and_placeholders_go_first(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,))
    g.output(a)
    b = g.call_function(ops["tanh"], (a,))
    y = g.placeholder("y")
    assert _names(g) == ["x", "y", "negative", "tanh", "output"]
    assert g.placeholders == [x, y]
    assert g.output_node.op == "output"
    assert b.next is g.output_node
    g.lint()


def test_inserting_before_and_after_keep_creation_order(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,), name="a")
    z = g.call_function(ops["neg"], (a,), name="z")
    g.output(z)
    with g.inserting_after(a):
        g.call_function(ops["tanh"], (a,), name="b")
        g.call_function(ops["tanh"], (a,), name="c")
    with g.inserting_before(z):
        g.call_function(ops["tanh"], (a,), name="d")
        g.call_function(ops["tanh"], (a,), name="e")
    g.call_function(ops["tanh"], (a,), name="f")
    assert _names(g) == ["x", "a", "b", "c", "d", "e", "z", "f", "output"]
    other = Graph()
    with pytest.raises(ValueError):
        with other.inserting_before(a):
            pass


def test_erase_node_refuses_used_nodes(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(ops["neg"], (x,))
    b = g.call_function(ops["neg"], (a,))
    g.output(x)
    with pytest.raises(ValueError, match="still used by"):
        g.erase_node(a)
    assert len(g.nodes) == 4
    g.erase_node(b)
    g.erase_node(a)
    assert _names(g) == ["x", "output"] and len(g.nodes) == 2
    assert list(x.users) == [g.output_node]
    with pytest.raises(ValueError):
        g.erase_node(a)
    g.lint()


def test_iteration_survives_erasing_nodes(ops):
    g = Graph()
    x = g.placeholder("x")
    chain = [x]
    for _ in range(5):
        chain.append(g.call_function(ops["neg"], (chain[-1],)))
    g.output(x)
    seen = []
    for node in reversed(g.nodes):
        seen.append(node.name)
        if node.op == "call_function":
            g.erase_node(node)
    assert len(seen) == 7
    assert _names(g) == ["x", "output"]
    # Erasing the node after the current one while iterating forwards skips it.
    g2 = Graph()
    y = g2.placeholder("y")
    p = g2.call_function(ops["neg"], (y,), name="p")
    q = g2.call_function(ops["neg"], (y,), name="q")
    g2.output(y)
    visited = []
    for node in g2.nodes:
        visited.append(node.name)
        if node is p:
            g2.erase_node(q)
    assert visited == ["y", "p", "output"]


def test_output_rejects_a_second_output(ops):
    g = Graph()
    x = g.placeholder("x")
    g.output(x)
    with pytest.raises(ValueError, match="already has an output"):
        g.output(x)
    with pytest.raises(TypeError):
        g.call_function(42, (x,))


def test_copy_is_independent(ops):
    g = Graph()
    x = g.placeholder("x", meta={"val": ArrayMeta((2,), np.float32)})
    a = g.call_function(ops["add"], (x, (x, slice(x, None))), {"k": 1})
    g.output((a, x))
    new, mapping = g.copy()
    new.lint()
    assert _names(new) == _names(g)
    na = mapping[a]
    assert na.graph is new and na.target is a.target
    assert na.args == (mapping[x], (mapping[x], slice(mapping[x], None)))
    assert na.meta is not a.meta and mapping[x].meta == x.meta
    # Editing the copy leaves the original alone, and new names stay unique.
    b = new.call_function(ops["neg"], (na,))
    assert b.name not in _names(g)
    assert len(g.nodes) == 3 and len(new.nodes) == 4
    assert list(a.users) == [g.output_node]


def test_str_lists_nodes_with_metas(ops):
    g = Graph()
    x = g.placeholder("x", meta={"val": ArrayMeta((4, 8), np.float32)})
    a = g.call_function(ops["tanh"], (x,))
    a.meta["val"] = ArrayMeta((4, 8), np.float32)
    s = g.call_function(np.sum, (a,), {"axis": -1})
    g.output((s, 1))
    text = str(g)
    assert "graph(x: float32[4, 8]):" in text
    assert "tanh: float32[4, 8] = tanh(x)" in text
    assert "sum = sum(tanh, axis=-1)" in text
    assert "return (sum, 1)" in text


def test_map_arg_rebuilds_containers(ops):
    g = Graph()
    x = g.placeholder("x")
    structure = (x, [1, x], {"a": x, "b": (2,)}, slice(x, 3, None), "s")
    mapped = map_arg(structure, lambda n: n.name.upper())
    assert mapped == ("X", [1, "X"], {"a": "X", "b": (2,)}, slice("X", 3, None), "s")
    assert map_arg(5, lambda n: 0) == 5
    assert isinstance(x, Node)
