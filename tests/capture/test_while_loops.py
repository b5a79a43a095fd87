"""``capture/flow/while_loops.py``: a ``while`` on an array condition becomes one
``while_loop`` node (the body and the bottom test captured once, the carried locals its
results), exact for any trip count, zero included; a loop that leaves its body, or carries a
value whose kind changes, breaks at the test with the reason. ``is_graph_condition`` is asked
directly. More shapes (nested loops, carried numbers, writes in place) are in
``test_while_formation.py``; loops left by ``break``/``return`` in ``test_loop_exits.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.flow.while_loops import is_graph_condition
from npdynamo.capture.values import ArrayValue, Const, ScalarInputValue
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def test_a_graph_condition_is_one_value_the_run_decides():
    graph = Graph()
    scalar = ArrayValue(graph.placeholder("t", ArrayMeta((), np.dtype(bool))))
    vector = ArrayValue(graph.placeholder("v", ArrayMeta((2,), np.dtype(bool))))
    number = ScalarInputValue(0.5, None, None, graph.placeholder("n", ScalarMeta(float)))
    assert is_graph_condition(scalar) and is_graph_condition(number)
    assert not is_graph_condition(vector)  # its truth raises in NumPy: not a loop test
    assert not is_graph_condition(Const(True))  # known now: the loop unrolls


def halve_until(x, tol):
    err = np.abs(x).max()
    while err > tol:
        x = x * 0.5
        err = np.abs(x).max()
    return x, err


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_while_on_an_array_condition_is_one_node_for_any_trip_count(backend):
    compiled = npdynamo.compile(halve_until, backend=backend)
    for x in (np.arange(1.0, 4.0), np.full(3, 1e6), np.zeros(3)):  # 5, 24 and 0 trips
        check_same(halve_until, x, 0.1, compiled=compiled, graphs=1, breaks=0)
    (graph,) = npdynamo.inspect(compiled).graphs
    assert graph.ops.count("while_loop") == 1


def leaves_by_break(x):
    while x.sum() < 100.0:
        x = x * 2.0
        if x.max() > 40.0:
            break
    return x


def carried_dtype_changes(x):
    while x.sum() < 100.0:
        x = (x * 2).astype(np.float32)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_the_node_cannot_hold_breaks_at_its_test(backend):
    x = np.arange(1.0, 5.0)
    compiled = check_same(leaves_by_break, x, backend=backend, graphs=3, breaks=3)
    reasons = [e.graph_break.reason for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert "cannot become an in-graph loop: the loop body leaves the loop" in reasons[0]
    # after the break the resume function runs the first body (x becomes float32) and meets
    # the bottom test: 3.12+ compile it as a test jumping out plus JUMP_BACKWARD, which forms
    # there into a node carrying float32 x; 3.11's bottom test is POP_JUMP_BACKWARD_IF_TRUE,
    # no loop's first test: a break there, and once more at the next resume
    graphs_breaks = (2, 1) if PY >= (3, 12) else (3, 3)
    compiled = check_same(carried_dtype_changes, x, backend=backend, graphs=graphs_breaks[0],
                          breaks=graphs_breaks[1])
    first = npdynamo.inspect(compiled).entries[0].graph_break.reason
    assert "the loop changes x from float64[4] to float32[4]" in first
