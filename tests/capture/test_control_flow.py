"""npdynamo.cond / while_loop / fori_loop: plain outside compile, one graph inside it.

Differential (plain vs compiled on copies, eager results bitwise), plus the graph's shape: one
graph, no break, the loop as one node whatever its trip count; and the refusals (a carried
dtype change, side effects) as graph breaks whose reasons say so.
"""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo as nd
from npdynamo.capture.errors import CaptureUnsupported  # noqa: F401 - the reasons' type
from tests.capture import control_flow_programs as P
from tests.differential import CountingBackend, check_same

RNG = np.random.default_rng(7)
A = RNG.random((6, 6)) + 6 * np.eye(6)
B = RNG.random(6)

CASES = {
    "jacobi": (P.jacobi, (A, B, 1e-10)),
    "newton": (P.newton_sqrt, (RNG.random(5) + 1.0, 1e-12)),
    "stencil_1d": (P.stencil_1d, (np.sin(np.linspace(0, 3, 40)), 20)),
    "stencil_2d": (P.stencil_2d, (RNG.random((8, 8)), 20)),
    "cond_true": (P.branch_on_sum, (np.abs(RNG.standard_normal(5)),)),
    "cond_false": (P.branch_on_sum, (-np.abs(RNG.standard_normal(5)),)),
    "nested": (P.nested, (RNG.standard_normal(4) * 10, 0, 5)),
    "carried_numbers": (P.carried_numbers, (RNG.random(3), 7)),
    "early_stopping": (P.early_stopping, (np.array([5.0, 4, 3, 3.5, 3.2, 3.1, 3.3, 2.0]), 2)),
}


def all_nodes(graph) -> int:
    """Nodes of a graph and of every subgraph under it."""
    from npdynamo.fx.subgraphs import nodes_with_subgraphs, subgraphs_of

    return len(graph.nodes) + sum(all_nodes(s.graph) for n in nodes_with_subgraphs(graph)
                                  for s in subgraphs_of(n))


