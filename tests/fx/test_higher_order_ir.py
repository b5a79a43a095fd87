"""Control-flow nodes in the fx IR: printing, linting, running, code generation and the passes
working inside their subgraphs."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.fx import Graph, GraphModule, Interpreter, LintError, passes
from npdynamo.ops import ArrayMeta, ScalarMeta
from tests.ops.higher_order_cases import module

VEC = ArrayMeta((4,), np.float64)


def loop_graph(body_dtype=np.float64) -> tuple[Graph, GraphModule]:
    """x, a -> while sum(x) < 10: x = x + a (with a duplicated and an unused op in the body)."""

    def test(g, x):
        return [g.call_function(ops.less, (g.call_function(ops.sum, (x,)), 10.0))]

    def body(g, x, a):
        y = g.call_function(ops.add, (x, a))
        g.call_function(ops.add, (x, a))        # a repeat: CSE merges it
        g.call_function(ops.exp, (x,))          # unused: DCE drops it
        return [g.call_function(ops.astype, (y,), {"dtype": np.dtype(body_dtype or np.float32)})]

    cond, loop = module("cond", [VEC], test), module("body", [VEC, VEC], body)
    g = Graph()
    x, a = g.placeholder("x", VEC), g.placeholder("a", VEC)
    node = g.call_function(ops.while_loop, (cond, loop, (x,), (), (a,)))
    item = g.call_function(ops.tuple_item, (node, 0))
    g.output((item,))
    if body_dtype is not None:
        passes.propagate_shapes(g, [VEC, VEC])
    return g, loop


def test_runs_in_generated_code_and_in_the_interpreter():
    g, _ = loop_graph()
    gm = GraphModule(g)
    x, a = np.zeros(4), np.full(4, 0.75)
    want = x.copy()
    while want.sum() < 10:
        want = want + a
    np.testing.assert_array_equal(gm(x, a)[0], want)
    np.testing.assert_array_equal(Interpreter(gm).run(x, a)[0], want)
    assert "_body(" not in gm.code and "_while_loop(_cond, _body, (x,), (), (a,))" in gm.code


def test_the_interpreter_runs_subgraphs_with_its_own_class():
    seen = []

    class Recording(Interpreter):
        def call_function(self, node, target, args, kwargs):
            seen.append(node.name)
            return super().call_function(node, target, args, kwargs)

    g, _ = loop_graph()
    Recording(GraphModule(g)).run(np.zeros(4), np.full(4, 2.0))
    assert seen.count("add") == 2 and "less" in seen    # two iterations of the body


def test_printing_lists_the_subgraphs_under_the_node():
    g, _ = loop_graph()
    text = str(g)
    assert "while_loop = while_loop(cond, body, (x,), (), (a,))" in text
    assert "    body = graph(in_0: float64[4], in_1: float64[4]):" in text


def test_passes_work_inside_subgraphs():
    g, body = loop_graph()
    before = len(body.graph.nodes)
    assert passes.common_subexpression_elimination(g) == 1
    assert passes.dead_code_elimination(g) == 1     # the unused exp
    assert len(body.graph.nodes) == before - 2
    assert "exp" not in body.code                     # the subgraph's code was regenerated


def test_an_unused_loop_is_removed_and_a_used_one_never_merged():
    g, _ = loop_graph()
    x, a = g.placeholders
    node = next(n for n in g.nodes if n.target is ops.while_loop)
    with g.inserting_after(node):
        twin = g.call_function(ops.while_loop, node.args)
        twin.meta["val"] = node.meta["val"]
        item = g.call_function(ops.tuple_item, (twin, 0))
        item.meta["val"] = VEC
        total = g.call_function(ops.add, (item, item))
        total.meta["val"] = VEC
    g.output_node.args = ((g.output_node.args[0][0], total),)
    passes.common_subexpression_elimination(g)
    assert sum(n.target is ops.while_loop for n in g.nodes) == 2
    g.output_node.args = ((g.output_node.args[0][0],),)
    passes.dead_code_elimination(g)
    assert sum(n.target is ops.while_loop for n in g.nodes) == 1


def test_copy_copies_the_subgraphs():
    g, body = loop_graph()
    new, _ = g.copy()
    copied = next(n for n in new.nodes if n.target is ops.while_loop).args[1]
    assert copied is not body and len(copied.graph.nodes) == len(body.graph.nodes)
    passes.dead_code_elimination(new)
    assert len(copied.graph.nodes) < len(body.graph.nodes)


def test_lint_refuses_a_body_that_changes_the_carried_dtype():
    g, _ = loop_graph()
    _, narrowing = loop_graph(body_dtype=None)
    next(n for n in g.nodes if n.target is ops.while_loop).update_arg(1, narrowing)
    with pytest.raises(LintError, match=r"while_loop body returns \(float32\[4\]\) where "
                                        r"\(float64\[4\]\)"):
        g.lint()


def test_lint_refuses_a_broken_subgraph():
    g, body = loop_graph()
    first_call = next(n for n in body.graph.nodes if n.op == "call_function")
    body.graph.placeholders[0].prepend(first_call)   # now it reads its inputs before them
    with pytest.raises(LintError, match="subgraph body"):
        g.lint()


def test_fori_loop_bounds_and_scalar_metas():
    body = module("body", [ScalarMeta(int), VEC], lambda g, i, v: [
        g.call_function(ops.add, (v, i))])
    g = Graph()
    x = g.placeholder("x", VEC)
    n = g.placeholder("n", ScalarMeta(int))
    loop = g.call_function(ops.fori_loop, (1, n, body, (x,)))
    g.output((g.call_function(ops.tuple_item, (loop, 0)),))
    passes.propagate_shapes(g, [VEC, ScalarMeta(int)])
    g.lint()
    assert GraphModule(g)(np.zeros(4), 4)[0].tolist() == [6.0] * 4
    with pytest.raises(ops.UnsupportedArguments, match="bound must be a Python int"):
        ops.fori_loop.infer(1.5, 3, body, (VEC,))
