"""fx graphs with symbolic sizes: printing, passes, lint, codegen and the Interpreter.

Hand-built graphs whose placeholders carry symbolic dimensions (and dynamic scalars) run on 20
sizes through the generated code and the Interpreter, bitwise equal to NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.dynamic_shapes import make_inputs, train_step, train_step_graph
from npdynamo import fx, ops
from npdynamo.fx.lint import LintError
from npdynamo.fx.passes import (
    common_subexpression_elimination,
    constant_fold,
    dead_code_elimination,
    propagate_shapes,
    simplify,
)
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbol_table import SymbolTable
from npdynamo.ops.symbolic import FactRecorder

SIZES = [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 23, 31, 32, 33, 50, 64, 99, 128, 255]
F64 = np.dtype(np.float64)


def assert_bitwise(got, want):
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_bitwise(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)


def shapes_graph():
    """Broadcast with a size-1 dimension, reshape with -1, symbolic slicing, concatenate, a
    size used as a number, arange over a symbolic length."""
    t = SymbolTable()
    s0 = t.new(6, "x.shape[0]")
    g = fx.Graph()
    call = lambda op, *a, **k: g.call_function(op, a, k)  # noqa: E731
    x = g.placeholder("x", ArrayMeta((s0, 4), F64))
    b = g.placeholder("b", ArrayMeta((1, 4), F64))
    y = call(ops.add, x, b)
    flat = call(ops.reshape, y, shape=(-1,))
    diff = call(ops.subtract, call(ops.getitem, x, slice(1, None)),
                call(ops.getitem, x, slice(None, -1)))
    both = call(ops.concatenate, (x, diff), axis=0)
    scaled = call(ops.divide, both, s0)
    idx = call(ops.arange, stop=s0)
    g.output((flat, scaled, idx, call(ops.reshape, y, shape=(2, -1))))
    return g


def shapes_numpy(x, b):
    y = x + b
    both = np.concatenate((x, x[1:] - x[:-1]), axis=0)
    return y.reshape(-1), both / x.shape[0], np.arange(x.shape[0]), y.reshape(2, -1)


def test_printing_shows_symbols():
    g = shapes_graph()
    propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
    text = str(g)
    assert "x: float64[s0, 4]" in text and "arange(stop=s0)" in text
    assert "divide(concatenate, s0)" in text and "float64[2*s0 - 1, 4]" in text
    gm = fx.GraphModule(g)
    assert "x.shape[0]" in gm.code  # the size is read from the input at run time
    assert "(s0, 4)" in gm.print_tabular()


def test_shape_prop_returns_facts_and_records_into_given_recorder():
    g = shapes_graph()
    rec = FactRecorder()
    facts = propagate_shapes(g, [p.meta["val"] for p in g.placeholders], facts=rec)
    # x[1:] - x[:-1] broadcasts two sizes that are the same expression, s0 - 1: the result
    # has that size whether it is 1 or not, so the rule relies on nothing
    assert facts == rec.facts == []
    g2 = fx.Graph()
    s0 = SymbolTable().new(8)
    x = g2.placeholder("x", ArrayMeta((s0,), F64))
    g2.output(g2.call_function(ops.reshape, (x,), {"shape": (4, -1)}))
    assert [f.render() for f in propagate_shapes(g2, [x.meta["val"]], facts=rec)] == [
        "s0%4 == 0"]
    assert [f.render() for f in rec.facts] == ["s0%4 == 0"]


@pytest.mark.parametrize("n", SIZES)
def test_codegen_and_interpreter_bitwise_on_every_size(n):
    g = shapes_graph()
    propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
    gm = fx.GraphModule(g)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2 * n, 4))  # reshape(2, -1) needs an even size (its fact)
    b = rng.standard_normal((1, 4))
    want = shapes_numpy(x, b)
    assert_bitwise(gm(x, b), want)
    assert_bitwise(fx.Interpreter(gm).run(x, b), want)


@pytest.mark.parametrize("n", SIZES)
def test_training_step_graph_bitwise(n):
    g = train_step_graph()
    propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
    gm = fx.GraphModule(g)
    args = make_inputs(n, np.random.default_rng(n))
    want = train_step(*args)
    assert_bitwise(gm(*args), want)
    assert_bitwise(fx.Interpreter(gm).run(*args), want)


def test_passes_on_symbolic_graphs():
    s0 = SymbolTable().new(5)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0, 3), F64))
    lr = g.placeholder("lr", ScalarMeta(float))
    r1 = g.call_function(ops.reshape, (x,), {"shape": (3 * s0,)})
    r2 = g.call_function(ops.reshape, (x,), {"shape": (s0 * 3,)})  # the same expression
    a = g.call_function(ops.arange, (), {"stop": s0})
    g.call_function(ops.exp, (x,))  # dead
    one = g.call_function(ops.multiply, (g.call_function(ops.add, (r1, r2)), 1))
    g.output((g.call_function(ops.multiply, (one, lr)), a))
    propagate_shapes(g, [x.meta["val"], lr.meta["val"]])
    assert common_subexpression_elimination(g) == 1
    assert dead_code_elimination(g) == 1
    assert constant_fold(g) == 0  # arange(stop=s0) depends on the input's size
    assert simplify(g) == 1  # x * 1 is dropped: metas compare structurally
    g.lint()
    gm = fx.GraphModule(g)
    x7 = np.arange(21.0).reshape(7, 3)
    out, idx = gm(x7, 0.5)
    assert np.array_equal(out, (x7.reshape(21) + x7.reshape(21)) * 1 * 0.5)
    assert np.array_equal(idx, np.arange(7))


def test_lint_rejects_a_size_no_input_gives():
    t = SymbolTable()
    s0, s1 = t.new(3), t.new(4)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0,), F64))
    g.output(g.call_function(ops.reshape, (x,), {"shape": (s1,)}))
    with pytest.raises(LintError, match="s1"):
        g.lint()


def test_dynamic_scalar_placeholder_prints_and_runs():
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((3,), np.float32))
    lr = g.placeholder("lr", ScalarMeta(float))
    g.output(g.call_function(ops.multiply, (lr, x)))
    propagate_shapes(g, [x.meta["val"], lr.meta["val"]])
    assert "lr: weak float" in str(g)
    assert g.output_node.meta["val"][0].dtype == np.float32
    gm = fx.GraphModule(g)
    xs = np.ones(3, np.float32)
    for lr_value in (0.1, 1e-3, 3.5):
        assert_bitwise(gm(xs, lr_value), (lr_value * xs,))
