"""Patterns of the external numpy-benchmarks kernels (``benchmarks/external.py``) that used to
break or fall back to Python: each is now one graph with no break, plain vs compiled bitwise on
the eager backend and at the documented tolerances on numba (``check_one_graph``)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.backends.compare import check_one_graph
from tests.differential import check_same

rng = np.random.default_rng(14)


def check_kernel(fn, args: tuple) -> None:
    """One graph, no break, and nothing left to Python (``fullgraph`` alone does not see a
    capture that failed inside and ran the frame plainly), then plain vs compiled."""
    report = npdynamo.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    assert "ran in Python" not in str(report), str(report)
    check_one_graph(fn, args)


def inplace_cast_into_view(ru, rv):
    # grayscott: float64 updates written in place into float32 views (NumPy casts same_kind)
    U = np.zeros((6, 6), dtype=np.float32)
    u = U[1:-1, 1:-1]
    u[:] = 1.0
    u += 0.15 * ru
    u += 0.5 * u * rv - 0.25
    return U


def test_inplace_update_cast_to_the_target_dtype_is_one_graph():
    check_kernel(inplace_cast_into_view, (rng.random((4, 4)), rng.random((4, 4))))


def test_inplace_update_that_numpy_refuses_raises_the_same():
    def f(x, y):
        x += y  # float -> int is not same_kind: NumPy's UFuncTypeError
        return x

    check_same(f, np.arange(3), np.ones(3))
    with pytest.raises(TypeError, match="same_kind"):
        npdynamo.compile(f)(np.arange(3), np.ones(3))
