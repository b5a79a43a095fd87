"""``assert`` on a graph value, speculated (``capture/flow/assertions.py``): the loop around it
still forms, the check runs in the graph (eager, and inside the numba backend's compiled loop),
and a failing assert gives exactly Python's ``AssertionError`` (type and message) and Python's
state of the arguments, iterations before the failing one included. Differential: plain vs
compiled on copies of the same inputs, passing and failing, on both backends."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from npdynamo import ops
from npdynamo.ops.speculation import AssumptionFailed
from tests.backends.compare import assert_close
from tests.backends.test_loop_program import loop_records
from tests.capture.assert_programs import (
    negated,
    on_python_value,
    on_whole_array,
    springs,
    straight_line,
    two_tests,
    while_with_assert,
    with_message,
)
from tests.differential import check_same, run_both


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    # the tuner may run the eager candidate on the first calls: the loop program must run
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")


def quiet_explain(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return nd.explain(fn)(*args)


def one_graph(fn, *args):
    report = quiet_explain(fn, *args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    return report


def raises_as_python(fn, *args, backend="eager"):
    """The compiled call raises the plain call's AssertionError, arguments as Python left them."""
    run = run_both(fn, nd.compile(fn, backend=backend), args, {})
    assert type(run.exc) is AssertionError, run.exc
    assert_close(run.comp_args, run.plain_args, "args after the call")
    return run


# -- eager ---------------------------------------------------------------------------------------
def test_the_loop_forms_with_the_check_inside():
    pos, out = np.arange(20.0), np.zeros(20)
    report = one_graph(springs, pos, out)
    assert any("in the graph as one fori_loop" in line for line in report.loops), str(report)
    check_same(springs, pos, out, graphs=1, breaks=0)


def test_a_failing_assert_raises_python_error_after_python_iterations():
    pos = np.arange(20.0)
    pos[3] = pos[2]  # fails at i = 3, after out[1] and out[2]
    run = raises_as_python(springs, pos, np.zeros(20))
    assert run.plain_args[1][2] == 2.0  # (the plain call did write before it raised)
    for fn, args in [(with_message, (np.r_[1.0, 2.0, -1.0, np.ones(20)],)),
                     (two_tests, (np.r_[np.ones(10), 5.0, np.ones(10)], 0.0, 2.0)),
                     (negated, (np.array([1.0, -2.0]),)),
                     (while_with_assert, (np.array([0.0, -1.0]),)),
                     (straight_line, (np.array([-1.0, 0.5]), np.zeros(2)))]:
        run = raises_as_python(fn, *args)
        assert str(run.exc) in ("", "x[2] = -1.0 is not positive", "out of range",
                                "no positive entry")


def test_passing_asserts_in_one_graph():
    x = np.linspace(0.5, 3.0, 20)
    for fn, args in [(with_message, (x,)), (two_tests, (x, 0.0, 5.0)), (negated, (x,)),
                     (while_with_assert, (x,)), (straight_line, (x, np.zeros(2)))]:
        check_same(fn, *args, graphs=1, breaks=0)
        one_graph(fn, *args)


def test_a_failing_call_does_not_change_later_calls():
    compiled = nd.compile(with_message)
    good = np.linspace(1.0, 2.0, 20)
    bad = good.copy()
    bad[1] = 0.0
    assert compiled(good) == with_message(good)
    with pytest.raises(AssertionError, match=r"x\[1\] = 0.0 is not positive"):
        compiled(bad)
    assert compiled(good) == with_message(good)
    assert len(nd.inspect(compiled).graphs) == 1  # no recompile, no break


def test_the_check_op_raises_its_own_error():
    op = ops.REGISTRY["asserted"]
    assert op(np.bool_(True)) == np.bool_(True)
    with pytest.raises(AssumptionFailed):
        op(np.bool_(False))
    with pytest.raises(TypeError):
        op(np.array([True, True]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.5, -1.0]), min_size=2, max_size=40))
def test_hypothesis_springs_eager(values):
    nd.reset()  # each example's own count (caches are per code object)
    pos = np.array(values)
    check_same(springs, pos, np.zeros(len(values)), graphs=1, breaks=0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 2.0, -1.0, np.nan]), min_size=1, max_size=40))
def test_hypothesis_message_and_negation_eager(values):
    nd.reset()  # each example's own count (caches are per code object)
    x = np.array(values)
    check_same(with_message, x, graphs=1, breaks=0)
    check_same(negated, x, graphs=1, breaks=0)


def test_assert_on_a_python_value_is_as_before():
    check_same(on_python_value, np.ones(2), 2, graphs=1, breaks=0)
    run = run_both(on_python_value, nd.compile(on_python_value), (np.ones(2), 0), {})
    assert type(run.exc) is AssertionError and str(run.exc) == "n"


def test_asserts_on_arrays_of_many_elements_still_break():
    report = quiet_explain(on_whole_array, np.ones(1))  # one element, not 0-d: a break
    assert report.graph_break_count > 0, str(report)
    # 3.13 compares and converts to bool in one instruction (no TO_BOOL): the break comes before
    # the comparison, which then runs in Python, where 3.11 and 3.12 graph it first
    check_same(on_whole_array, np.ones(1), graphs=1 if sys.version_info >= (3, 13) else 3,
               breaks=3)
    run = run_both(on_whole_array, nd.compile(on_whole_array), (np.ones(2),), {})
    assert type(run.exc) is ValueError


# -- numba ---------------------------------------------------------------------------------------
def test_numba_the_check_runs_inside_the_compiled_loop():
    pos, out = np.arange(20.0) ** 1.5, np.zeros(20)
    bad = pos.copy()
    bad[12] = bad[11]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback of the numba backend to eager
        compiled = nd.compile(springs, backend="numba")
        for args in [(pos, out), (bad, out), (pos, out)]:  # pass, fail, pass
            run = run_both(springs, compiled, args, {})
            if run.exc is None:
                assert_close(run.got, run.expected)
            assert_close(run.comp_args, run.plain_args, "args after the call")
        assert type(raises_as_python(springs, bad, out, backend="numba").exc) is AssertionError
    (record,) = loop_records(compiled)
    assert record.compiled and record.runs >= 2, str(record)
    assert "asserted" not in record.numpy_ops, str(record)


def test_numba_message_and_while_loop():
    for fn, good, bad in [(with_message, np.linspace(1.0, 3.0, 20), np.r_[np.ones(19), -2.0]),
                          (while_with_assert, np.array([1.0, 2.0]), np.array([0.0, -1.0]))]:
        compiled = nd.compile(fn, backend="numba")
        assert_close(compiled(good.copy()), fn(good.copy()))
        run = run_both(fn, compiled, (bad,), {})
        assert type(run.exc) is AssertionError
        assert_close(run.comp_args, run.plain_args)
        # (the loop, or the whole graph's one function around it when that is small)
        records = [r for r in loop_records(compiled) if r.runs]
        assert records, [str(r) for r in loop_records(compiled)]
        for record in records:
            assert record.compiled and "asserted" not in record.numpy_ops, str(record)
