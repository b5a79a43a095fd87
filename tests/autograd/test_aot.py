"""AOT backends: compiled graphs as single differentiable steps of an enclosing tape."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import aot_backend, aot_eager, grad, value_and_grad
from npdynamo.backends import list_backends
from tests.autograd.graphs import captured_graph


def layer(w, x):
    return np.tanh(x @ w), np.argmax(x, axis=1)


def head(v, h):
    return (np.sum((h @ v) ** 2),)


W = np.random.default_rng(0).uniform(-1, 1, (3, 4))
V = np.random.default_rng(1).uniform(-1, 1, (4,))
X = np.random.default_rng(2).uniform(-1, 1, (5, 3))


def compiled(fn, args, backend=aot_eager):
    gm, inputs = captured_graph(fn, args)
    positions = [next(i for i, a in enumerate(args) if a is x) for x in inputs]
    run = backend(gm, inputs).report.function  # the AOTFunction
    return (lambda *a: run(*(a[i] for i in positions))), run


def plain_loss(w, v, x):
    h, _ = layer(w, x)
    h = np.sin(h) * 2.0  # Python between the graphs
    return head(v, h)[0]


def test_names_are_registered():
    assert {"aot_eager", "aot_numba"} <= set(list_backends())


def test_plain_arrays_run_the_forward_graph():
    f, run = compiled(layer, (W, X))
    h, idx = f(W, X)
    np.testing.assert_array_equal(h, np.tanh(X @ W))
    np.testing.assert_array_equal(idx, np.argmax(X, axis=1))
    assert run.partitions == []


def test_graphs_chained_by_the_tape_match_the_plain_tape():
    f1, run1 = compiled(layer, (W, X))
    h0 = np.sin(np.tanh(X @ W)) * 2.0
    f2, run2 = compiled(head, (V, h0))

    def loss(w, v, x):
        h, idx = f1(w, x)
        assert idx.dtype == np.intp  # integer outputs come back as plain arrays
        h = np.sin(h) * 2.0
        return f2(v, h)[0]

    value, (gw, gv) = value_and_grad(loss, argnums=(0, 1))(W, V, X)
    expected_value, (ew, ev) = value_and_grad(plain_loss, argnums=(0, 1))(W, V, X)
    assert value == pytest.approx(expected_value, rel=1e-14)
    np.testing.assert_allclose(gw, ew, rtol=1e-12)
    np.testing.assert_allclose(gv, ev, rtol=1e-12)
    assert len(run1.partitions) == 1 and len(run2.partitions) == 1
    # Another call reuses the compiled pair; differentiating other inputs builds a new one.
    grad(loss, argnums=(0, 1))(W, V, X)
    assert len(run1.partitions) == 1
    gx = grad(loss, argnums=2)(W, V, X)
    np.testing.assert_allclose(gx, grad(plain_loss, argnums=2)(W, V, X), rtol=1e-12)
    assert len(run1.partitions) == 2


def test_unused_output_cotangent_is_zero_and_float32_is_kept():
    f1, _ = compiled(layer, (W.astype(np.float32), X.astype(np.float32)))
    g = grad(lambda w: np.sum(f1(w, X.astype(np.float32))[0][0]))(W.astype(np.float32))
    assert g.dtype == np.float32
    expected = grad(lambda w: np.sum(np.tanh(X.astype(np.float32) @ w)[0]))(
        W.astype(np.float32))
    np.testing.assert_allclose(g, expected, rtol=1e-6)


def test_aot_backend_compiles_both_halves_with_the_inner_backend():
    calls = []

    def inner(gm, example_inputs):
        calls.append(gm.name)
        return gm.forward

    f, run = compiled(head, (V, X @ W), backend=aot_backend(inner))
    grad(lambda v: f(v, X @ W)[0])(V)
    assert calls == ["forward", "forward", "backward"]  # plain, partitioned fwd, bwd
    assert "saved for backward" in run.report()


def test_report_without_gradients_partitions_every_float_input():
    _, run = compiled(head, (V, X @ W))
    text = run.report()
    assert "AOT partition" in text and run.partitions == []


def test_compile_with_an_aot_backend_runs_plain_calls():
    f = npdynamo.compile(lambda w, x: np.tanh(x @ w).sum(), backend="aot_eager")
    assert f(W, X) == np.tanh(X @ W).sum()
    g = npdynamo.compile(lambda w, x: np.tanh(x @ w).sum(), backend="aot_numba")
    assert g(W, X) == pytest.approx(np.tanh(X @ W).sum(), rel=1e-12)
