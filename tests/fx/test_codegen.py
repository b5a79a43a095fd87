"""GraphModule: generated source, constants, outputs, tracebacks, recompile, print_tabular."""

from __future__ import annotations

import ast
import math
import traceback

import numpy as np
import pytest

from npdynamo.fx import Graph, GraphModule, passes


def _assert_compiles(gm):
    compile(gm.code, "<test>", "exec")
    tree = ast.parse(gm.code)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef) and fn.name == gm.name
    assert isinstance(fn.body[-1], ast.Return) and isinstance(fn.body[-1].value, ast.Tuple)


def test_code_is_readable_and_calls_impls_directly(ops):
    g = Graph()
    x, w = g.placeholder("x"), g.placeholder("w")
    m = g.call_function(np.matmul, (x, w))
    t = g.call_function(ops["tanh"], (m,))
    g.output(t)
    gm = GraphModule(g)
    _assert_compiles(gm)
    assert gm.code.splitlines()[0] == "def forward(x, w):"
    assert "matmul = _matmul(x, w)" in gm.code
    assert "tanh = _tanh(matmul)" in gm.code
    assert gm.code.rstrip().endswith("return (tanh,)")
    # The op's impl is what the code calls: the op object itself is never entered.
    assert gm.forward.__globals__["_tanh"] is np.tanh
    xv, wv = np.ones((2, 3)), np.full((3, 4), 0.5)
    (out,) = gm(xv, wv)
    assert ops["tanh"].calls == 0
    assert np.array_equal(out, np.tanh(xv @ wv))


def test_named_function_and_no_inputs():
    g = Graph()
    g.output((1, "s"))
    gm = GraphModule(g, name="step")
    _assert_compiles(gm)
    assert gm.code.startswith("def step():")
    assert gm() == (1, "s")
    assert gm.forward.__name__ == "step"


def test_nested_args_slices_and_kwargs(ops):
    g = Graph()
    x, n = g.placeholder("x"), g.placeholder("n")
    index = (slice(0, n), None, ..., slice(None, None, -1))
    item = g.call_function(lambda v, idx: v[idx], (x, index))
    cat = g.call_function(np.concatenate, ([x, x],), {"axis": 0})
    pad = g.call_function(np.pad, (x, ((1, 0), (0, n))), {"mode": "constant"})
    d = g.call_function(lambda kw: kw["a"] + kw["b"], ({"a": x, "b": x},))
    odd = g.call_function(lambda v, **kw: v + kw["weird key"], (x,), {"weird key": n})
    g.output((item, cat, pad, d, odd))
    gm = GraphModule(g)
    _assert_compiles(gm)
    assert "(slice(0, n, None), None, ..., slice(None, None, -1))" in gm.code
    assert "axis=0" in gm.code and "mode='constant'" in gm.code
    xv = np.arange(12.0).reshape(3, 4)
    got = gm(xv, 2)
    want = (
        xv[0:2, None, ..., ::-1],
        np.concatenate([xv, xv], axis=0),
        np.pad(xv, ((1, 0), (0, 2)), mode="constant"),
        xv + xv,
        xv + 2,
    )
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b) and a.shape == b.shape


def test_constants_literal_or_bound(ops):
    consts = [
        np.dtype("float32"),
        math.nan,
        math.inf,
        -math.inf,
        np.float32(1.5),
        np.int64(3),
        object(),
        2**70,
        -0.0,
        1e-300,
        True,
        None,
        "text",
        b"raw",
        1 + 2j,
    ]
    g = Graph()
    x = g.placeholder("x")
    node = g.call_function(lambda *a: a, (x, *consts))
    g.output(node)
    gm = GraphModule(g)
    _assert_compiles(gm)
    for literal in (str(2**70), "-0.0", "1e-300", "True", "None", "'text'"):
        assert literal in gm.code
    for bound in ("_const_0", "_const_1", "_const_2"):
        assert bound in gm.code
    assert "nan" not in gm.code and "inf" not in gm.code and "dtype" not in gm.code
    (got,) = gm("x")
    assert got[0] == "x"
    for a, b in zip(got[1:], consts, strict=True):
        assert type(a) is type(b)
        if isinstance(b, float) and math.isnan(b):
            assert math.isnan(a)
        else:
            assert a is b or a == b
    assert math.copysign(1.0, got[9]) == -1.0
    assert got[7] is consts[6]  # arbitrary objects are passed, not copied


