"""Time loops over an array and views of it (``u = U[1:-1, 1:-1]`` before
``for t in range(T): L = U[:-2, 1:-1] + ...; u += L``, as in a Gray-Scott or heat stencil on a
padded grid): one fori_loop where the body sees the view made again from the array it views, so
writes through one are read through the other, as in NumPy. Differential: plain vs compiled on
copies (bitwise on eager, within tolerance on numba; arguments' state after)."""

# ruff: noqa: B007 - time loops name their unused step variable, as users write them

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo as nd
from tests.backends.compare import assert_close
from tests.capture.test_for_formation import in_one_graph, quiet_explain
from tests.differential import check_same

RNG = np.random.default_rng(29)


def padded_stencil(a, T):
    n = a.shape[0]
    U = np.zeros((n + 2, n + 2))
    u = U[1:-1, 1:-1]
    u[:] = a
    for t in range(T):
        L = U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:] - 4 * u
        u += 0.1 * L
    return U


def two_fields(a, b, T):
    n = a.shape[0]
    U = np.zeros((n + 2, n + 2), dtype=np.float32)
    V = np.zeros((n + 2, n + 2), dtype=np.float32)
    u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
    u[:] = 1.0
    u += 0.15 * a
    v += 0.15 * b
    for i in range(T):
        Lu = U[0:-2, 1:-1] + U[1:-1, 0:-2] - 4 * U[1:-1, 1:-1] + U[1:-1, 2:] + U[2:, 1:-1]
        Lv = V[0:-2, 1:-1] + V[1:-1, 0:-2] - 4 * V[1:-1, 1:-1] + V[1:-1, 2:] + V[2:, 1:-1]
        uvv = u * v * v
        u += 0.16 * Lu - uvv + 0.04 * (1 - u)
        v += 0.08 * Lv + uvv - (0.04 + 0.06) * v
    return V, u


def view_of_a_view(x, T):
    w = x[1:]
    v = w[::2]                 # a view of a view of the argument
    for t in range(T):
        v *= 0.5
        x[0] += v[0]
    return x, v


def view_from_argument(x, T):
    v = x[1:]
    for k in range(T):
        x[0] += v[0]           # v shares x's memory
    return x, v


def view_written_root_read(x, T):
    head = x[:2]
    for k in range(T):
        head += x[2:4]         # written through the view, read through the array
    return x


def nested_loops(a, T, S):
    U = np.zeros(a.shape[0] + 2)
    u = U[1:-1]
    u[:] = a
    for t in range(T):
        for s in range(S):     # the inner body makes u again from the outer body's U
            u += 0.1 * (U[:-2] - 2 * u + U[2:])
        U[0] = U[-1]
    return U, u


def view_made_in_the_outer_body(a, T, S):
    U = a.copy()
    for t in range(T):
        w = U[::2]
        for s in range(S):
            w *= 0.99
            U[1] += w[0]
    return U


def transposed(A, T):
    B = A.copy()
    Bt = B.T                   # a view by transpose, read only
    for t in range(T):
        B[0] += Bt[:, 1]
    return B, Bt


def root_rebound(x, T):
    v = x[1:]
    for k in range(T):
        v += 1.0
        x = x * 2.0            # v stays a view of the first x: the loop is not formed
    return x, v


def view_rebound(x, T):
    v = x[1:]
    for k in range(T):
        v = x[:-1]             # rebinding the view: not formed
        x[0] += v[0]
    return x, v


FORMED = [
    (padded_stencil, lambda T: (RNG.random((6, 6)), T)),
    (two_fields, lambda T: (RNG.random((7, 7)), RNG.random((7, 7)), T)),
    (view_of_a_view, lambda T: (RNG.random(9), T)),
    (view_from_argument, lambda T: (RNG.random(4), T)),
    (view_written_root_read, lambda T: (RNG.random(5), T)),
    (transposed, lambda T: (RNG.random((3, 3)), T)),
]
IDS = [f.__name__ for f, _ in FORMED]


@pytest.mark.parametrize("T", [20, 300])
@pytest.mark.parametrize("fn, make", FORMED, ids=IDS)
def test_views_of_carried_arrays_form_one_loop_bitwise_on_eager(fn, make, T):
    in_one_graph(fn, *make(T))


@pytest.mark.parametrize("fn, make", FORMED, ids=IDS)
def test_the_graph_does_not_grow_with_the_trip_count(fn, make):
    small, large = quiet_explain(fn, *make(20)), quiet_explain(fn, *make(400))
    assert (large.graph_count, large.graph_break_count) == (1, 0), str(large)
    assert large.ops_per_graph == small.ops_per_graph


@pytest.mark.parametrize("fn, make", FORMED, ids=IDS)
def test_numba_within_tolerance(fn, make):
    compiled = nd.compile(fn, backend="numba")
    for T in (20, 31):
        args = make(T)
        plain = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        comp = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to the eager backend
            got = compiled(*comp)
        assert_close(got, fn(*plain))
        assert_close(comp, plain, "arguments after the call")


@pytest.mark.parametrize("fn", [root_rebound, view_rebound], ids=lambda f: f.__name__)
def test_a_rebound_view_or_root_is_not_formed_and_exact(fn):
    check_same(fn, RNG.random(5), 20, graphs=1, breaks=0)
    report = quiet_explain(fn, RNG.random(5), 20)
    assert not any("in the graph as one fori_loop" in line for line in report.loops), \
        report.loops


@pytest.mark.parametrize("fn, make", [
    (nested_loops, lambda: (RNG.random(6), 20, 17)),
    (view_made_in_the_outer_body, lambda: (RNG.random(9), 20, 18)),
], ids=["nested_loops", "view_made_in_the_outer_body"])
def test_views_in_nested_loops(fn, make):
    in_one_graph(fn, *make(), loops=2)