def same_as_plain_in_one_graph(fn, args, op: str) -> None:
    """``fn`` compiled gives what it gives plainly, as one graph holding an ``op`` node."""
    check_same(fn, *args, graphs=1, breaks=0)
    report = nd.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    assert op in [getattr(n.target, "name", "") for n in report.graphs[0].graph.nodes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_as_plain_in_one_graph(name):
    fn, args = CASES[name]
    op = "cond" if "cond" in name else "fori_loop" if "stencil" in name else "while_loop"
    same_as_plain_in_one_graph(fn, args, op if name not in ("nested", "carried_numbers") else
                               "fori_loop")


def test_outside_compile_it_is_the_plain_loop():
    x = RNG.random(4)
    assert nd.fori_loop(2, 5, lambda i, v: v * i, x).tolist() == (x * 2 * 3 * 4).tolist()
    v = x.copy()
    while v.sum() < 10:
        v = v + 1
    np.testing.assert_array_equal(nd.while_loop(lambda v: v.sum() < 10, lambda v: v + 1, x), v)
    assert nd.cond(True, lambda a, b: a - b, lambda a, b: a + b, 5, 3) == 2
    assert nd.cond(np.False_, lambda a, b: a - b, lambda a, b: a + b, 5, 3) == 8
    assert nd.fori_loop(3, 1, lambda i, v: v + 1, x) is x   # no iteration: the value itself


def test_cond_takes_both_branches_without_recompiling():
    backend = CountingBackend()
    compiled = nd.compile(P.branch_on_sum, backend=backend)
    for x in (np.ones(3), -np.ones(3), np.full(3, 2.0), -np.full(3, 2.0)):
        np.testing.assert_array_equal(compiled(x), P.branch_on_sum(x))
    assert backend.count == 1
    assert "cond" in backend.op_names()


def test_stencil_graph_does_not_grow_with_the_trip_count():
    sizes = []
    for T in (20, 2000):
        nd.reset()
        backend = CountingBackend()
        u = np.sin(np.linspace(0, 3, 32))
        out = nd.compile(P.stencil_1d, backend=backend)(u, T)
        np.testing.assert_array_equal(out, P.stencil_1d(u, T))
        (gm,) = backend.graphs
        sizes.append(all_nodes(gm.graph))
    assert sizes[0] == sizes[1]


def test_a_new_trip_count_is_a_new_value_not_a_new_capture():
    backend = CountingBackend()
    compiled = nd.compile(P.stencil_2d, backend=backend)
    u = RNG.random((6, 6))
    for T in (3, 20, 7, 0, 11):
        np.testing.assert_array_equal(compiled(u, T), P.stencil_2d(u, T))
    assert backend.count == 2   # the second trip count made T a dynamic scalar


def test_fori_loop_with_a_python_scalar_carried_and_returned():
    check_same(P.carried_numbers, RNG.random(3), 0, graphs=1, breaks=0)
    check_same(P.carried_numbers, RNG.random(3), 5, graphs=2, breaks=0)  # n is guarded: 2 entries


def test_while_loop_that_never_iterates_returns_the_initial_values():
    check_same(P.jacobi, A, B, np.inf, graphs=1, breaks=0)


@pytest.mark.parametrize("fn, args, words", [
    (P.changes_dtype, (np.arange(3),), "changes the carried value from int64[3] to float64[3]"),
    (P.writes_outside, (np.ones(3), []), "changes objects outside it"),
    (P.writes_carried_in_place, (np.ones(3),), "writes into its carried array in place"),
])
def test_refusals_are_graph_breaks_with_a_reason(fn, args, words):
    check_same(fn, *args, graphs=0, breaks=1)  # the loop runs in Python: nothing else to graph
    report = nd.explain(fn)(*args)
    assert report.graph_break_count == 1
    assert words in report.break_reasons[0].reason


def test_a_graph_break_inside_the_body_names_the_call():
    def fn(x):
        def body(i, v):
            print("step")
            return v + 1.0

        return nd.fori_loop(0, 2, body, x)

    check_same(fn, np.ones(2), graphs=0, breaks=1)
    reason = nd.explain(fn)(np.ones(2)).break_reasons[0].reason
    assert reason.startswith("npdynamo.fori_loop: its body function cannot be captured")


def test_reading_a_carried_number_as_python_value_breaks():
    def fn(x, n):
        def body(i, state):
            v, k = state
            if k > 2:   # Python needs k's value: it changes every iteration
                v = v + 1.0
            return v, k + 1

        return nd.fori_loop(0, n, body, (x, 0))

    check_same(fn, np.ones(2), 5, graphs=0, breaks=1)
    assert nd.explain(fn)(np.ones(2), 5).graph_break_count == 1


def test_a_cond_predicate_of_several_values_breaks():
    def fn(x):
        return nd.cond(x > 0, lambda v: v, lambda v: -v, x)

    check_same(fn, np.ones(1), graphs=1, breaks=1)
    assert "shape (1,)" in nd.explain(fn)(np.ones(1)).break_reasons[0].reason


def test_branches_returning_different_dtypes_break():
    def fn(x):
        return nd.cond(x.sum() > 0, lambda v: v, lambda v: v.astype(np.float32), x)

    check_same(fn, np.ones(2), graphs=1, breaks=1)
    assert "different kinds" in nd.explain(fn)(np.ones(2)).break_reasons[0].reason


def test_closure_arrays_and_outer_results_are_lifted():
    def fn(x, w):
        scale = w.sum()
        return nd.fori_loop(0, 4, lambda i, v: v * scale + w, x)

    check_same(fn, RNG.random(3), RNG.random(3), graphs=1, breaks=0)


def test_the_graph_prints_its_subgraphs_and_generates_code():
    backend = CountingBackend()
    nd.compile(P.jacobi, backend=backend)(A, B, 1e-8)
    (gm,) = backend.graphs
    text = str(gm.graph)
    assert "while_loop(while_loop_cond_0, while_loop_body_1" in text
    assert "while_loop_body_1 = graph(" in text
    assert "_while_loop_body_1" in gm.code


def test_in_place_writes_after_a_loop_into_its_arrays_break():
    def fn(x):
        r = nd.while_loop(lambda v: v.sum() > 100.0, lambda v: v * 0.5, x)  # r is x itself
        s = nd.fori_loop(0, 3, lambda i, v: v[::-1], x)                     # a view of x
        r[0] = 7.0       # writes into x, and so into s
        return r, s, x

    def writes_input(x):
        y = x[1:]
        r = nd.fori_loop(0, 2, lambda i, v: v, y)
        x[2] = -1.0      # r is a view of x
        return r.sum()

    for f, graphs in ((fn, 1), (writes_input, 2)):  # (fn's return after the write: no op)
        check_same(f, np.arange(4.0), graphs=graphs, breaks=1)
        report = nd.explain(f)(np.arange(4.0))
        assert report.graph_break_count == 1
        assert "in-place write into an array passed to or returned by" in \
            report.break_reasons[0].reason


def test_results_are_the_plain_objects():
    def fn(x):
        return nd.while_loop(lambda v: v.sum() > 100.0, lambda v: v * 0.5, x)

    x = np.arange(3.0)
    assert nd.compile(fn)(x) is x    # no iteration: the value itself, as plain Python gives


class Settings:
    def __init__(self) -> None:
        self.rate = 0.5


def test_reading_outside_objects_in_a_body_is_no_side_effect():
    settings, table = Settings(), {"shift": 1.0, "unused": 2.0}

    def fn(x, settings, table):
        return nd.fori_loop(0, 3, lambda i, v: v * settings.rate + table["shift"], x)

    check_same(fn, np.ones(3), settings, table, graphs=1, breaks=0)
    assert nd.explain(fn)(np.ones(3), settings, table).graph_break_count == 0


def test_writing_outside_objects_in_a_body_breaks():
    def sets_attribute(x, settings):
        def body(i, v):
            settings.rate = 0.25
            return v * 2.0

        return nd.fori_loop(0, 3, body, x)

    def fresh_list(x):
        seen = []

        def body(i, v):
            seen.append(1)
            return v * 2.0

        return nd.fori_loop(0, 3, body, x), len(seen)

    def rebinds(x):
        total = 0.0

        def body(i, v):
            nonlocal total
            total = total + 1.0
            return v * 2.0

        return nd.fori_loop(0, 3, body, x), total

    for fn, args in ((sets_attribute, (np.ones(2), Settings())), (fresh_list, (np.ones(2),)),
                     (rebinds, (np.ones(2),))):
        check_same(fn, *args, graphs=0, breaks=1)
        assert "changes objects outside it" in nd.explain(fn)(*args).break_reasons[0].reason
