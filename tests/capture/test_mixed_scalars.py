"""``capture/mixed_scalars.py``: a float or ``np.float64`` that the data decides (Python's
``max``/``min`` of both kinds) stays in the graph, carried by formed loops and boxed at the
return as plain Python makes it. Every result's *type* is compared (``check_same``), and each
program runs on data where it is a Python float and on data where it is an ``np.float64``.
The corpus kernel is also in ``test_loop_corpus.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo as nd
from benchmarks.loop_kernels import smith_waterman
from npdynamo.capture.mixed_scalars import (
    box,
    float_like,
    joined,
    may_be_one_object,
    widen_key,
)
from npdynamo.capture.values import ArrayValue, Const, MixedScalarValue
from tests.differential import check_same, check_same_warnings

BACKENDS = ["eager", "numba"]
N = 20  # above config.for_loop_min_trips: the loops form


# -- the kernel ------------------------------------------------------------------------------
def _alignment(kind: str):
    r = np.random.default_rng(5)
    if kind == "positive":  # matches: best is an np.float64 (an H entry)
        return r.integers(0, 4, N), r.integers(0, 4, N + 3), 2.0, -1.0, 1.0
    if kind == "negative":  # no match scores above 0: best stays the Python float 0.0
        return np.zeros(N, np.int64), np.ones(N + 3, np.int64), 2.0, -1.0, 1.0
    # ties: a match of +1 then a mismatch of -1 gives an np.float64 0.0 beside the float 0.0
    return np.zeros(N, np.int64), np.zeros(N + 3, np.int64), 1.0, -1.0, 5.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind, want", [("positive", np.float64), ("negative", float),
                                        ("ties", np.float64)])
def test_smith_waterman_one_graph_with_the_winners_type(backend, kind, want):
    args = _alignment(kind)
    assert type(smith_waterman(*args)[1]) is want
    check_same(smith_waterman, *args, backend=backend, graphs=1, breaks=0)


def test_smith_waterman_one_entry_serves_both_kinds():
    compiled = nd.compile(smith_waterman)
    for kind in ("negative", "positive", "negative"):
        check_same(smith_waterman, *_alignment(kind), compiled=compiled, calls=1, graphs=1,
                   breaks=0)
    assert len(nd.inspect(compiled).graphs) == 1


@settings(max_examples=15, deadline=None)
@given(s=st.lists(st.integers(0, 3), min_size=N, max_size=N + 4),
       t=st.lists(st.integers(0, 3), min_size=N, max_size=N + 4),
       match=st.sampled_from([0.0, 1.0, 2.0]), mismatch=st.sampled_from([-2.0, -1.0, 0.0]),
       gap=st.sampled_from([0.5, 1.0, 3.0]))
def test_generated_alignments(s, t, match, mismatch, gap):
    nd.reset()
    check_same(smith_waterman, np.array(s), np.array(t), match, mismatch, gap, calls=1,
               graphs=1, breaks=0)


# -- other spellings of a running maximum -------------------------------------------------------
def running_max(x):
    best = 0.0
    for i in range(x.shape[0]):
        best = max(best, x[i])
    return best


def running_min(x):
    best = 0.0
    for i in range(x.shape[0]):
        best = min(x[i], best)
    return best


def max_of_three_then_abs(x):
    best = 0.0
    for i in range(1, x.shape[0]):
        h = max(0.0, x[i], x[i - 1] - 1.0)
        best = max(best, abs(-h))
    return best


def conditional_expression(x):
    best = 0.0
    for i in range(x.shape[0]):
        h = max(0.0, x[i], x[i] * 0.5)
        best = h if h > best else best
    return best


def if_statement(x):
    best = 0.0
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best


def stored_and_returned(x):
    out = np.zeros(x.shape[0])
    best = 0.0
    for i in range(x.shape[0]):
        h = max(0.0, x[i], x[i] * 2.0)
        out[i] = h
        best = max(best, h * x[i])  # an np.float64 times it: an np.float64 for both kinds
    return out, best


PROGRAMS = [running_max, running_min, max_of_three_then_abs, conditional_expression,
            if_statement, stored_and_returned]
UP = np.linspace(-3.0, 5.0, N)
DOWN = -np.arange(1.0, N + 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [UP, DOWN, np.abs(UP)], ids=["up", "down", "positive"])
def test_spellings_one_graph(backend, fn, x):
    check_same(fn, x, backend=backend, graphs=1, breaks=0)


def test_the_data_picks_the_type():
    # (the inputs above reach both kinds for every program)
    assert type(running_max(UP)) is np.float64 and type(running_max(DOWN)) is float
    assert type(running_min(UP)) is np.float64 and type(running_min(np.abs(UP))) is float
    assert type(if_statement(DOWN)) is float and type(conditional_expression(DOWN)) is float


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_and_signed_zeros_as_python_compares(backend):
    x = np.zeros(N)
    x[3], x[5], x[7] = -0.0, np.nan, 2.0
    for data in (x, -x, np.where(np.isnan(x), 0.0, -0.0)):
        compiled = check_same(running_max, data, backend=backend, graphs=1, breaks=0)
        got, want = compiled(data), running_max(data)
        assert math.copysign(1.0, got) == math.copysign(1.0, want)
        assert type(got) is type(want)


# -- what stays a graph break, and is still exact ----------------------------------------------
def times_python_float(x):
    h = max(0.0, x[0], x[1])
    return h * 10.0  # float * float never warns; np.float64 warns on overflow


def its_type(x):
    h = max(0.0, x[0], x[1])
    return type(h)


def identity(x):
    a = x[0]
    h = max(0.0, a, x[1])
    return h is a


def truth(x):
    h = max(0.0, x[0], x[1])
    return 1.0 if h else 2.0


def numpy_call(x):
    h = max(0.0, x[0], x[1])
    return np.sqrt(h)


def into_float32(x):
    y = np.zeros(2, np.float32)
    y[0] = max(0.0, x[0], x[1])
    return y


@pytest.mark.parametrize("fn, why, graphs", [
    (times_python_float, "the operator *", 1), (its_type, "isinstance()/type()", 1),
    # (at the break, h and a may be one object: the frame runs in Python)
    (identity, "the identity of", 0), (truth, "a branch depends on", 1),
    (numpy_call, "a call with a float or numpy.float64", 1),
    (into_float32, "other than a float64 array", 1),
])
@pytest.mark.parametrize("x", [np.array([-1.0, -2.0]), np.array([1.0, 3.0]),
                               np.array([1e308, 0.0])], ids=["float", "float64", "large"])
def test_uses_that_depend_on_the_kind_break(fn, why, graphs, x):
    check_same_warnings(fn, x, graphs=graphs, breaks=1)  # (1e308 * 10.0: NumPy's warning)
    report = nd.explain(fn)(x)
    assert any(why in b.reason for b in report.break_reasons), report.break_reasons


def same_object_twice(x):
    h = max(0.0, x[0], x[1])
    return h, [h, h]


def winner_and_candidate(x):
    a = x[0]
    h = max(0.0, a, x[1])
    return h, a  # h is a when a wins


def two_carried(x):
    best = h = 0.0
    for i in range(x.shape[0]):
        h = max(0.0, x[i])
        best = max(best, h)
    return best, h  # best is h when the last one wins


@pytest.mark.parametrize("x", [np.array([-1.0, -2.0]), np.array([1.0, 3.0])])
def test_one_object_however_often_it_is_returned(x):
    got = check_same(same_object_twice, x, graphs=1, breaks=0)(x)
    assert got[0] is got[1][0] is got[1][1]


@pytest.mark.parametrize("fn, x", [
    (winner_and_candidate, np.array([5.0, 1.0])), (winner_and_candidate, np.array([-5.0, -1.0])),
    (two_carried, UP), (two_carried, DOWN),
])
def test_a_float_that_may_be_its_winner_object_is_not_boxed_apart(fn, x):
    """Python's winner is the item itself: a float handed back beside it may be that object,
    so the frame does not hand them back from a graph (it runs in Python there)."""
    want = fn(x)
    compiled = check_same(fn, x, graphs=0, breaks=1)
    got = compiled(x)
    assert (got[0] is got[1]) == (want[0] is want[1])
    report = nd.explain(fn)(x)
    assert "may be the same object" in str(report), str(report)


# -- the module's own functions ----------------------------------------------------------------
def test_box_gives_each_kind_exactly():
    assert type(box(np.float64(2.5), np.True_)) is np.float64
    assert type(box(np.float64(2.5), np.False_)) is float
    assert math.copysign(1.0, box(np.float64(-0.0), False)) == -1.0
    assert math.isnan(box(np.float64("nan"), False))


def test_may_be_one_object_knows_the_candidates():
    a, b, other = ArrayValue.__new__(ArrayValue), Const(0.5), Const(2.5)
    folded = MixedScalarValue(Const(np.float64(0.5)), Const(np.False_), (a, b))
    assert not may_be_one_object(folded, other)
    assert may_be_one_object(folded, b) and may_be_one_object(folded, Const(b.value))
    carried = MixedScalarValue(Const(np.float64(0.5)), Const(np.False_))
    assert may_be_one_object(carried, other) and may_be_one_object(folded, carried)
    assert not may_be_one_object(folded, folded) and not may_be_one_object(folded, Const(1))


def test_float_like_and_joined_read_no_value():
    python, numpy = Const(1.5), Const(np.float64(1.5))
    assert float_like(python) and float_like(numpy)
    assert not float_like(Const(1)) and not float_like(Const(np.float32(1.0)))
    both = joined(python, numpy)
    assert both is not None and all(isinstance(v, MixedScalarValue) for v in both)
    assert [bool(v.numpy.value) for v in both] == [False, True]
    assert joined(python, Const(2.0)) is None  # one kind already
    assert joined(python, Const(1)) is None  # an int: no float
    assert not isinstance(both[0].number, ArrayValue)  # no node: it stays in its branch


def test_widen_key_names_the_loop_and_the_local():
    code = running_max.__code__
    assert widen_key(code, 7, "best") == widen_key(code, 7, "best")
    assert widen_key(code, 7, "best") != widen_key(code, 7, "h")
