"""The joint graph and the min-cut partitioner: max-flow, the MLP training step's figures,
which ops may be recomputed, multi-output graphs and the ``aot_graphs`` log."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import build_joint, partition, value_and_grad
from npdynamo.autograd.maxflow import INF, FlowNetwork
from npdynamo.autograd.partition import recomputable
from tests.autograd.graphs import captured_graph

NEVER_RECOMPUTED = {"matmul", "dot", "einsum", "tensordot", "outer", "sum", "mean", "max",
                    "min", "prod", "var", "std"}


def test_max_flow_finds_the_minimum_cut():
    net = FlowNetwork()
    s, a, b, c, d, t = (net.add_vertex() for _ in range(6))
    for u, v, cap in [(s, a, 10), (s, c, 10), (a, b, 4), (a, c, 2), (a, d, 8), (c, d, 9),
                      (d, b, 6), (b, t, 10), (d, t, 10)]:
        net.add_edge(u, v, cap)
    assert net.max_flow(s, t) == 19
    side = net.source_side(s)
    assert s in side and t not in side
    net2 = FlowNetwork()
    s2, m, t2 = (net2.add_vertex() for _ in range(3))
    net2.add_edge(s2, m, INF)
    net2.add_edge(m, t2, 7)
    assert net2.max_flow(s2, t2) == 7 and net2.source_side(s2) == {s2, m}


def mlp_loss(params, x, y):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), y].mean()


def mlp_args(batch=64, sizes=(784, 256, 10)):
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal(sizes[:2]) * 0.05, "b1": np.zeros(sizes[1]),
              "w2": rng.standard_normal(sizes[1:]) * 0.05, "b2": np.zeros(sizes[2])}
    return params, rng.standard_normal((batch, sizes[0])), rng.integers(0, sizes[2], batch)


def mlp_partition():
    params, x, y = mlp_args()
    gm, inputs = captured_graph(mlp_loss, (params, x, y))
    flags = [any(v is p for p in params.values()) for v in inputs]
    return partition(build_joint(gm, flags)), inputs, (params, x, y)


def test_mlp_step_saves_less_than_every_forward_value():
    part, inputs, (params, x, y) = mlp_partition()
    assert part.bytes_saved < part.bytes_all_intermediates
    assert part.bytes_saved <= part.bytes_without_recompute
    saved = {s.name: s for s in part.saved}
    # The first layer's pre-activation is kept (relu's mask and h are recomputed from it);
    # w1 is not needed: no gradient is taken with respect to x.
    assert "x" in saved and "params_w1" not in saved
    assert saved["x"].nbytes == x.nbytes
    assert "maximum" in part.recomputed
    out = part.forward(*inputs)
    grads = part.backward(*out[part.num_outputs:], np.ones(()))
    value, expected = value_and_grad(mlp_loss)(params, x, y)
    assert out[0] == pytest.approx(value, rel=1e-12)
    order = [k for v in inputs for k, p in params.items() if v is p]
    for k, g in zip(order, grads):
        np.testing.assert_allclose(g, expected[k], rtol=1e-10, atol=1e-14)


def test_contractions_and_reductions_are_never_recomputed():
    part, _, _ = mlp_partition()
    tangent_names = {p.name for p in part.backward.graph.placeholders} - {
        s.name for s in part.saved}
    for node in part.backward.graph.nodes:
        if node.op == "call_function" and node.name in part.recomputed:
            assert node.target.name not in NEVER_RECOMPUTED, node.name
            assert recomputable(node)
    matmuls = [n for n in part.backward.graph.nodes
               if n.op == "call_function" and n.target.name == "matmul"]
    assert len(matmuls) == 3 and tangent_names == {"tangent_0"}


def test_report_lists_saved_values_and_is_logged(caplog):
    params, x, y = mlp_args(batch=4, sizes=(6, 5, 3))
    gm, inputs = captured_graph(mlp_loss, (params, x, y))
    flags = [any(v is p for p in params.values()) for v in inputs]
    npdynamo.set_logs("aot_graphs")
    try:
        with caplog.at_level(logging.INFO, logger="npdynamo.aot_graphs"):
            part = partition(build_joint(gm, flags))
    finally:
        npdynamo.set_logs()
    text = str(part)
    assert "saved for backward" in text and "x: float64[4, 6] (192 B)" in text
    assert any("def backward(" in r.getMessage() for r in caplog.records)


def test_multi_output_graph_with_integer_output():
    def f(a, b):
        c = np.tanh(a) * b
        return c.sum(), c * 2.0, np.argmax(a)

    a, b = np.array([0.1, -0.4, 0.9]), np.array([1.0, 2.0, -1.0])
    gm, inputs = captured_graph(f, (a, b))
    joint = build_joint(gm, [x is a for x in inputs])
    part = partition(joint)
    assert len(joint.tangent_outputs) == 2
    outs = part.forward(*inputs)
    saved = outs[part.num_outputs:]
    t0, t1 = np.float64(0.5), np.array([1.0, 0.0, 3.0])
    (ga,) = part.backward(*saved, t0, t1)
    np.testing.assert_allclose(ga, (1 - np.tanh(a) ** 2) * b * (t0 + 2.0 * t1))
    joint_out = joint.gm(*inputs, t0, t1)
    np.testing.assert_allclose(joint_out[-1], ga, rtol=1e-14)
    assert part.saved and all(s.dtype == "float64" for s in part.saved)
