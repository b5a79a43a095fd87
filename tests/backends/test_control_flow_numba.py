"""cond/while_loop/fori_loop on the numba backend: results within tolerance of plain NumPy, and
every loop body and branch compiled into its own fused kernels (shown by the report)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo as nd
from tests.backends.compare import assert_close
from tests.capture import control_flow_programs as P
from tests.capture.test_control_flow import CASES, RNG, A, B


@pytest.mark.parametrize("name", sorted(CASES))
def test_numba_matches_plain(name):
    fn, args = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # no fallback to eager
        compiled = nd.compile(fn, backend="numba")
        for _ in range(2):
            assert_close(compiled(*args), fn(*args))


def test_stencil_long_and_short_trip_counts():
    compiled = nd.compile(P.stencil_1d, backend="numba")
    u = np.sin(np.linspace(0, 3, 64))
    for T in (20, 2000, 5):
        assert_close(compiled(u, T), P.stencil_1d(u, T))


def test_the_report_shows_each_subgraph_compiled():
    report = nd.explain(P.jacobi, backend="numba")(A, B, 1e-10)
    text = report.verbose()
    assert "subgraph while_loop_cond_0: numba backend: 1 kernel(s)" in text
    assert "subgraph while_loop_body_1: numba backend: 1 kernel(s)" in text
    assert "kernel (serial): subtract, divide, subtract, absolute, max" in text


def test_nested_subgraphs_are_compiled_too():
    report = nd.explain(P.nested, backend="numba")(RNG.standard_normal(4) * 10, 0, 5)
    text = report.verbose()
    for name in ("fori_loop_body_0", "while_loop_body_2", "cond_true_3"):
        assert f"subgraph {name}: numba backend" in text, text
