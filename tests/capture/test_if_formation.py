"""``if <array test>:`` captured as one cond node when ``config.capture_if_branches`` is on:
both branches in one graph (no recompile to take the other), exact results, and the statements
that keep breaking, with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo as nd
from tests.capture.test_control_flow import same_as_plain_in_one_graph
from tests.differential import CountingBackend, check_same


@pytest.fixture(autouse=True)
def _branches_on(monkeypatch):
    monkeypatch.setattr(nd.config, "capture_if_branches", True)


def if_else(x):
    y = x
    if x.sum() > 0:
        y = x * 2
        unused = 1  # noqa: F841 - assigned in one branch, not read after: not a result
    else:
        y = x - 1
    return y + 1


def if_only(x, scale):
    if np.abs(x).max() > 1.0:
        x = x / np.abs(x).max()
        scale = scale * 2.0
    return x, scale


def inside_a_loop(x, n):
    while x.sum() < n:
        if x.max() > 3:
            x = x + 1.0
        else:
            x = x * 2.0
    return x


def returns_in_a_branch(x):
    if x.sum() > 0:
        return x * 2.0
    return -x


CASES = {
    "returns_true": (returns_in_a_branch, (np.ones(3),)),
    "returns_false": (returns_in_a_branch, (-np.ones(3),)),
    "if_else_true": (if_else, (np.ones(3),)),
    "if_else_false": (if_else, (-np.ones(3),)),
    "if_only_taken": (if_only, (np.arange(4.0), np.float64(1.0))),
    "if_only_not_taken": (if_only, (np.ones(4) * 0.5, np.float64(1.0))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_graph_same_as_plain(name):
    fn, args = CASES[name]
    same_as_plain_in_one_graph(fn, args, "cond")


def test_inside_a_formed_while_loop():
    same_as_plain_in_one_graph(inside_a_loop, (np.ones(3) * 0.5, 50.0), "while_loop")


def test_both_branches_without_recompiling():
    backend = CountingBackend()
    compiled = nd.compile(if_else, backend=backend)
    for sign in (1.0, -1.0, 2.0, -3.0):
        np.testing.assert_array_equal(compiled(np.ones(2) * sign), if_else(np.ones(2) * sign))
    assert backend.count == 1


def breaks_in_a_branch(x):
    if x.sum() > 0:
        print("positive")
    return x


def changes_dtype(x):
    if x.sum() > 0:
        x = x.astype(np.float32)
    return x


def appends(x, log):
    if x.sum() > 0:
        log.append(1)
    return x


@pytest.mark.parametrize("fn, args, words, counts", [
    # a break at the if, and one at the print in the branch taken
    (breaks_in_a_branch, (np.ones(2),), "print() does input/output", (1, 2)),
    (changes_dtype, (np.ones(2),), "the branches give x different kinds: float32[2] and "
                                   "float64[2]", (2, 1)),
    (appends, (np.ones(2), []), "changes objects outside it", (1, 1)),
])
def test_statements_that_keep_breaking(fn, args, words, counts):
    check_same(fn, *args, graphs=counts[0], breaks=counts[1])
    report = nd.explain(fn)(*args)
    assert report.graph_break_count >= 1
    assert report.break_reasons[0].reason.startswith("the if statement on an array condition")
    assert words in report.break_reasons[0].reason


def test_off_by_default(monkeypatch):
    monkeypatch.setattr(nd.config, "capture_if_branches", False)
    check_same(if_else, np.ones(2), graphs=2, breaks=1)
    assert nd.explain(if_else)(np.ones(2)).graph_break_count == 1


def nested_at_the_loop_end(db, out):
    """3.13 compiles the inner ``if`` ending the outer ``if``'s block, itself ending the loop
    body, as tests that each jump over a jump back to the loop's head."""
    for i in range(db.shape[0]):
        if db[i, 0] > 0.3:
            if db[i, 1] > 0.5:
                out[i] = db[i, 2]
    return out


def three_deep_with_an_else(db, out):
    for i in range(db.shape[0]):
        if db[i, 0] > 0.2:
            out[i] = 1.0
            if db[i, 1] > 0.4:
                if db[i, 2] > 0.6:
                    out[i] = 3.0
        else:
            if db[i, 1] < 0.5:
                out[i] = -1.0
    return out


def static_inner_test(db, out, flag):
    for i in range(db.shape[0]):
        if db[i, 0] > 0.5:
            if flag:  # a Python bool: decided at capture, its jump back taken or not
                out[i] = db[i, 1]
    return out


def with_a_continue(db, out):
    for i in range(db.shape[0]):
        if db[i, 0] > 0.5:
            if db[i, 1] > 0.5:
                continue
            out[i] = db[i, 2]
    return out


@pytest.mark.parametrize("fn,extra,graphs,breaks", [
    (nested_at_the_loop_end, (), 1, 0),
    (three_deep_with_an_else, (), 1, 0),
    (static_inner_test, (True,), 1, 0),
    (static_inner_test, (False,), None, 0),  # (nothing left to compute: no graph)
    (with_a_continue, (), None, None),  # (a branch that leaves: a break, as before)
])
def test_nested_ifs_ending_a_loop_body(fn, extra, graphs, breaks):
    db = np.random.default_rng(5).random((40, 3))
    check_same(fn, db, np.zeros(40), *extra, graphs=graphs, breaks=breaks)
    if graphs == 1:
        report = str(nd.explain(fn)(db, np.zeros(40), *extra))
        assert "in the graph as one fori_loop" in report, report
