"""Random graphs (elementwise chains and reductions with broadcasting, mixed dtypes, nan/inf/-0.0
inputs) run by the numba backend and by the eager backend: same types, dtypes and shapes,
integer and boolean values equal, float values within the documented tolerances."""

from __future__ import annotations

import copy
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings

from npdynamo.backends.numba import NumbaFallbackWarning, numba_backend
from npdynamo.fx import GraphModule
from tests.backends.compare import assert_close
from tests.backends.random_graphs import random_graphs

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def _check(case) -> None:
    gm = GraphModule(case.graph)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)  # a fallback is a failure here
        want = gm.forward(*copy.deepcopy(case.inputs))
        compiled = numba_backend(gm, copy.deepcopy(case.inputs))
        assert not compiled.report.fell_back, compiled.report.reason
        for _ in range(2):
            args = copy.deepcopy(case.inputs)
            got = compiled(*args)
            assert_close(got, want, rtol=case.rtol)
            for a, b in zip(args, case.inputs):
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")  # inputs unchanged
        for i, node in enumerate(case.graph.output_node.args[0]):
            if node.op == "placeholder":
                assert got[i] is args[case.graph.placeholders.index(node)]


@settings(max_examples=30, **SETTINGS)
@given(random_graphs())
def test_random_graphs_serial(case):
    _check(case)


# the fixture applies to every example alike, which is what the health check warns about
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(random_graphs(max_steps=5, transcendental=False))
def test_random_graphs_parallel(monkeypatch_parallel, case):
    _check(case)
