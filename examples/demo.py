"""A first look at npdynamo: a NumPy function captured into a graph, then the graph IR by hand.

Part 1 compiles an ordinary NumPy function with ``@npdynamo.compile`` and shows what the capture
built: the graph of canonical ops, its generated Python, the guards a later call must pass, and
that the result is exactly plain NumPy's. Part 2 builds two such graphs by hand to show the middle
of the pipeline: shape/dtype propagation, the generated function, the same check.

Run it with ``python examples/demo.py`` (``make demo`` runs ``examples/train_mlp.py``).
"""

from __future__ import annotations

import numpy as np

import npdynamo
from npdynamo import fx, ops
from npdynamo.fx.passes import propagate_shapes


def layernorm(x, gamma, beta, eps=1e-5):
    """Layer normalisation over the last axis, written the way a NumPy user writes it."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def capture_demo() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    gamma, beta = np.ones(8, np.float32), np.zeros(8, np.float32)
    compiled = npdynamo.compile(layernorm)
    result = compiled(x, gamma, beta)
    (entry,) = npdynamo.inspect(compiled).entries
    print("=== captured: layernorm ===")
    entry.graph.graph_module.print_tabular()
    print("\ngenerated code:\n" + entry.graph.code)
    print("guards:\n  " + "\n  ".join(entry.guards))
    same = np.array_equal(result, layernorm(x, gamma, beta))
    print(f"\nresult {result.dtype}{list(result.shape)}, bitwise equal to plain NumPy: {same}")
    compiled(x * 2, gamma, beta)  # same shapes and dtypes: served by the same entry
    print(f"entries after a second call with new values: {len(npdynamo.inspect(compiled).entries)}")
    compiled(x[:2], gamma, beta)  # a new shape: a new entry, and the reason is recorded
    report = npdynamo.inspect(compiled)
    print(f"entries after a call with a new shape: {len(report.entries)}")
    print(f"why: {report.recompile_reasons[-1]}")

def gelu(x):
    """GELU, tanh approximation, in plain NumPy."""
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def gelu_graph() -> fx.Graph:
    """``gelu`` as a graph: one node per NumPy operation, in the order Python evaluates them."""
    g = fx.Graph()
    x = g.placeholder("x")
    half_x = g.call_function(ops.multiply, (0.5, x))
    # np.sqrt of a Python float is a float64 NumPy scalar: it promotes a float32 x to float64,
    # and the graph keeps that NumPy rule (the propagated dtypes below show it).
    c = g.call_function(ops.sqrt, (2 / np.pi,))
    cube = g.call_function(ops.power, (x, 3))
    inner = g.call_function(ops.add, (x, g.call_function(ops.multiply, (0.044715, cube))))
    t = g.call_function(ops.tanh, (g.call_function(ops.multiply, (c, inner)),))
    g.output(g.call_function(ops.multiply, (half_x, g.call_function(ops.add, (1, t)))))
    return g


def mlp(x, w1, b1, w2, b2):
    """A two-layer perceptron's forward pass: linear, relu, linear."""
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


def mlp_graph() -> fx.Graph:
    """``mlp`` as a graph."""
    g = fx.Graph()
    x, w1, b1, w2, b2 = (g.placeholder(name) for name in ("x", "w1", "b1", "w2", "b2"))
    h = g.call_function(ops.add, (g.call_function(ops.matmul, (x, w1)), b1))
    relu = g.call_function(ops.maximum, (h, 0))
    g.output(g.call_function(ops.add, (g.call_function(ops.matmul, (relu, w2)), b2)))
    return g


def main() -> None:
    capture_demo()
    print("\n\n######## the graph IR, built by hand ########")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    params = [rng.standard_normal(s).astype(np.float32) for s in ((8, 16), (16,), (16, 3), (3,))]
    programs = [("gelu", gelu, gelu_graph(), [x]), ("mlp", mlp, mlp_graph(), [x, *params])]

    for name, numpy_fn, graph, inputs in programs:
        print(f"\n=== {name} ===")
        propagate_shapes(graph, inputs)  # fills node.meta["val"] with shapes and dtypes
        print(graph, end="\n\n")
        gm = fx.GraphModule(graph)
        gm.print_tabular()
        print("\ngenerated code:\n" + gm.code)
        (result,) = gm(*inputs)
        expected = numpy_fn(*inputs)
        print(
            f"result {result.dtype}{list(result.shape)}, "
            f"max |graph - numpy| = {np.max(np.abs(result - expected))}"
        )


if __name__ == "__main__":
    main()
