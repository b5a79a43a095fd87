"""End to end: graphs built by hand from ``npdynamo.ops`` compute exactly what NumPy computes.

GELU and the MLP come from ``examples/demo.py`` (the demo is their single definition); softmax,
layernorm and an MSE loss are built here. Each runs through ``GraphModule``, the eager backend
and the ``Interpreter``; results must be bitwise NumPy's, with the same dtypes and types.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from npdynamo import fx, ops
from npdynamo.backends import lookup_backend
from npdynamo.fx.passes import propagate_shapes
from npdynamo.ops.meta import ArrayMeta

_DEMO_PATH = Path(__file__).resolve().parents[2] / "examples" / "demo.py"
_spec = importlib.util.spec_from_file_location("npdynamo_examples_demo", _DEMO_PATH)
demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(demo)


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def softmax_graph() -> fx.Graph:
    g = fx.Graph()
    x = g.placeholder("x")
    m = g.call_function(ops.max, (x,), {"axis": -1, "keepdims": True})
    e = g.call_function(ops.exp, (g.call_function(ops.subtract, (x, m)),))
    s = g.call_function(ops.sum, (e,), {"axis": -1, "keepdims": True})
    g.output(g.call_function(ops.divide, (e, s)))
    return g


def layernorm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    return xc / np.sqrt(var + 1e-5) * gamma + beta


def layernorm_graph() -> fx.Graph:
    g = fx.Graph()
    x, gamma, beta = g.placeholder("x"), g.placeholder("gamma"), g.placeholder("beta")
    mu = g.call_function(ops.mean, (x,), {"axis": -1, "keepdims": True})
    xc = g.call_function(ops.subtract, (x, mu))
    sq = g.call_function(ops.multiply, (xc, xc))
    var = g.call_function(ops.mean, (sq,), {"axis": -1, "keepdims": True})
    std = g.call_function(ops.sqrt, (g.call_function(ops.add, (var, 1e-5)),))
    scaled = g.call_function(ops.multiply, (g.call_function(ops.divide, (xc, std)), gamma))
    g.output(g.call_function(ops.add, (scaled, beta)))
    return g


def mse(pred, target):
    return np.mean((pred - target) ** 2)


def mse_graph() -> fx.Graph:
    """A full reduction: NumPy returns a NumPy scalar, not a 0-d array."""
    g = fx.Graph()
    pred, target = g.placeholder("pred"), g.placeholder("target")
    sq = g.call_function(ops.square, (g.call_function(ops.subtract, (pred, target)),))
    g.output(g.call_function(ops.mean, (sq,)))
    return g


def _inputs(name, dtype):
    rng = np.random.default_rng(7)
    draw = lambda *shape: (rng.standard_normal(shape) * 3).astype(dtype)
    if name == "gelu":
        return [draw(5, 7)]
    if name == "softmax":
        return [draw(6, 10)]
    if name == "layernorm":
        return [draw(4, 9), draw(9), draw(9)]
    if name == "mse":
        return [draw(8, 3), draw(8, 3)]
    return [draw(5, 8), draw(8, 16), draw(16), draw(16, 4), draw(4)]


PROGRAMS = {
    "gelu": (demo.gelu, demo.gelu_graph),
    "softmax": (softmax, softmax_graph),
    "layernorm": (layernorm, layernorm_graph),
    "mlp": (demo.mlp, demo.mlp_graph),
    "mse": (mse, mse_graph),
}


def _bitwise_same(got, want):
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_matches_numpy_bitwise(name, dtype):
    numpy_fn, build = PROGRAMS[name]
    inputs = _inputs(name, dtype)
    want = numpy_fn(*inputs)
    graph = build()
    graph.lint()
    gm = fx.GraphModule(graph)
    compile(gm.code, "<check>", "exec")

    (got,) = gm(*inputs)
    _bitwise_same(got, want)
    compiled = lookup_backend("eager")(gm, inputs)
    (got_eager,) = compiled(*inputs)
    _bitwise_same(got_eager, want)
    (got_interp,) = fx.Interpreter(gm).run(*inputs)
    _bitwise_same(got_interp, want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_propagated_metas_match_real_values_and_tabulate(name):
    numpy_fn, build = PROGRAMS[name]
    inputs = _inputs(name, np.float32)
    graph = build()
    propagate_shapes(graph, [ArrayMeta.of(v) for v in inputs])  # rules only, no data

    # Every node's meta is what running the graph really produces.
    class Recorder(fx.Interpreter):
        def call_function(self, node, target, args, kwargs):
            value = super().call_function(node, target, args, kwargs)
            assert node.meta["val"] == ArrayMeta.of(value), node.name
            return value

    (out,) = Recorder(graph).run(*inputs)
    assert graph.output_node.meta["val"] == (ArrayMeta.of(out),)

    table = fx.GraphModule(graph).print_tabular()
    rows = table.splitlines()[2:]
    assert [row.split()[1] for row in rows] == [n.name for n in graph.nodes]
    for row, node in zip(rows, graph.nodes, strict=True):
        meta = node.meta["val"]
        if isinstance(meta, tuple):
            meta = meta[0]
        shape = "(" + ", ".join(map(str, meta.shape)) + ("," if meta.ndim == 1 else "") + ")"
        assert shape in row and str(meta.dtype) in row, row


def test_passes_leave_handbuilt_graphs_alone_and_results_unchanged():
    for name, (_, build) in PROGRAMS.items():
        graph = build()
        assert fx.passes.common_subexpression_elimination(graph) == 0, name
        assert fx.passes.dead_code_elimination(graph) == 0, name
    # A duplicated subexpression is merged without changing a bit of the result.
    graph = softmax_graph()
    x = graph.placeholders[0]
    with graph.inserting_before(graph.output_node):
        dup = graph.call_function(ops.max, (x,), {"axis": -1, "keepdims": True})
        graph.call_function(ops.exp, (dup,))  # dead
    assert fx.passes.common_subexpression_elimination(graph) == 1
    assert fx.passes.dead_code_elimination(graph) == 1
    inputs = _inputs("softmax", np.float64)
    _bitwise_same(fx.GraphModule(graph)(*inputs)[0], softmax(*inputs))


def test_demo_runs_and_reports_zero_difference(capsys):
    demo.main()
    out = capsys.readouterr().out
    assert out.count("max |graph - numpy| = 0.0") == 2
    assert "def forward(x, w1, b1, w2, b2):" in out
    assert "_tanh(" in out
