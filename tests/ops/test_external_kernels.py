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


def cma_step(E, wxy, mu, R):
    # cma_pt's loop body: np.conj, and ** between NumPy scalars (Python's scalar math)
    Xest = np.sum(E * np.conj(wxy[0]))
    err = (R - abs(Xest) ** 2) * Xest
    wxy[0] += mu * np.conjugate(err) * E
    return err, wxy, np.float32(1.5) ** np.float32(0.3), np.sum(E.real) ** -1.5


def test_conjugate_and_scalar_power_are_one_graph():
    E = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    wxy = rng.standard_normal((2, 2, 5)) + 0j
    check_kernel(cma_step, (E, wxy, 1e-3, 1.0))


@pytest.mark.parametrize("base", [np.float64(0.7), np.float32(-1.3), np.complex128(1 + 2j),
                                  np.float64(0.0)])
@pytest.mark.parametrize("exponent", [2, 0.5, -3, np.float64(1 / 3), np.float16(2)])
def test_scalar_power_is_pythons_scalar_math(base, exponent):
    def f(x, y):
        return (x * 1) ** y  # a graph scalar ** a Python or NumPy scalar

    with np.errstate(all="ignore"):
        check_same(f, base, exponent, compiled=npdynamo.compile(f, fullgraph=True))


def test_scalar_power_of_integers_is_left_to_python():
    def f(x):
        return np.sum(x) ** 3

    report = npdynamo.explain(f)(np.arange(4))
    assert report.graph_break_count == 1 and "integer NumPy scalars" in str(report)
    check_same(f, np.arange(4))


def test_conjugate_of_booleans_and_integers_matches_numpy():
    def f(b, i):
        return np.conj(b), np.conjugate(i * 2)

    check_kernel(f, (np.array([True, False]), np.arange(3, dtype=np.int16)))
