"""Symbolic sizes never split fusion: a graph captured with ``dynamic=True`` fuses into as many
numba kernels as the same graph captured with static sizes (``fusion.equal_sizes`` names the
sizes broadcasting makes equal alike), and its results stay NumPy's at other sizes."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import numba_backend
from npdynamo.backends.numba.fusion import equal_sizes
from npdynamo.fx.graph import Graph
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbol_table import SymbolTable
from tests.backends.compare import assert_close


def eos(salt, temp, zt, mask, tau):
    """An ocean model's equation of state: polynomials of salinity and temperature (one time
    level of 4-D arrays) and pressure (a column of depths broadcast over the grid); density,
    its derivatives, a vertical cumulative sum and differences between levels."""
    sa, ct = salt[:, :, :, tau], temp[:, :, :, tau]
    p = np.abs(zt)[np.newaxis, np.newaxis, :] * 1e-4
    xs = np.sqrt(0.0248826675584615 * sa + 0.5971840214030754)
    ys = ct * 0.025
    v0 = 1.0769995862e-3 + xs * (-3.1038981976e-4 + xs * (6.6928067038e-4 + xs * (
        -8.5047933937e-4 + xs * 5.8086069943e-4)))
    v1 = ys * (-1.5649734675e-5 + xs * (3.5009599764e-5 + xs * (
        -4.3592678561e-5 + xs * 3.4532461828e-5)))
    v2 = p * (-6.0799143809e-5 + xs * (6.3721016456e-5 + xs * -5.7716232016e-5) + ys * 1.0e-5)
    rho = mask / (v0 + v1 + v2)
    drho_dt = -rho * rho * (v1 / np.maximum(ct, 1e-3) + v2 * 1e-4)
    drho_ds = -rho * rho * (v0 / np.maximum(sa, 1e-3)) * mask
    drho_dp = -rho * rho * v2 / np.maximum(p, 1e-6)
    anomaly = rho - rho.mean(axis=-1)[..., None]
    levels = (rho[:, :, 1:] - rho[:, :, :-1]) * mask[:, :, 1:]
    return (rho, drho_dt, drho_ds, drho_dp, np.cumsum(rho * 9.81, axis=2), levels,
            np.max(np.abs(anomaly)))


def chain(x, y, w):
    a = np.tanh(x * 0.5 + y)
    b = a * a - w
    return np.exp(-b) + x * y


def rows(x, b, c):
    h = x * b + c  # (n, m) * (m,) + (n, 1)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), (x * x).sum(axis=1)


def _ocean(n, rng):
    shape = (n, n + 2, 5, 3)
    return (35 + rng.standard_normal(shape), 10 + rng.standard_normal(shape),
            -np.linspace(10.0, 4000.0, 5), (rng.random(shape[:3]) > 0.2).astype(float), 1)


def _chain(n, rng):
    return (rng.standard_normal((n, 5)), rng.standard_normal((n, 5)), rng.standard_normal((n, 5)))


def _rows(n, rng):
    return (rng.standard_normal((n, 7)), rng.standard_normal(7), rng.standard_normal((n, 1)))


CASES = [(eos, _ocean), (chain, _chain), (rows, _rows)]


def _compiled(fn, dynamic):
    reports = []

    def backend(gm, example_inputs):
        program = numba_backend(gm, example_inputs)
        reports.append(program.report)
        return program

    return npdynamo.compile(fn, backend=backend, dynamic=dynamic), reports


@pytest.mark.parametrize(("fn", "inputs"), CASES, ids=[c[0].__name__ for c in CASES])
def test_dynamic_sizes_fuse_into_the_static_kernel_count(fn, inputs):
    rng = np.random.default_rng(0)
    static, static_reports = _compiled(fn, False)
    dynamic, dynamic_reports = _compiled(fn, True)
    for n in (4, 9, 13):
        args = inputs(n, rng)
        want = fn(*args)
        assert_close(static(*args), want)
        assert_close(dynamic(*args), want)
    assert len(dynamic_reports) == 1, "one graph serves every size"
    (graph_report,) = dynamic_reports
    assert not graph_report.fell_back, graph_report.reason
    assert graph_report.kernels == static_reports[0].kernels
    assert graph_report.groups == static_reports[0].groups


def test_equal_sizes_names_broadcast_partners_after_a_placeholder_symbol():
    table = SymbolTable()
    s0, s1, s2 = table.new(4), table.new(5), table.new(5)
    g = Graph()
    x = g.placeholder("x", ArrayMeta((s0, s1), np.float64))
    y = g.placeholder("y", ArrayMeta((s2,), np.float64))
    s = g.call_function(npdynamo.ops.add, (x, y), {})
    s.meta["val"] = ArrayMeta((s0, s1), np.float64)
    g.output((s,))
    rename = equal_sizes(g)
    # named by x's size, the first a placeholder gives (the program reads it there)
    assert set(rename) == {"s2"} and rename["s2"] is s1
