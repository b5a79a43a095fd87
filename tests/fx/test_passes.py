"""Passes: dead-code elimination, common-subexpression elimination, shape propagation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npdynamo.errors import NpdynamoError
from npdynamo.fx import Graph, GraphModule
from npdynamo.fx.passes import (
    common_subexpression_elimination,
    dead_code_elimination,
    propagate_shapes,
)
from npdynamo.ops.meta import ArrayMeta


def _same(a, b):
    """Bitwise equal values of the same type and dtype."""
    assert type(a) is type(b)
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    else:
        assert a == b


# -- dead-code elimination -------------------------------------------------------------------


def test_dce_removes_dead_chains_and_keeps_impure(ops):
    g = Graph()
    x = g.placeholder("x")
    g.placeholder("unused")
    live = g.call_function(ops["neg"], (x,))
    d1 = g.call_function(ops["tanh"], (x,))
    d2 = g.call_function(ops["add"], (d1, live))
    g.call_function(ops["mul"], (d2, 2))
    effect = g.call_function(ops["log"], (d1,))
    g.output(live)
    assert dead_code_elimination(g) == 2  # d2 and the multiply; tanh feeds the impure node
    names = [n.name for n in g.nodes]
    assert names == ["x", "unused", "negative", "tanh", "log_effect", "output"]
    assert effect.users == {} and d2 not in d1.users
    assert dead_code_elimination(g) == 0
    g.lint()
    assert GraphModule(g)(np.ones(2), None)[0].tolist() == [-1.0, -1.0]


def test_dce_treats_plain_callables_as_pure():
    g = Graph()
    x = g.placeholder("x")
    g.call_function(print, (x,))
    g.output(x)
    assert dead_code_elimination(g) == 1
    assert len(g.nodes) == 2


# -- common-subexpression elimination --------------------------------------------------------


def test_cse_merges_duplicates_and_redirects_users(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a1 = g.call_function(ops["add"], (x, y))
    a2 = g.call_function(ops["add"], (x, y))
    t1 = g.call_function(ops["tanh"], (a1,))
    t2 = g.call_function(ops["tanh"], (a2,))  # equal only once a2 is merged into a1
    swapped = g.call_function(ops["add"], (y, x))  # not merged: argument order matters
    g.output((t1, t2, swapped))
    assert common_subexpression_elimination(g) == 2
    assert g.output_node.args == ((t1, t1, swapped),)
    assert list(a1.users) == [t1]
    g.lint()


def test_cse_keeps_constants_of_different_types_apart():
    consts = [1, 1.0, True, np.float32(1), np.int8(1), 0.0, -0.0, 1 + 0j, "1"]
    g = Graph()
    x = g.placeholder("x")
    first = [g.call_function(np.multiply, (x, c)) for c in consts[:-1]]
    again = [g.call_function(np.multiply, (x, c)) for c in consts[:-1]]
    g.output((*first, *again))
    before = GraphModule(g)(np.arange(3, dtype=np.int16))
    assert common_subexpression_elimination(g) == len(consts) - 1
    assert g.output_node.args[0] == (*first, *first)
    after = GraphModule(g)(np.arange(3, dtype=np.int16))
    for a, b in zip(before, after, strict=True):
        _same(a, b)
    # x * 0.0 and x * -0.0 stay apart: 0 * -0.0 is -0.0.
    assert math.copysign(1, after[5][0]) == 1.0 and math.copysign(1, after[6][0]) == -1.0


def test_cse_handles_nan_and_unhashable_constants():
    arr = np.arange(3.0)
    other = np.arange(3.0)
    g = Graph()
    x = g.placeholder("x")
    n1 = g.call_function(np.add, (x, math.nan))
    n2 = g.call_function(np.add, (x, float("nan")))
    l1 = g.call_function(np.add, (x, [1.0, 2.0, 3.0]))
    l2 = g.call_function(np.add, (x, [1.0, 2.0, 3.0]))
    s1 = g.call_function(np.sum, (x,), {"axis": 0, "keepdims": True})
    s2 = g.call_function(np.sum, (x,), {"keepdims": True, "axis": 0})
    a1 = g.call_function(np.add, (x, arr))
    a2 = g.call_function(np.add, (x, arr))
    b1 = g.call_function(np.add, (x, other))  # equal contents, other object: kept apart
    d1 = g.call_function(np.add, (x, {"k": [1]}))
    d2 = g.call_function(np.add, (x, {"k": [1]}))
    g.output((n1, n2, l1, l2, s1, s2, a1, a2, b1, d1, d2))
    assert common_subexpression_elimination(g) == 5
    assert g.output_node.args[0] == (n1, n1, l1, l1, s1, s1, a1, a1, b1, d1, d1)
    assert d2.graph is g and d2 not in set(g.nodes)


def test_cse_never_merges_impure_nodes(ops):
    g = Graph()
    x = g.placeholder("x")
    e1 = g.call_function(ops["log"], (x,))
    e2 = g.call_function(ops["log"], (x,))
    g.output((e1, e2))
    assert common_subexpression_elimination(g) == 0
    assert len(g.nodes) == 4


_UNARY = [np.negative, np.tanh, np.abs]
_BINARY = [np.add, np.multiply, np.subtract, np.maximum]
_CONSTS = [1, 1.0, True, np.float32(1), 2, 0.5]


@st.composite
def _programs(draw):
    """A random straight-line program over two inputs, with deliberate repeats."""
    steps = []
    n_values = 2
    for _ in range(draw(st.integers(1, 12))):
        if steps and draw(st.booleans()):
            steps.append(draw(st.sampled_from(steps)))  # a repeat for CSE to find
        elif draw(st.booleans()):
            steps.append((draw(st.sampled_from(_UNARY)), draw(st.integers(0, n_values - 1))))
        else:
            lhs = draw(st.integers(0, n_values - 1))
            rhs = draw(
                st.one_of(
                    st.integers(0, n_values - 1),
                    st.sampled_from(_CONSTS).map(lambda c: ("const", c)),
                )
            )
            steps.append((draw(st.sampled_from(_BINARY)), lhs, rhs))
        n_values += 1
    outputs = draw(st.lists(st.integers(0, n_values - 1), min_size=1, max_size=3))
    return steps, outputs


def _build(program):
    steps, outputs = program
    g = Graph()
    values = [g.placeholder("x"), g.placeholder("y")]
    for fn, *operands in steps:
        args = [o[1] if isinstance(o, tuple) else values[o] for o in operands]
        values.append(g.call_function(fn, tuple(args)))
    g.output(tuple(values[i] for i in outputs))
    return g


@settings(max_examples=40, deadline=None)
@given(_programs(), st.sampled_from([np.float32, np.float64, np.int32]))
def test_dce_and_cse_preserve_results(program, dtype):
    inputs = (np.arange(-2, 4, dtype=dtype), np.array(3, dtype=dtype))
    g = _build(program)
    with np.errstate(all="ignore"):
        want = GraphModule(g)(*inputs)
        n_before = len(g.nodes)
        merged = common_subexpression_elimination(g)
        removed = dead_code_elimination(g)
        g.lint()
        assert len(g.nodes) == n_before - merged - removed
        got = GraphModule(g)(*inputs)
    for a, b in zip(want, got, strict=True):
        _same(a, b)
    assert common_subexpression_elimination(g) == 0 and dead_code_elimination(g) == 0


# -- shape propagation ------------------------------------------------------------------------


def test_propagate_shapes_uses_infer_rules_on_metas(ops):
    g = Graph()
    x, b = g.placeholder("x"), g.placeholder("b")
    s = g.call_function(ops["add"], (x, b))
    t = g.call_function(ops["mul"], (s, 2.0))
    g.output((t, x))
    propagate_shapes(g, [ArrayMeta((4, 3), np.float32), ArrayMeta((3,), np.float32)])
    assert s.meta["val"] == ArrayMeta((4, 3), np.float32)
    assert t.meta["val"] == ArrayMeta((4, 3), np.float32)
    assert g.output_node.meta["val"] == (t.meta["val"], x.meta["val"])
    assert ops["add"].calls == 0 and ops["mul"].calls == 0


def test_propagate_shapes_runs_targets_without_rules_on_concrete_inputs(ops):
    g = Graph()
    x, k = g.placeholder("x"), g.placeholder("k")
    n = g.call_function(ops["neg"], (x,))
    s = g.call_function(np.sum, (n,))
    r = g.call_function(np.sum, (n,), {"axis": 0, "keepdims": True})
    m = g.call_function(np.multiply, (r, k))
    g.output((s, m))
    propagate_shapes(g, [np.ones((2, 5), np.float32), 3])
    assert x.meta["val"] == ArrayMeta((2, 5), np.float32)
    assert k.meta["val"] == 3
    assert s.meta["val"] == ArrayMeta((), np.float32, scalar=True)
    assert r.meta["val"] == ArrayMeta((1, 5), np.float32)
    assert m.meta["val"] == ArrayMeta((1, 5), np.float32)
    propagate_shapes(g, [np.float64(2.0), 3])
    assert x.meta["val"] == ArrayMeta((), np.float64, scalar=True)


def test_propagate_shapes_without_rule_or_data_is_a_clear_error():
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(np.cumsum, (x,)))
    with pytest.raises(NpdynamoError, match="'cumsum'.*no infer rule"):
        propagate_shapes(g, [ArrayMeta((3,), np.float64)])
    with pytest.raises(ValueError, match="1 inputs but 2 examples"):
        propagate_shapes(g, [np.ones(3), np.ones(3)])


def test_propagate_shapes_names_the_node_when_a_rule_fails(ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    g.output(g.call_function(ops["add"], (x, y)))
    with pytest.raises(ValueError) as info:
        propagate_shapes(g, [ArrayMeta((3,), np.float64), ArrayMeta((4,), np.float64)])
    assert any("'add'" in note for note in info.value.__notes__)


def test_cse_never_merges_copies():
    # capture adds copies so that outputs merged by CSE stay distinct arrays: merging the
    # copies again (the numba backend runs CSE too) would alias two of the user's results
    from npdynamo.fx.passes import common_subexpression_elimination
    from npdynamo.ops import REGISTRY

    g = Graph()
    x = g.placeholder("x")
    d = g.call_function(REGISTRY["subtract"], (x, x))
    g.output((d, g.call_function(REGISTRY["copy"], (d,)), g.call_function(REGISTRY["copy"], (d,))))
    assert common_subexpression_elimination(g) == 0
    assert len({id(n) for n in g.output_node.args[0]}) == 3
