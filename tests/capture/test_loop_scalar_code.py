"""Scalar code inside formed loops (issue 25): reversed ranges, an ``if`` on data writing an
array element in place, a number a cond computes stored into an array, conditional
expressions on data, and a Python number that the first iteration turns into a NumPy scalar
(that iteration runs before the node). Each: plain against compiled (bitwise on eager, within
tolerance on numba), one graph where it forms, and the exact result (or a clean break) where
it must not."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo as nd
from tests.capture.test_for_formation import in_one_graph, quiet_explain
from tests.capture.test_triangular_loops import numba_matches
from tests.differential import check_same

RNG = np.random.default_rng(25)


def backward_recursion(x):
    y = np.zeros_like(x)
    y[-1] = x[-1]
    for j in range(x.shape[0] - 2, -1, -1):
        y[j] = 0.5 * y[j + 1] + x[j]
    return y


def reversed_with_slices(x):
    out = np.zeros_like(x)
    for j in range(x.shape[0] - 1, -1, -1):
        out[j] = x[j:].sum()
    return out


def reversed_index_read_after(x):
    total = 0.0
    for j in range(19, 1, -1):
        total = total + x[j]
    return total, j


def relax(dist):
    D = dist.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            d = D[i, 0] + D[0, k]
            if d < D[i, k]:
                D[i, k] = d
    return D


def relax_input_in_place(D):
    for i in range(D.shape[0]):
        if D[i] > 0.5:
            D[i] = 0.0
    return D


def written_with_a_view(x):
    y = x.copy()
    row = y[:3]
    for i in range(x.shape[0]):
        if y[i] > 0.5:
            y[i] = -1.0
    return y, row


def view_in_the_body(x):
    y = x.copy()
    for i in range(x.shape[0]):
        head = y[:3]
        if y[i] > 0.5:
            y[i] = -1.0
        y[0] += head[1]  # the view sees the write
    return y


def states(x, value):
    out = np.zeros(x.shape[0], dtype=np.int8)
    state = 0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            state = value
        out[i] = state
    return out


def sign_expression(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0 if x[i] > 0.5 else -x[i]
    return out


def running_sum(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_a_reversed_range_forms():
    report = in_one_graph(backward_recursion, RNG.random(30))
    assert any("range(x.shape[0] - 2, -1, -1)" in line for line in report.loops)
    numba_matches(nd.compile(backward_recursion, backend="numba"), backward_recursion,
                  (RNG.random(30),))


def test_a_reversed_index_bounds_slices():
    in_one_graph(reversed_with_slices, RNG.random(25))
    numba_matches(nd.compile(reversed_with_slices, backend="numba"), reversed_with_slices,
                  (RNG.random(25),))


def test_a_reversed_index_read_after_the_loop_has_its_last_value():
    result = check_same(reversed_index_read_after, RNG.random(20), graphs=1, breaks=0)(
        RNG.random(20))
    assert result[1] == 2


def test_an_if_on_data_writes_an_element_in_place():
    report = in_one_graph(relax, RNG.random((20, 20)), loops=2)
    assert any("in the graph as one cond" in line for line in report.loops)
    numba_matches(nd.compile(relax, backend="numba"), relax, (RNG.random((20, 20)),))


def test_an_if_writing_an_input_array_keeps_its_state():
    check_same(relax_input_in_place, RNG.random(20), graphs=1, breaks=0)


def test_an_if_writing_an_array_with_a_live_view_stays_exact():
    # the view made before the loop
    check_same(written_with_a_view, RNG.random(20), graphs=1, breaks=0)
    check_same(view_in_the_body, RNG.random(20), graphs=1, breaks=2)
    report = quiet_explain(view_in_the_body, RNG.random(20))
    assert any("cannot become an in-graph cond" in line for line in report.loops), report.loops


def test_a_number_a_cond_computes_is_stored_into_an_array():
    in_one_graph(states, RNG.random(20), 3)


def test_storing_an_out_of_range_number_raises_as_numpy_does():
    x = np.linspace(0, 1, 20)
    with pytest.raises(OverflowError):
        states(x, 300)
    check_same(states, x, 300, graphs=1, breaks=0)  # the same exception type and message


def test_a_conditional_expression_on_data_is_a_cond():
    in_one_graph(sign_expression, RNG.random(20))
    numba_matches(nd.compile(sign_expression, backend="numba"), sign_expression,
                  (RNG.random(20),))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.int8])
def test_a_python_number_made_a_numpy_scalar_by_the_first_iteration(dtype):
    x = (RNG.random(20) * 100).astype(dtype)
    report = in_one_graph(running_sum, x)
    assert any("its first iteration runs before the loop" in line for line in report.loops)
    got = nd.compile(running_sum)(x)
    assert type(got) is type(running_sum(x))  # int8 wraps as NumPy's does


@pytest.mark.parametrize("dynamic", [False, True])
def test_the_peeled_loop_at_other_lengths(dynamic):
    compiled = nd.compile(running_sum, dynamic=dynamic)
    # graphs so far: without dynamic shapes each length that runs the loop is its own entry
    # (length 0: an entry without a graph, s stays 0); with them, 1 is the peeled iteration alone
    counts = (1, 2, 2, 3, 4) if not dynamic else (1, 2, 2, 2, 2)
    for n, graphs in zip((20, 1, 0, 2, 35), counts, strict=True):
        check_same(running_sum, RNG.random(n), compiled=compiled, graphs=graphs, breaks=0)


def test_numba_writes_in_place_into_its_own_copies_only():
    """The compiled loop nest writes carried arrays in place (one copy before the outermost
    loop): the caller's arrays change only as in Python, an input written by the function
    included."""
    numba_matches(nd.compile(relax_input_in_place, backend="numba"), relax_input_in_place,
                  (RNG.random(20),))
    dist = RNG.random((20, 20))
    kept = dist.copy()
    numba_matches(nd.compile(relax, backend="numba"), relax, (dist,))
    assert np.array_equal(dist, kept)


def test_numba_range_checks_a_python_int_stored_into_int8():
    compiled = nd.compile(states, backend="numba")
    x = np.linspace(0, 1, 20)
    assert np.array_equal(compiled(x, 7), states(x, 7))
    with pytest.raises(OverflowError) as caught:
        compiled(x, 300)
    with pytest.raises(OverflowError) as plain:
        states(x, 300)
    assert str(caught.value) == str(plain.value)
