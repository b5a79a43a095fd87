"""``capture/autodiff.py``: ``grad``/``value_and_grad`` called inside a compiled function put
the forward and the backward ops in the same graph, with the gradients in the structure and
dtypes the eager tape gives (compared with the plain call, which runs the tape); what this
cannot express is a graph break at the call, which the tape then runs. Training steps and
losses end to end: ``tests/autograd/test_compiled_grads.py`` and ``test_losses.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import grad, value_and_grad
from tests.differential import check_same

BACKENDS = ["eager", "numba"]
RNG = np.random.default_rng(0)
W, X, Y = RNG.random(3), RNG.random((4, 3)), RNG.random(4)


def squared_error(w, x, y):
    return ((x @ w - y) ** 2).mean()


def training_step(w, x, y, lr):
    value, g = value_and_grad(squared_error)(w, x, y)
    return w - lr * g, value


def dict_of_params(params, x):
    def loss(p):
        return (np.tanh(x @ p["w"]) + p["b"]).sum()

    return grad(loss)(params)


def two_argnums(w, x):
    return grad(lambda w, b: (np.sin(x @ w) * b).sum(), argnums=(0, 1))(w, np.ones(4))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (training_step, (W, X, Y, 0.1)),
    (dict_of_params, ({"w": W, "b": np.ones(4)}, X)),
    (two_argnums, (W, X)),
], ids=["training_step", "dict_of_params", "two_argnums"])
def test_forward_and_backward_in_one_graph(fn, args, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=0)
    (graph,) = npdynamo.inspect(compiled).graphs
    assert "matmul" in graph.ops and graph.ops.count("matmul") >= 2  # x @ w and its VJP


def float_parameter(s, x):
    return grad(lambda s, x: (x * s).sum())(s, x)


def loss_that_prints(w, x):
    def loss(w):
        print("in the loss")
        return (x * w).sum()

    return grad(loss)(w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, reason", [
    (float_parameter, (2.0, W), "differentiating with respect to a float"),
    (loss_that_prints, (W, X), "print() does input/output"),
], ids=["float_parameter", "loss_that_prints"])
def test_what_the_graph_cannot_differentiate_breaks_at_the_call(fn, args, reason, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=0, breaks=1)
    (entry,) = npdynamo.inspect(compiled).entries
    assert reason in entry.graph_break.reason
