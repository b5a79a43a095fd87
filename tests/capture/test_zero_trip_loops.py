"""Nested loops whose inner range is bounded by the outer index and empty for some of it
(``for i in range(n): for j in range(i):``, LU by Doolittle, Gram-Schmidt): a ``fori_loop``
inside a ``fori_loop`` that runs no iteration there, instead of a body unrolled up to the op
cap. Differential: bitwise on eager, within tolerance on numba, arguments' state; ``explain``
shows one graph, no break, and every loop formed; the graph does not grow with the trip count."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from tests.capture import for_loop_programs as F
from tests.capture import triangular_programs as P
from tests.capture.test_for_formation import in_one_graph, quiet_explain
from tests.capture.test_triangular_loops import numba_matches
from tests.differential import CountingBackend, check_same

RNG = np.random.default_rng(41)


def _args(fn, n: int) -> tuple:
    if fn is P.forward_substitution_loops:
        return (np.tril(P.spd(n, RNG)), RNG.random(n))
    if fn in (P.gram_schmidt, P.gram_schmidt_classical, P.rebound_then_written):
        return (RNG.random((n + 3, n)),)
    if fn is F.triangular:
        return (RNG.random(3), n)
    if fn is P.inner_range:
        return (RNG.random((n, n)),)
    return (P.diagonally_dominant(n, RNG),)


#: kernel -> its fori_loop nodes (the outer loop and every loop nested in it)
KERNELS = {P.forward_substitution_loops: 2, P.lu_doolittle_loops: 5, P.lu_in_place: 3,
           P.gram_schmidt: 2, P.gram_schmidt_classical: 2, P.inner_range: 2, F.triangular: 2}
IDS = [f.__name__ for f in KERNELS]


@pytest.mark.parametrize("fn", KERNELS, ids=IDS)
def test_one_graph_every_loop_formed_bitwise_on_eager(fn):
    report = in_one_graph(fn, *_args(fn, 20), loops=KERNELS[fn])
    assert not any("unrolled" in line for line in report.loops), report.loops
    # the inner loop's first trip count is 0 (i = 0): formed, not unrolled
    assert any("in the graph as one fori_loop (0 iterations now" in line
               for line in report.loops), report.loops


@pytest.mark.parametrize("fn", [P.forward_substitution_loops, P.lu_doolittle_loops,
                                P.gram_schmidt_classical], ids=lambda f: f.__name__)
def test_the_graph_does_not_grow_with_the_trip_count(fn):
    small = quiet_explain(fn, *_args(fn, 20))
    large = quiet_explain(fn, *_args(fn, 60))
    assert (large.graph_count, large.graph_break_count) == (1, 0), str(large)
    assert large.ops_per_graph == small.ops_per_graph


_SHARED: dict = {"backend": CountingBackend()}


@settings(max_examples=12, deadline=None)
@given(n=st.integers(16, 48))
def test_sizes_share_one_capture(n):
    fn = P.lu_in_place
    compiled = _SHARED.setdefault("compiled", nd.compile(fn, backend=_SHARED["backend"],
                                                         dynamic=True))
    check_same(fn, *_args(fn, n), compiled=compiled, calls=1, graphs=1, breaks=0)
    assert _SHARED["backend"].count == 1


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("fn", [P.forward_substitution_loops, P.gram_schmidt_classical],
                         ids=lambda f: f.__name__)
def test_short_outer_loops_unroll_with_the_same_results(fn, n):
    check_same(fn, *_args(fn, n), graphs=1, breaks=0)


def test_a_rebound_array_may_be_its_initial_view_so_a_later_write_unrolls():
    # at j = 0 no iteration runs: v is A[:, 0] itself and v /= ... writes into A, which the
    # loop's result node cannot show; the outer loop stays unrolled, with NumPy's results
    args = _args(P.rebound_then_written, 20)
    check_same(P.rebound_then_written, *args, graphs=1, breaks=0)
    report = quiet_explain(P.rebound_then_written, *copy.deepcopy(args))
    assert any("unrolled" in line and "a for loop that may run no iteration" in line
               for line in report.loops), report.loops


def test_the_inner_loop_is_compiled_by_numba_inside_the_outer_one():
    text = nd.explain(P.forward_substitution_loops, backend="numba")(
        *_args(P.forward_substitution_loops, 20)).verbose()
    assert "subgraph fori_loop_body_0: numba backend" in text, text
    assert "subgraph fori_loop_body_1: numba backend" in text, text


@pytest.mark.parametrize("fn", KERNELS, ids=IDS)
def test_numba_within_tolerance(fn):
    compiled = nd.compile(fn, backend="numba", dynamic=True)
    for n in (20, 37):
        numba_matches(compiled, fn, _args(fn, n))
