"""Capture work grows with the code, not with the data (issue 23, item 5: the time budget).

Counted in instructions stepped through and guards made, never in seconds:

- a loop unrolled at capture whose predicted cost is past ``UNROLL_STEP_LIMIT`` breaks before
  its first step when it builds no graph op, or when it is library code walking the caller's
  data (``statistics.quantiles``), and Python runs it: a longer loop costs no more capture;
- so does one predicted to take the graph past its op limit (a comprehension over every row of
  an array, numba-examples' kmeans), and a loop over an array's rows is handed to Python as the
  array's own iterator, not as a tuple of every row (numpy-benchmarks' check_mask);
- ``np.ndindex`` of a shape known now: a ``for`` over it long enough forms one loop node over
  the flat index (``test_ndindex_loops.py``); a short one, and any other use, iterates a snapshot
  of its index tuples (unrolled), instead of a resume entry per index;
- ``seq[i]`` of a long list or tuple from outside wraps and guards that item only;
- using all items of long sequences from outside (``sorted(data)``) breaks past
  ``ITEMS_READ_LIMIT`` instead of wrapping and guarding each item at every capture.

And a hand-over must not need more stack than the plain call: a call of
``sys.getrecursionlimit``/``setrecursionlimit`` breaks and the frame runs on natively, so a limit
is set at the depth the code measured (no resume function, called deeper, in between).

Each case also runs plain and compiled on copies of the same inputs (``check_fidelity``).
"""

from __future__ import annotations

import contextlib
import statistics
import sys

import numpy as np
import pytest

import npdynamo
from npdynamo.api import REMAKE, make_session
from npdynamo.backends import lookup_backend
from npdynamo.capture.flow.unrolled_loops import UNROLL_STEP_LIMIT
from npdynamo.capture.hooks.decorator import compile_with
from npdynamo.capture.session import ITEMS_READ_LIMIT
from tests.fidelity import check_fidelity


@pytest.fixture
def captures(monkeypatch):
    """Every entry the sessions of check_fidelity's compile() build: (function name,
    instructions, guard lines, break, lines of the code run around its graph)."""
    seen: list[tuple[str, int, int, str, int]] = []

    def record(entry, fn) -> None:
        reason = entry.graph_break
        seen.append((fn.__name__, entry.steps, len(entry.guard_set.source.splitlines()),
                     "" if reason is None else str(getattr(reason, "reason", reason)),
                     len((entry.run_source or "").splitlines())))

    def compile_recorded(fn, backend="eager"):
        session = make_session(lookup_backend(backend), recorder=record)
        return compile_with(fn, session, (backend, False, None), REMAKE)

    npdynamo.reset()
    monkeypatch.setattr(npdynamo, "compile", compile_recorded)  # as check_fidelity compiles
    yield seen
    npdynamo.reset()


def python_loop(x, n):
    last = {}
    for i in range(n):
        last[i % 5] = i  # a dict key needs the Python value of i: unrolled, not an in-graph loop
    return x + last.get(2, -1)


def library_loop(data, n):
    return np.asarray(statistics.quantiles(data, n=n)) * 2.0


def rows_distance(A, C):
    B = A * 2.0
    # (a list bound to a name: not np.array(list) alone, so not formed into one loop)
    rows = [[np.sqrt(np.sum((B[i] - C[j]) ** 2)) for j in range(C.shape[0])]
            for i in range(B.shape[0])]
    return np.array(rows).min(axis=1)


def rows_distance_formed(A, C):
    B = A * 2.0
    d = np.array([[np.sqrt(np.sum((B[i] - C[j]) ** 2)) for j in range(C.shape[0])]
                  for i in range(B.shape[0])])
    return d.min(axis=1)


def masked_rows(db, mask=(1, 0, 1)):  # numpy-benchmarks' check_mask, with no branch
    out = np.zeros(db.shape[0], dtype=bool)
    for idx, line in enumerate(db):
        target, vector = line[0], line[1:]
        out[idx] = (mask == np.bitwise_and(mask, vector)).all() & target
    return out, idx  # (the index read after the loop: not one loop node, so it would unroll)


