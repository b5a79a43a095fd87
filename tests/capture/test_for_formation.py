"""``for <name> in range(...)`` in plain Python captured as one fori_loop node, and the loops that
keep today's unrolled behaviour exactly. Differential (plain vs compiled on copies: results
bitwise on eager, within tolerance on numba; arguments' state; exceptions)."""

from __future__ import annotations

import contextlib
import copy
import io
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from tests.backends.compare import assert_close
from tests.capture import for_loop_programs as P
from tests.capture.test_control_flow import all_nodes
from tests.differential import ANY, CountingBackend, check_same

RNG = np.random.default_rng(13)


def quiet_explain(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return nd.explain(fn)(*args)


def fori_nodes(graph) -> int:
    """fori_loop nodes in ``graph`` and every subgraph under it."""
    from npdynamo.fx.subgraphs import nodes_with_subgraphs, subgraphs_of

    own = sum(1 for n in graph.nodes if getattr(n.target, "name", "") == "fori_loop")
    return own + sum(fori_nodes(s.graph) for n in nodes_with_subgraphs(graph)
                     for s in subgraphs_of(n))


def in_one_graph(fn, *args, loops: int = 1):
    """``fn`` gives what it gives plainly, as one graph, no break, ``loops`` fori_loops."""
    check_same(fn, *args, graphs=1, breaks=0)
    report = quiet_explain(fn, *args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    assert fori_nodes(report.graphs[0].graph) == loops, str(report)
    assert sum("in the graph as one fori_loop" in line for line in report.loops) == loops
    return report


def unrolled_as_before(monkeypatch, fn, *args, why: str, graphs: int | None = None,
                       breaks: int | None = None):
    """``fn`` keeps exactly today's capture: the same graphs, breaks and guards as with the
    formation switched off, the same results (with ``graphs`` graphs and ``breaks`` breaks);
    ``explain`` says why it was not formed."""
    check_same(fn, *args, graphs=graphs, breaks=breaks)
    nd.reset()  # both reports from the same state (resume functions are cached)
    report = quiet_explain(fn, *args)
    assert any("unrolled" in line and why in line for line in report.loops), report.loops
    with monkeypatch.context() as m:
        m.setattr(nd.config, "capture_for_loops", False)
        nd.reset()
        before = quiet_explain(fn, *args)
    assert report.graph_count == before.graph_count
    assert report.ops_per_graph == before.ops_per_graph
    assert [b.reason for b in report.break_reasons] == [b.reason for b in before.break_reasons]
    assert report.guards == before.guards
    assert fori_nodes(report.graphs[0].graph) == 0 if report.graphs else True


# -- stencils --------------------------------------------------------------------------------------
@pytest.mark.parametrize("T", [20, 2000])
@pytest.mark.parametrize("fn, make", [
    (P.heat_1d, lambda: (np.sin(np.linspace(0, 3, 40)),)),
    (P.heat_1d_in_place, lambda: (np.sin(np.linspace(0, 3, 40)),)),
    (P.jacobi_2d, lambda: (RNG.random((8, 9)),)),
    (P.two_arrays, lambda: (RNG.random(12), np.zeros(10))),
], ids=["heat_1d", "heat_1d_in_place", "jacobi_2d", "two_arrays"])
def test_stencils_are_one_graph_whatever_the_trip_count(fn, make, T):
    in_one_graph(fn, *make(), T)


@pytest.mark.parametrize("fn, make", [
    (P.heat_1d, lambda: (np.sin(np.linspace(0, 3, 40)),)),
    (P.jacobi_2d, lambda: (RNG.random((7, 7)),)),
])
def test_the_graph_and_the_captures_do_not_grow_with_the_trip_count(fn, make):
    sizes = []
    for T in (20, 2000):
        nd.reset()
        backend = CountingBackend()
        check_same(fn, *make(), T, compiled=nd.compile(fn, backend=backend), graphs=1, breaks=0)
        assert backend.count == 1
        sizes.append(all_nodes(backend.graphs[0].graph))
    assert sizes[0] == sizes[1]


def test_a_new_trip_count_reuses_the_entry():
    backend = CountingBackend()
    compiled = nd.compile(P.heat_1d_in_place, backend=backend)
    u = np.sin(np.linspace(0, 3, 30))
    for T in (20, 2000, 1, 16, 333):
        check_same(P.heat_1d_in_place, u, T, compiled=compiled, graphs=1, breaks=0)
    assert backend.count == 1
    assert "fori_loop" in backend.op_names(0)


def test_each_range_of_an_argument_is_guarded_non_empty():
    backend = CountingBackend()
    compiled = nd.compile(P.two_loops, backend=backend)
    for T in (20, 40, 2):
        check_same(P.two_loops, np.ones(3), T, compiled=compiled, graphs=1, breaks=0)
    assert backend.count == 1   # range(1, 2) has one item: the same entry
    check_same(P.two_loops, np.ones(3), 1, compiled=compiled, graphs=2, breaks=0)
    assert backend.count == 2   # range(1, 1) is empty: another entry


def test_empty_and_negative_ranges_are_other_entries_and_exact():
    backend = CountingBackend()
    compiled = nd.compile(P.heat_1d, backend=backend)
    u = np.sin(np.linspace(0, 3, 30))
    # graphs so far: 20 makes the in-graph loop's entry; 0 and -4 (empty ranges) one entry each;
    # 3 and 50 (non-empty ranges) run in the loop's entry
    for T, graphs in ((20, 1), (0, 2), (-4, 3), (3, 3), (50, 3), (0, 3)):
        check_same(P.heat_1d, u, T, compiled=compiled, graphs=graphs, breaks=0)
    assert "fori_loop" in backend.op_names(0)
    assert not any("fori_loop" in backend.op_names(i) for i in range(1, backend.count))


@pytest.mark.parametrize("T", [20, 2000])
@pytest.mark.parametrize("fn, make", [
    (P.heat_1d, lambda: (np.sin(np.linspace(0, 3, 64)),)),
    (P.jacobi_2d, lambda: (RNG.random((8, 8)),)),
    (P.nested, lambda: (RNG.random(6),)),
])
def test_numba_within_tolerance(fn, make, T):
    args = make()
    extra = (T, 17) if fn is P.nested else (T,)
    if fn is P.nested and T == 2000:
        extra = (40, 30)
    compiled = nd.compile(fn, backend="numba")
    for _ in range(2):
        plain_args, comp_args = [a.copy() for a in args], [a.copy() for a in args]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to the eager backend
            got = compiled(*comp_args, *extra)
        assert_close(got, fn(*plain_args, *extra))
        assert_close(comp_args, plain_args, "arguments after the call")


# -- nested loops and other bodies -----------------------------------------------------------------
def test_nested_loops_are_both_in_the_graph():
    in_one_graph(P.nested, RNG.random(5), 20, 30, loops=2)


def test_a_short_inner_loop_unrolls_inside_a_formed_outer_loop():
    report = in_one_graph(P.nested, RNG.random(5), 20, 3, loops=1)
    assert any("for s in range(S)" in line and "3 iterations, fewer than" in line
               for line in report.loops)


@pytest.mark.parametrize("fn, args", [
    (P.with_index_arithmetic, (np.ones(3), 30)),
    (P.counters, (RNG.random(3), 40)),
    (P.with_continue, (np.ones(3), 20)),
    (P.global_steps, (RNG.random(4),)),
    (P.written_after, (RNG.random(6), 20)),
    (P.between, (RNG.random(3), 3, 30)),
])
def test_other_bodies_in_one_graph(fn, args):
    in_one_graph(fn, *args)


@pytest.mark.parametrize("fn, args, loops, conds", [
    (P.if_else_ends_body, (np.ones(3), 40), 1, 1),
    (P.if_ends_body, (np.ones(3), 40), 1, 1),
    (P.if_in_short_loop, (np.ones(3),), 0, 1),
    (P.while_in_short_loop, (np.ones(3) * 5,), 0, 0),
])
def test_branches_and_while_loops_inside_for_loops(fn, args, loops, conds):
    report = in_one_graph(fn, *args, loops=loops)
    assert sum("in the graph as one cond" in line for line in report.loops) == conds
    if fn is P.while_in_short_loop:
        assert any("one while_loop" in line for line in report.loops), report.loops


@pytest.mark.parametrize("fn, args", [
    (P.index_mod, (np.ones(3), 20)),
    (P.row_recurrence, (RNG.random(4), 30)),
    (P.rows_in_place, (RNG.random((40, 6)),)),
    (P.mirrored, (RNG.random(20), np.zeros(20))),
    (P.past_the_end, (np.ones(20), 20)),
])
def test_the_index_as_a_scalar_index(fn, args):
    in_one_graph(fn, *args)
    compiled = nd.compile(fn, backend="numba")
    plain_args, comp_args = copy.deepcopy(args), copy.deepcopy(args)
    assert_close(compiled(*comp_args), fn(*plain_args))
    assert_close(comp_args, plain_args, "arguments after the call")


def test_an_index_past_the_end_raises_as_python_does():
    # the graph raises: the frame reruns plainly
    check_same(P.past_the_end, np.ones(20), 25, graphs=1, breaks=0)


def test_the_threshold_is_a_config_value(monkeypatch):
    check_same(P.heat_1d, np.ones(5), 15, graphs=1, breaks=0)
    assert not any("fori_loop" in line for line in quiet_explain(P.heat_1d, np.ones(5), 15).loops)
    nd.reset()  # in_one_graph counts the code's entries: none left from 15 trips
    in_one_graph(P.heat_1d, np.ones(5), 16)
    monkeypatch.setattr(nd.config, "for_loop_min_trips", 4)
    nd.reset()
    in_one_graph(P.heat_1d, np.ones(5), 4)


# -- the loop variable after the loop ------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 15, 16, 40])
def test_the_loop_variable_after_the_loop(n):
    # n == 0: no op to graph; index_after raises UnboundLocalError both ways, index_after_old
    # keeps -7
    check_same(P.index_after, np.ones(2), n, graphs=int(n > 0), breaks=0)
    check_same(P.index_after_old, np.ones(2), n, graphs=int(n > 0), breaks=0)


def test_the_loop_variable_read_after_the_loop_specialises_the_bounds():
    x = np.ones(2)
    out, i = nd.compile(P.index_after)(x, 30)
    assert i == 29 and type(i) is int
    report = quiet_explain(P.index_after, x, 30)
    assert any("i is read after the loop" in line for line in report.loops), report.loops


# -- loops that keep today's behaviour -------------------------------------------------------------
@pytest.mark.parametrize("fn, args, why, counts", [
    (P.dtype_changes, (np.arange(4), 20), "changes x from int64[4] to float64[4]", (1, 0)),
    # a break at the print in the entry and in the loop's resume function, each with a graph
    (P.body_breaks, (np.ones(2), 20), "print() does input/output", (2, 2)),
    (P.index_branch, (np.ones(3), 20), "the loop variable i is used where Python needs", (1, 0)),
    (P.swaps, (np.ones(3), np.zeros(3), 20), "binds a to an array it did not compute", (1, 0)),
    (P.aliased, (np.ones(3), 20), "shares its memory", (1, 0)),
    (P.appends, (np.ones(3), 20), "changes objects outside it", (1, 0)),
], ids=["dtype", "break", "index_branch", "swap", "alias", "side_effect"])
def test_loops_that_cannot_be_formed_are_unrolled_as_before(monkeypatch, fn, args, why, counts):
    unrolled_as_before(monkeypatch, fn, *args, why=why, graphs=counts[0], breaks=counts[1])


def test_a_step_other_than_one_is_unrolled(monkeypatch):
    check_same(P.step_two, np.ones(2), 40, graphs=1, breaks=0)
    report = quiet_explain(P.step_two, np.ones(2), 40)
    assert not report.loops and fori_nodes(report.graphs[0].graph) == 0


def test_switched_off_the_loop_unrolls(monkeypatch):
    monkeypatch.setattr(nd.config, "capture_for_loops", False)
    report = quiet_explain(P.heat_1d, np.ones(5), 20)
    assert fori_nodes(report.graphs[0].graph) == 0 and not report.loops
    check_same(P.heat_1d, np.ones(5), 20, graphs=1, breaks=0)


# -- generated bounds ----------------------------------------------------------------------------
BOUNDS = st.integers(-20, 60)


@settings(max_examples=60, deadline=None)
@given(lo=BOUNDS, hi=BOUNDS, lo2=BOUNDS, hi2=BOUNDS)
def test_generated_bounds(lo, hi, lo2, hi2):
    # a fresh capture for (lo, hi), then (lo2, hi2) through the same entries where they hold
    nd.reset()
    x = np.linspace(-1.0, 1.0, 4)
    # the first pair: one graph unless its range is empty (nothing to compute). Whether the
    # second pair reuses an entry depends on the pair drawn (the trip counts, the loop formed
    # or unrolled): any count, but at most one more graph, and only for a non-empty range
    compiled = nd.compile(P.between)
    check_same(P.between, x, lo, hi, compiled=compiled, calls=1, graphs=int(hi > lo), breaks=0)
    check_same(P.between, x, lo2, hi2, compiled=compiled, calls=1, graphs=ANY, breaks=0)
    assert len(nd.inspect(compiled).graphs) - int(hi > lo) in (0, int(hi2 > lo2))
    after = nd.compile(P.index_after_old)
    n, n2 = hi - lo, hi2 - lo2
    check_same(P.index_after_old, x, n, compiled=after, calls=1, graphs=int(n > 0), breaks=0)
    check_same(P.index_after_old, x, n2, compiled=after, calls=1, graphs=ANY, breaks=0)
    assert len(nd.inspect(after).graphs) - int(n > 0) in (0, int(n2 > 0))
