"""Every float ufunc has kernel code: one kernel for a long elementwise graph whatever functions it
calls (log, sin, arctan2, ...), results at the backend's tolerances; and graphs mixing a
transcendental with a reduction of the same input compile (a tanh read only after the sum was
once stored to its buffer without being computed: numba's NotDefinedError, then eager)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo import ops
from npdynamo.backends.numba import NumbaFallbackWarning, numba_backend
from npdynamo.backends.numba.ufunc_table import LIBM_OPS
from npdynamo.fx import Graph, GraphModule
from npdynamo.ops.meta import ArrayMeta
from tests.backends.compare import assert_close


def _one_op_graph(name: str, dtype: np.dtype) -> tuple[GraphModule, int]:
    op = ops.lookup(name)
    graph = Graph()
    meta = ArrayMeta((3, 50), dtype)
    nin = getattr(np, name).nin
    inputs = [graph.placeholder(f"x{i}", meta) for i in range(nin)]
    node = graph.call_function(op, tuple(inputs))
    node.meta["val"] = op.infer(*([meta] * nin))
    # a second op in the same kernel, so the ufunc is computed inside a fused loop
    twice = graph.call_function(ops.lookup("add"), (node, node))
    twice.meta["val"] = node.meta["val"]
    graph.output((twice,))
    return GraphModule(graph), nin


def _inputs(nin: int, dtype: np.dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 1e-30, 88.0, -700.0]
    out = []
    for _ in range(nin):
        x = np.concatenate([rng.uniform(-4, 4, 150 - len(specials)), specials])
        out.append(rng.permutation(x).reshape(3, 50).astype(dtype))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["log", *LIBM_OPS, "signbit"])
def test_float_ufunc_is_kernel_code(name, dtype):
    dtype = np.dtype(dtype)
    if name == "float_power" and dtype == np.float32:
        pytest.skip("float_power has only float64 loops (float32 inputs convert: a NumPy call)")
    gm, nin = _one_op_graph(name, dtype)
    args = _inputs(nin, dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        want = gm.forward(*[a.copy() for a in args])
        compiled = numba_backend(gm, [a.copy() for a in args])
        report = compiled.report
        assert not report.fell_back, report.reason
        assert report.kernels == 1 and not report.not_fused, str(report)
        got = compiled(*[a.copy() for a in args])
    # libm within 3 ulps of NumPy's SIMD loops (log: the approximation's MAX_ULPS)
    assert_close(got, want, rtol=1e-6 if dtype == np.float32 else 2e-15)


def _state_equation(t, s, p):
    """An equation-of-state-like polynomial (a sea-water density's shape: powers of
    temperature, salinity and pressure, a square root and a log) over three inputs."""
    sq = np.sqrt(s + 1.0)
    lg = np.log(p + 10.0)
    rho = 999.8 + t * (0.068 + t * (-0.0091 + t * (1.0e-4 + t * (-1.1e-6 + t * 6.5e-9))))
    rho = rho + s * (0.82 + t * (-0.0041 + t * (7.6e-5 + t * (-8.3e-7 + t * 5.4e-9))))
    rho = rho + s * sq * (-0.0057 + t * (1.0e-4 - t * 1.6e-6)) + 4.8e-4 * s * s
    k = 19652.2 + t * (148.4 + t * (-2.3 + t * (0.013 - t * 5.2e-5))) + lg * (3.24 - t * 0.01)
    k = k + s * (54.7 + t * (-0.6 + t * (0.011 - t * 6.2e-5))) + s * sq * (0.079 + lg * 1e-3)
    return rho / (1.0 - p / k)


def test_a_long_elementwise_graph_with_log_is_one_kernel():
    rng = np.random.default_rng(0)
    t, s, p = (rng.uniform(0, 30, (40, 60)) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        out = npdynamo.explain(_state_equation, backend="numba")(t, s, p)
    (report,) = out.backend_reports
    assert not report.fell_back and report.kernels == 1 and not report.not_fused, str(report)
    compiled = npdynamo.compile(_state_equation, backend="numba")
    for _ in range(2):
        assert_close(compiled(t, s, p), _state_equation(t, s, p))


@pytest.mark.parametrize("fn", ["tanh", "exp", "log", "sin"])
@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
@pytest.mark.parametrize("shape", [(50,), (6, 70), (3000,)], ids=["small", "rows", "blocked"])
def test_transcendental_then_a_reduction_of_its_input(fn, reduce, shape):
    """``np.tanh(x) * 2 + x.sum()``: the tanh is computed after the reduction's loop."""
    def f(x):
        return getattr(np, fn)(x) * 2 + getattr(x, reduce)()

    x = np.random.default_rng(1).uniform(0.1, 2.0, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        out = npdynamo.explain(f, backend="numba")(x)
        assert not out.backend_reports[0].fell_back, out.backend_reports[0].reason
        compiled = npdynamo.compile(f, backend="numba")
        for _ in range(2):
            assert_close(compiled(x), f(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("exponent", [6, -3, 1.5, 0.3, -0.5, 7.0])
def test_float_power_by_a_constant_is_kernel_code(exponent, dtype):
    def f(x):
        return (x + 0.0) ** exponent * 2

    x = np.concatenate([np.random.default_rng(2).uniform(0.01, 5, 200),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, -2.0, 1.0]]).astype(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error", NumbaFallbackWarning)
        out = npdynamo.explain(f, backend="numba")(x)
        (report,) = out.backend_reports
        assert report.kernels == 1 and not report.not_fused, str(report)
        got = npdynamo.compile(f, backend="numba")(x)
        assert_close(got, f(x), rtol=1e-6 if dtype == np.float32 else 2e-15)