def test_same_constant_object_is_bound_once():
    dt = np.dtype("int16")
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.asarray, (x, dt))
    b = g.call_function(np.asarray, (a, dt))
    g.output(b)
    gm = GraphModule(g)
    assert gm.code.count("_const_0") == 2 and "_const_1" not in gm.code
    assert gm([1, 2])[0].dtype == dt


def test_returning_an_input_and_a_node_twice():
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    s = g.call_function(np.add, (x, y))
    g.output((x, s, s, 3.0))
    gm = GraphModule(g)
    _assert_compiles(gm)
    xv, yv = np.ones(3), np.arange(3.0)
    out = gm(xv, yv)
    assert len(out) == 4
    assert out[0] is xv
    assert out[1] is out[2]
    assert out[3] == 3.0

    g2 = Graph()
    only = g2.placeholder("only")
    g2.output(only)
    gm2 = GraphModule(g2)
    assert gm2(xv)[0] is xv
    assert isinstance(gm2(xv), tuple)


def test_target_names_cannot_clash_with_locals():
    def _add(a, b):  # a target whose global name would be "_add", same as np.add's
        return a - b

    g = Graph()
    x = g.placeholder("x")
    p = g.call_function(np.add, (x, 1))
    q = g.call_function(_add, (p, 1), name="_add")  # a node also named like the global
    r = g.call_function(_add, (q, 1))
    g.output((p, q, r))
    gm = GraphModule(g)
    _assert_compiles(gm)
    assert gm(np.array(5))[0] == 6 and gm(np.array(5))[1] == 5 and gm(np.array(5))[2] == 4


def _explode(v):
    raise ValueError("boom")


def _graph_raising_at(second_file: str) -> Graph:
    """``y = -x`` from /home/u/train.py:12, then a call that raises from ``second_file``:13."""
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.negative, (x,))
    a.meta["source"] = ("/home/u/train.py", 12, "    y = -x\n")
    b = g.call_function(_explode, (a,), name="explode")
    b.meta["source"] = (second_file, 13, "    z = explode(y)")
    g.output(b)
    return g


def test_exception_traceback_shows_the_users_line():
    gm = GraphModule(_graph_raising_at("/home/u/train.py"))
    assert "# train.py:12  y = -x\n    negative = _negative(x)" in gm.code
    assert "# train.py:13  z = explode(y)" in gm.code
    with pytest.raises(ValueError, match="boom") as info:
        gm(np.ones(2))
    # the graph's frame names the user's file and the line of the op that raised (user_lines);
    # the generated code stays in gm.code
    frames = traceback.extract_tb(info.value.__traceback__)
    graph = [f for f in frames if f.name.startswith("<npdynamo-graph-")]
    assert [(f.filename, f.lineno) for f in graph] == [("/home/u/train.py", 13)]


def test_a_graph_from_several_files_keeps_the_generated_lines():
    with pytest.raises(ValueError, match="boom") as info:
        GraphModule(_graph_raising_at("/home/u/model.py"))(np.ones(2))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<npdynamo-graph-")]
    assert len(generated) == 1
    assert generated[0].line == "explode = _explode(negative)"


def test_each_module_gets_its_own_file_name():
    g = Graph()
    g.output(g.placeholder("x"))
    f1 = GraphModule(g).forward.__code__.co_filename
    f2 = GraphModule(g).forward.__code__.co_filename
    assert f1 != f2 and f1.startswith("<npdynamo-graph-")