def rows_left_after_a_break(a):
    it = iter(a)
    first = next(it)
    print("a graph break")  # the code after it gets ``it`` as the array's iterator, moved on
    return first * 2, list(it)


def read_items(x, data):
    return x * data[3] + data[-1]


def use_all_items(x, data):
    return x + sorted(data)[0]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_python_loop_longer_than_the_limit_is_not_unrolled(backend):
    for n in (3, 1_500, 9_000):
        check_fidelity(python_loop, np.arange(3.0), n, backend=backend)


def test_unrolling_stops_at_the_same_cost_for_any_trip_count(captures):
    steps = {}
    for n in (1_500, 9_000):
        captures.clear()
        check_fidelity(python_loop, np.arange(3.0), n)
        (_, steps[n], _, reason, _), *_ = captures
        assert "would be unrolled at capture" in reason
    # the loop breaks after one iteration is measured: a few dozen instructions, whatever n
    assert steps[9_000] <= steps[1_500] + 20 < 200
    captures.clear()
    check_fidelity(python_loop, np.arange(3.0), 20)  # short: unrolled whole, no break
    assert captures[0][3] == ""


def test_a_library_loop_over_the_callers_data_breaks_before_unrolling(captures):
    data = [float(v) for v in np.random.default_rng(0).uniform(0, 100, 50)]
    for n in (4, 600, 3_000):
        check_fidelity(library_loop, data, n)
    # the library call then runs in Python (a library frame is not compiled on its own)
    assert max(steps for _, steps, *_ in captures) < UNROLL_STEP_LIMIT // 20
    assert any("would be unrolled" in reason for _, _, _, reason, _ in captures)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_comprehension_past_the_op_limit_breaks_before_unrolling(captures, backend):
    rng = np.random.default_rng(0)
    steps = {}
    for n in (300, 3_000):  # 18 ops per row: past the graph's 4,000-op limit
        captures.clear()
        npdynamo.reset()
        check_fidelity(rows_distance, rng.random((n, 4)), rng.random((3, 4)), backend=backend,
                       graphs=1, breaks=1)  # B = A * 2.0, then Python runs the rest
        (_, steps[n], _, reason, _), *_ = captures
        assert "past its 4,000-op limit" in reason
    assert steps[3_000] <= steps[300] + 20  # measured on one row, whatever the row count
    captures.clear()
    npdynamo.reset()
    check_fidelity(rows_distance, rng.random((20, 4)), rng.random((3, 4)), backend=backend,
                   graphs=1, breaks=0)  # short: unrolled whole into the graph
    assert captures[0][3] == ""
    for n in (300, 3_000):  # np.array(list) alone: one loop whatever the row count
        captures.clear()
        npdynamo.reset()
        check_fidelity(rows_distance_formed, rng.random((n, 4)), rng.random((3, 4)),
                       backend=backend, graphs=1, breaks=0)
        (_, steps[n], _, reason, _), *_ = captures
        assert reason == ""
    assert steps[3_000] == steps[300]


def test_a_loop_over_rows_breaks_with_the_arrays_own_iterator(captures):
    rng = np.random.default_rng(0)
    source_lines = {}
    for n in (1_500, 4_000):
        captures.clear()
        npdynamo.reset()
        db = np.array(rng.integers(2, size=(n, 4)), dtype=bool)
        check_fidelity(masked_rows, db, graphs=1, breaks=1)  # np.zeros, then Python runs on
        (_, _, _, reason, source_lines[n]), *_ = captures
        assert "iterations of about 8 ops each" in reason  # the row is one of them
    # the code handed to Python reads the rows from the array itself, not one by one
    assert source_lines[4_000] == source_lines[1_500] < 20
    # list() of the iterator handed over breaks again: Python runs it
    check_fidelity(rows_left_after_a_break, np.arange(6.0).reshape(3, 2), graphs=1, breaks=2)


