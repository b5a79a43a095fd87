"""``capture/flow/for_loops.py``: ``for t in range(...)`` becomes one ``fori_loop`` node whose
bounds are graph inputs (a new trip count is the same entry), bounds that become specialised
when the index is read after the loop, and loops kept unrolled (too few trips, the index's
value needed, a carried value changing kind: ``RollRefused`` and a capture again), each exact.
The whole range of forms (nested, triangular, views, exits, zero trips) is in
``test_for_formation.py``, ``test_triangular_loops.py``, ``test_view_loops.py``,
``test_zero_trip_loops.py`` and ``test_for_loop_exits.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo import config
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def time_loop(u, T):
    for _t in range(T):
        u = u * 0.5 + 1.0
    return u


def index_read_after(u, T):
    for t in range(2, T):
        u = u + t
    return u, t


def index_value_needed(u, T):
    for t in range(T):
        if t == 0:
            u = u + 1.0
        u = u * 0.5
    return u


def kind_changes(u, T):
    for _t in range(T):
        u = (u * 2).astype(np.float32)
    return u


def _fori(compiled) -> list[int]:
    return [graph.ops.count("fori_loop") for graph in npdynamo.inspect(compiled).graphs]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_time_loop_is_one_node_whatever_its_trip_count(backend):
    compiled = npdynamo.compile(time_loop, backend=backend)
    for T in (20, 2000, 0):
        check_same(time_loop, np.arange(4.0), T, compiled=compiled, graphs=1, breaks=0)
    assert _fori(compiled) == [1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_index_read_after_the_loop_specialises_the_bounds(backend):
    compiled = npdynamo.compile(index_read_after, backend=backend)
    check_same(index_read_after, np.arange(4.0), 20, compiled=compiled, graphs=1, breaks=0)
    check_same(index_read_after, np.arange(4.0), 30, compiled=compiled, graphs=2, breaks=0)
    assert _fori(compiled) == [1, 1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, T", [(index_value_needed, 20), (kind_changes, 20),
                                   (time_loop, config.for_loop_min_trips - 1)],
                         ids=["index_value", "kind_changes", "few_trips"])
def test_loops_kept_unrolled_are_exact(fn, T, backend):
    compiled = check_same(fn, np.arange(4.0), T, backend=backend, graphs=1, breaks=0)
    assert _fori(compiled) == [0]
