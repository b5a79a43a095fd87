"""``while <array condition>:`` in plain Python captured as one while_loop node (no break per
iteration), and the loops that keep today's behaviour, with the reason in ``explain``."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import npdynamo as nd
from tests.capture.test_control_flow import same_as_plain_in_one_graph
from tests.differential import CountingBackend, check_same

RNG = np.random.default_rng(11)
A = RNG.random((5, 5)) + 5 * np.eye(5)
B = RNG.random(5)


def jacobi(A, b, tol):
    D = A.diagonal()
    R = A - D * np.eye(A.shape[0])
    x = np.zeros_like(b)
    err = np.float64(np.inf)      # the first test is known: the loop forms at its bottom test
    while err > tol:
        new = (b - R @ x) / D
        err = np.abs(new - x).max()
        x = new
    return x, err


def halve(x):
    while np.abs(x).max() > 1.0:   # the first test is data: the loop forms at its entry
        x = x * 0.5
    return x


def newton(a, tol):
    x = a + 1.0
    step = np.abs(x * x - a).max()
    while step > tol:
        delta = (x * x - a) / (2 * x)
        x = x - delta
        step = np.abs(delta).max()
    return x


def counted(x):
    k = 0
    while x.sum() < 100:
        x = x * 2.0
        k += 1                     # a Python int carried through the loop
    return x, k


def nested(x):
    while x.sum() > 1.0:
        y = x
        while y.max() > 0.75:
            y = y * 0.9
        x = y * 0.5
    return x


def with_break(x):
    while x.sum() > 1.0:
        x = x * 0.5
        if x.size > 100:
            break
    return x


def changes_dtype(x):
    while x.sum() < 100:
        x = x * 2.5
    return x


def appends(x, log):
    while x.sum() > 1.0:
        x = x * 0.5
        log.append(1)
    return x


FORMED = {
    "jacobi": (jacobi, (A, B, 1e-10)),
    "halve": (halve, (RNG.random(4) * 10,)),
    "halve_no_iteration": (halve, (RNG.random(4) * 0.5,)),
    "newton": (newton, (RNG.random(4) + 1.0, 1e-12)),
    "counted": (counted, (np.ones(3),)),
    "nested": (nested, (RNG.random(4) * 4,)),
}


@pytest.mark.parametrize("name", sorted(FORMED))
def test_formed_as_one_graph(name):
    fn, args = FORMED[name]
    same_as_plain_in_one_graph(fn, args, "while_loop")


def test_new_data_takes_no_recompile():
    backend = CountingBackend()
    compiled = nd.compile(halve, backend=backend)
    for scale in (10.0, 1000.0, 0.5, 3.0):
        x = RNG.random(4) * scale
        np.testing.assert_array_equal(compiled(x), halve(x))
    assert backend.count == 1


#: after the first break the resume function starts in the body; 3.11 compiles the loop's test
#: at the bottom too (a jump back), so the resume cannot form the (now float) loop and breaks at
#: each test; on 3.12+ it forms it in one graph
CHANGES_DTYPE = (3, 3) if sys.version_info < (3, 12) else (2, 1)


@pytest.mark.parametrize("fn, args, words, counts", [
    (with_break, (np.ones(3),), "the loop body leaves the loop", (2, 2)),
    (changes_dtype, (np.arange(3),), "changes x from int64[3] to float64[3]", CHANGES_DTYPE),
    (appends, (np.ones(3), []), "changes objects outside it", (2, 2)),
])
def test_loops_that_keep_breaking_say_why(fn, args, words, counts):
    check_same(fn, *args, graphs=counts[0], breaks=counts[1])
    report = nd.explain(fn)(*args)
    assert report.graph_break_count >= 1
    reason = report.break_reasons[0].reason
    assert reason.startswith("the while loop on an array condition cannot become an in-graph")
    assert words in reason


def test_numba_backend():
    from tests.backends.compare import assert_close

    for fn, args in FORMED.values():
        assert_close(nd.compile(fn, backend="numba")(*args), fn(*args))


def test_an_if_on_an_array_breaks_only_with_the_if_formation_off(monkeypatch):
    def fn(x):
        if x.sum() > 0:
            x = x * 2
        return x

    check_same(fn, np.ones(2), graphs=1, breaks=0)
    report = nd.explain(fn)(np.ones(2))    # by default: one cond node
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    monkeypatch.setattr(nd.config, "capture_if_branches", False)
    nd.reset()
    check_same(fn, np.ones(2), graphs=2, breaks=1)
    reason = nd.explain(fn)(np.ones(2)).break_reasons[0].reason
    assert reason.startswith("a branch depends on the values in an array")


def test_new_sizes_reuse_the_graph_with_symbolic_shapes():
    backend = CountingBackend()
    compiled = nd.compile(newton, backend=backend)
    for n in (4, 6, 9, 12):
        # the second size recompiles with a symbolic dimension, which the later ones reuse
        check_same(newton, RNG.random(n) + 1.0, 1e-12, compiled=compiled,
                   graphs=1 if n == 4 else 2, breaks=0)
    assert backend.count == 2   # the second size made the dimension symbolic


def test_a_loop_inside_a_differentiated_function_is_left_to_the_tape():
    def loss(w, x):
        while x.sum() < 10.0:
            x = x * 1.5 + w
        return (x * x).sum()

    def step(w, x):
        return nd.value_and_grad(loss)(w, x)

    w, x = np.full(3, 0.2), np.ones(3)
    value, grad = nd.compile(step)(w, x)
    want_value, want_grad = step(w, x)
    assert value == want_value
    np.testing.assert_array_equal(grad, want_grad)
    assert "a branch depends on the values" in nd.explain(step)(w, x).break_reasons[0].reason
