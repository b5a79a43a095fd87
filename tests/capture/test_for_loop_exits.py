"""``for`` loops over a ``range`` left by ``return`` or ``break`` on a data-dependent test,
captured as one rotated ``while_loop`` and a ``cond`` choosing the return or the locals after
the loop (``capture.flow.loop_exits``): plain vs compiled on both backends, leaving at the
first, a middle and the last index or never, ranges with steps, and the loops that still
break giving plain results."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from tests.backends.compare import assert_close
from tests.capture.test_control_flow import same_as_plain_in_one_graph
from tests.differential import CountingBackend, check_same


def halve(x, tol, n):
    for k in range(n):
        x = x * 0.5
        if x.max() < tol:
            return x, k + 1
        x = x + 0.0  # runs only when the loop goes on
    return x, n


def chained(x, tol, n):
    total = 0.0
    for k in range(2, n, 3):
        x = np.sqrt(x) + k
        total = total + x.sum()
        if x.max() < tol or k >= 11:
            return x, total, k
    return x, total, -1


def counting_down(x, n):
    for k in range(n, 0, -1):
        x = x - k
        if x.min() < 0.0:
            return x * 2.0, k
    return x, 0


def index_after(x, n):
    for k in range(n):
        y = x * k
        if y.sum() > 10.0:
            return y
        x = x + 1.0
    return x + k  # the loop variable after the loop: its last value


def breaks_out(x, n):
    count = 0
    for k in range(n):  # noqa: B007 (its last value is read after the loop)
        x = x * 0.5
        if x.max() < 1.0:
            break
        x = x - 0.1
        count = count + 2  # stored after the test: the cond gives it
    y = x * 3.0
    return y + 1.0, x, k, count


def breaks_with_or(x, limit):
    for k in range(1, 50):
        x = np.sin(x) + 1.0
        if x.sum() > limit or k >= 20:
            break
    return x, k


FORMED = {
    "breaks_middle": (breaks_out, (np.full(2, 8.0), 9)),
    "breaks_first": (breaks_out, (np.full(2, 0.5), 9)),
    "breaks_never": (breaks_out, (np.full(2, 8e6), 9)),
    "breaks_with_or_by_data": (breaks_with_or, (np.full(2, 0.2), 3.5)),
    "breaks_with_or_by_count": (breaks_with_or, (np.full(2, 0.2), 50.0)),

    "halve_first": (halve, (np.full(3, 0.5), 1.0, 40)),
    "halve_middle": (halve, (np.arange(1.0, 4.0) * 100, 1.0, 40)),
    "halve_last": (halve, (np.full(2, 1.5), 0.2, 3)),
    "halve_never": (halve, (np.full(2, 1e6), 1.0, 5)),
    "halve_one_iteration": (halve, (np.full(2, 1e6), 1.0, 1)),
    "chained_by_test": (chained, (np.full(3, 4.0), 5.0, 40)),
    "chained_by_count": (chained, (np.full(3, 4.0), 1.0, 40)),
    "chained_exhausted": (chained, (np.full(3, 4.0), 1.0, 9)),
    "counting_down": (counting_down, (np.full(3, 20.0), 8)),
    "counting_down_never": (counting_down, (np.full(3, 200.0), 8)),
    "index_after": (index_after, (np.full(2, 0.5), 30)),
    "index_after_exhausted": (index_after, (np.full(2, 0.01), 4)),
}


@pytest.mark.parametrize("name", sorted(FORMED))
def test_formed_as_one_graph(name):
    fn, args = FORMED[name]
    op = "cond" if name == "halve_one_iteration" else "while_loop"  # no iteration after the test
    same_as_plain_in_one_graph(fn, args, op)


@pytest.mark.parametrize("name", sorted(FORMED))
def test_numba_backend(name):
    fn, args = FORMED[name]
    assert_close(nd.compile(fn, backend="numba")(*args), fn(*args))


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1e-3, 1e4), tol=st.floats(1e-3, 10.0))
def test_the_exit_follows_the_data_without_recompiling(scale, tol):
    backend = CountingBackend()
    compiled = nd.compile(halve, backend=backend)
    for factor in (1.0, 1e3, 1e-3):
        x = np.array([scale, scale / 3]) * factor
        got, want = compiled(x, tol, 12), halve(x, tol, 12)
        np.testing.assert_array_equal(got[0], want[0])
        assert type(got[1]) is int and got[1] == want[1]
    assert backend.count == 1


def kinds_differ(x, n):
    for _k in range(n):
        x = x * 0.5
        if x.max() < 1.0:
            return x
    return None


def breaks_elsewhere(x, n):
    for _k in range(n):
        x = x * 0.5
        if x.max() < 1.0:
            break
        x = x - 0.1
    else:
        x = x + 100.0  # a for-else: the break skips it
    return x


def over_a_list(x, items):
    for v in items:
        x = x * v
        if x.max() < 1.0:
            return x
    return x


#: 3.12+ form breaks_elsewhere's for-else with its break on data in one graph; 3.11's bytecode
#: for it does not form: a break on the data, then Python runs the loop (8e6 runs the else)
ELSEWHERE_8, ELSEWHERE_8E6 = ((1, 0), (1, 0)) if sys.version_info >= (3, 12) else ((3, 3), (4, 3))


@pytest.mark.parametrize("fn, args, counts", [
    (kinds_differ, (np.full(2, 8.0), 6), (2, 2)),
    (kinds_differ, (np.full(2, 8e9), 6), (2, 2)),
    (breaks_elsewhere, (np.full(2, 8.0), 9), ELSEWHERE_8),
    (breaks_elsewhere, (np.full(2, 8e6), 9), ELSEWHERE_8E6),
    (over_a_list, (np.full(2, 8.0), [0.5, 0.25, 0.5, 0.5]), (2, 2)),
])
def test_loops_not_formed_give_plain_results(fn, args, counts):
    check_same(fn, *args, graphs=counts[0], breaks=counts[1])