def test_reading_one_item_of_a_long_sequence_guards_that_item(captures):
    for size in (10, 9_000):
        for data in (list(range(size)), tuple(range(size))):
            check_fidelity(read_items, np.arange(3.0), data)
    guard_lines = [lines for name, _, lines, *_ in captures if name == "read_items"]
    assert max(guard_lines) - min(guard_lines) <= 2  # not one guard per item


def test_reading_one_item_out_of_range_raises_as_python():
    check_fidelity(read_items, np.arange(3.0), [1, 2])
    check_fidelity(read_items, np.arange(3.0), (1, 2, 3))


def test_using_all_items_of_a_long_sequence_breaks(captures):
    short, long = list(range(20, 0, -1)), list(range(3 * ITEMS_READ_LIMIT, 0, -1))
    check_fidelity(use_all_items, np.arange(3.0), short)
    assert captures[-1][3] == ""
    captures.clear()
    check_fidelity(use_all_items, np.arange(3.0), long)
    assert "items read from outside" in captures[0][3]
    assert max(lines for _, _, lines, *_ in captures) < ITEMS_READ_LIMIT // 10  # no guard per item


# -- the recursion limit against the depth (issue 23: test_sys.test_setrecursionlimit_to_depth) --
def limit_against_depth(depth_of_caller):
    old = sys.getrecursionlimit()
    outcomes = []
    try:
        depth = depth_of_caller()  # the interpreter's own count, as CPython's test reads it
        with contextlib.nullcontext():  # a with block's body resumed: deeper, before the fix
            for extra in (1, 2, 3):
                try:
                    sys.setrecursionlimit(depth + extra)
                    outcomes.append("set")
                except RecursionError:
                    outcomes.append("too low")
                sys.setrecursionlimit(old)
    finally:
        sys.setrecursionlimit(old)
    return outcomes


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_the_recursion_limit_is_set_at_the_depth_it_was_measured(backend):
    # after the first break on the limit the frame runs on natively at one depth: no hand-over
    # to a resume function between measuring the depth and setting the limit
    support = pytest.importorskip("test.support")  # ships with CPython, as make conformance needs
    check_fidelity(limit_against_depth, support.get_recursion_depth, backend=backend)


# -- np.ndindex: a snapshot of index tuples, or one loop node (numpy-benchmarks' local_maxima) --
def maxima(data, mode=lambda p, o, w: (p + o) % w):
    result = np.ones(data.shape, bool)
    for pos in np.ndindex(data.shape):
        myval = data[pos]
        for offset in np.ndindex(data.shape):
            neighbor = tuple(mode(p, o - w // 2, w) for p, o, w in zip(pos, offset, data.shape))
            result[pos] &= data[neighbor] <= myval
    return result


def ndindex_left(x, *shape):
    it = np.ndindex(*shape)
    first = next(it)
    return x + len(first), [index for index in it]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_ndindex_loops_unroll_when_short_and_form_when_long(captures, backend):
    data = np.random.default_rng(0).random((2, 3))
    check_fidelity(maxima, data, backend=backend, graphs=1, breaks=0)  # 6 x 6: unrolled
    captures.clear()
    npdynamo.reset()
    data = np.arange(120.0).reshape(5, 4, 3, 2)
    # 120 x 120 (before: a break, Python ran the loops): two fori_loops, no break
    check_fidelity(maxima, data, backend=backend, graphs=1, breaks=0)
    assert str(npdynamo.explain(maxima)(data)).count("in the graph as one fori_loop") == 2


def test_ndindex_yields_numpys_index_tuples():
    for shape in ((2, 3), ((3, 2),), (), ((),), (1, 4)):
        npdynamo.reset()
        check_fidelity(ndindex_left, np.arange(2.0), *shape, graphs=1, breaks=0)
    for shape in ((0, 4), (-1,)):  # next() raises StopIteration; NumPy's ValueError
        npdynamo.reset()
        check_fidelity(ndindex_left, np.arange(2.0), *shape, graphs=0, breaks=0)