def test_source_comments_group_nodes_of_one_line():
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.negative, (x,))
    b = g.call_function(np.exp, (a,))
    for n in (a, b):
        n.meta["source"] = ("f.py", 3, "y = np.exp(-x)")
    g.output(b)
    code = GraphModule(g).code
    assert code.count("# f.py:3  y = np.exp(-x)") == 1


def test_recompile_after_edit(ops):
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(np.negative, (x,))
    g.output(a)
    gm = GraphModule(g)
    old_forward = gm.forward
    assert gm(np.array(2.0))[0] == -2.0
    with g.inserting_after(a):
        b = g.call_function(np.multiply, (a, 10))
    g.output_node.args = (b,)
    assert gm(np.array(2.0))[0] == -2.0  # compiled once: edits need recompile()
    gm.recompile()
    assert gm.forward is not old_forward
    assert gm(np.array(2.0))[0] == -20.0
    assert "multiply = _multiply(negative, 10)" in gm.code


def test_print_tabular_lists_every_node(capsys, ops):
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    s = g.call_function(ops["add"], (x, y))
    r = g.call_function(np.sum, (s,), {"axis": 1})
    g.output((r, s))
    passes.propagate_shapes(g, [np.ones((2, 3), np.float32), np.ones(3, np.float32)])
    gm = GraphModule(g)
    table = gm.print_tabular()
    assert capsys.readouterr().out.strip() == table.strip()
    lines = table.splitlines()
    assert lines[0].split() == ["kind", "name", "target", "args", "shape", "dtype"]
    rows = {line.split()[1]: line for line in lines[2:]}
    assert set(rows) == {n.name for n in g.nodes}
    assert "(2, 3)" in rows["x"] and "float32" in rows["x"]
    assert "(3,)" in rows["y"]
    assert "x, y" in rows["add"] and "(2, 3)" in rows["add"]
    assert "axis=1" in rows["sum"] and "(2,)" in rows["sum"] and "float32" in rows["sum"]
    assert rows["output"].split()[0] == "output"


@pytest.mark.parametrize(
    "name,dtype,other",
    [("greater", np.float64, 0.001), ("less_equal", np.int32, 7), ("equal", np.bool_, True),
     ("not_equal", np.float32, np.nan), ("less", np.uint8, -1), ("greater_equal", np.int64, 2**70)],
)
def test_scalar_comparison_is_an_operator_with_the_ufuncs_result(name, dtype, other):
    from npdynamo.ops import REGISTRY
    from npdynamo.ops.meta import ArrayMeta

    g = Graph()
    a = g.placeholder("a", ArrayMeta((), np.dtype(dtype), scalar=True))
    g.output(g.call_function(REGISTRY[name], (a, other)))
    gm = GraphModule(g)
    uses_operator = type(other) is not int or abs(other) < 2**63
    assert ("_" + name + "(" not in gm.code) == uses_operator, gm.code
    for value in (dtype(0), dtype(1), dtype(7)):
        (got,) = gm(value)
        expected = getattr(np, name)(value, other)
        assert type(got) is type(expected) and got == expected


def test_comparison_of_arrays_or_complex_scalars_stays_a_ufunc_call():
    from npdynamo.ops import REGISTRY
    from npdynamo.ops.meta import ArrayMeta

    g = Graph()
    x = g.placeholder("x", ArrayMeta((3,), np.dtype(np.float64)))
    z = g.placeholder("z", ArrayMeta((), np.dtype(np.complex128), scalar=True))
    g.output((g.call_function(REGISTRY["greater"], (x, 0.5)),
              g.call_function(REGISTRY["equal"], (z, 1.0))))
    gm = GraphModule(g)
    assert gm.code.count("_greater(") == 1 and gm.code.count("_equal(") == 1, gm.code
