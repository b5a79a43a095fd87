"""A first look at npdynamo's graph IR: two NumPy programs written out as fx graphs by hand.

Capturing a function builds such graphs automatically; here we build them ourselves to see the
middle of the pipeline: a graph of canonical ops, shape/dtype propagation, the generated Python
function, and a check that it computes exactly what plain NumPy computes.

Run it with ``make demo`` (or ``python examples/demo.py``).
"""

from __future__ import annotations

import numpy as np

from npdynamo import fx, ops
from npdynamo.fx.passes import propagate_shapes


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
