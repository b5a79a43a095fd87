"""Training steps export: a function calling value_and_grad is one joint forward/backward
graph; its gradients match grad's, and the step (which writes the parameters) runs the same
after save/load, in ONNX Runtime and as a NumPy-only module."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import npdynamo
from npdynamo import Dim
from tests.export.workloads import assert_close


def loss(params, x, y):
    pred = np.tanh(x @ params["w"] + params["b"])
    return ((pred - y) ** 2).mean()


def step(params, x, y):
    value, g = npdynamo.value_and_grad(loss)(params, x, y)
    params["w"] -= 0.1 * g["w"]
    params["b"] -= 0.1 * g["b"]
    return value


def gradients(params, x, y):
    return npdynamo.grad(loss)(params, x, y)


DYN = {"x": {0: Dim("batch")}, "y": {0: Dim("batch")}}


def _data(n, seed):
    r = np.random.default_rng(seed)
    params = {"w": r.standard_normal((4, 3)), "b": r.standard_normal(3) * 0.1}
    return params, r.standard_normal((n, 4)), r.standard_normal((n, 3))


def _copy(params):
    return {k: v.copy() for k, v in params.items()}


@pytest.fixture(scope="module")
def programs():
    params, x, y = _data(8, 0)
    return (npdynamo.export(step, params, x, y, dynamic_shapes=DYN),
            npdynamo.export(gradients, params, x, y, dynamic_shapes=DYN))


def test_gradients_match_grad_and_are_one_graph(programs):
    _step, grads = programs
    for n in (3, 11):
        params, x, y = _data(n, n)
        got = grads(params, x, y)
        expected = npdynamo.grad(loss)(params, x, y)
        assert sorted(got) == ["b", "w"]
        for k in expected:
            np.testing.assert_allclose(got[k], expected[k], rtol=1e-12, atol=1e-15)
    ops = [n.target.name for n in grads.graph.nodes if n.op == "call_function"]
    assert "tanh" in ops and "matmul" in ops and ops.count("matmul") >= 2  # forward + backward


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_step_writes_the_parameters_as_python_does(programs, tmp_path, backend):
    ep = npdynamo.load(_saved(programs[0], tmp_path))
    for n in (5, 13):
        params, x, y = _data(n, n)
        mine, plain = _copy(params), _copy(params)
        assert_close(step(plain, x, y), ep(mine, x, y, backend=backend), f64=1e-9)
        for k in plain:
            assert_close(plain[k], mine[k], f64=1e-9)


def _saved(ep, tmp_path):
    path = tmp_path / "step.npdx"
    ep.save(path)
    return path


def test_step_in_onnx_runtime_and_numpy_only(programs, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ep = programs[0]
    session = ort.InferenceSession(ep.to_onnx().SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    ep.to_python(tmp_path / "train_step.py")
    spec = importlib.util.spec_from_file_location("train_step", tmp_path / "train_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    params, x, y = _data(9, 3)
    plain = _copy(params)
    expected = step(plain, x, y)
    feeds = {"params_w": params["w"], "params_b": params["b"], "x": x, "y": y}
    assert sorted(i.name for i in session.get_inputs()) == sorted(feeds)
    value, new_w, new_b = session.run(None, feeds)  # returned value, then the written arrays
    assert_close(np.asarray(expected), value)
    assert_close(plain["w"], new_w)
    assert_close(plain["b"], new_b)
    mine = _copy(params)
    assert module.step(mine, x, y) == expected
    for k in plain:
        assert np.array_equal(mine[k], plain[k])
