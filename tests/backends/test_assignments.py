"""The numba program's assignments (``backends/numba/assignments.py``): a ``setitem`` into an
array the graph made assigns in place, and ``y[n:] = np.repeat(x, k)`` writes the repeated
values straight into ``y`` (NumPy's values bit for bit; NumPy's own steps where the loop would
not be exact: another dtype, memory shared with ``x``, a 2-d ``x``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from tests.differential import check_same


@pytest.fixture(autouse=True)
def _untuned(monkeypatch):
    """The program itself runs every call (the tuner would time NumPy's graph against it and
    might keep that one, and drops a form that raises)."""
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        yield


def repeating(x, k):  # numpy-benchmarks' kernel, with the dtype of x
    n = x.shape[0]
    y = np.empty(n * (1 + k), x.dtype)
    y[0:n] = x[0:n]
    y[n:] = np.repeat(x, k)
    return y


def into_floats(x):  # ints repeated into a float array: NumPy's cast on assignment
    y = np.zeros(x.shape[0] * 3 + 1)
    y[1:] = np.repeat(x, 3)
    return y


def overlapping(x):  # the repeated values are read from the array being written
    y = x + 0.5
    y[2:] = np.repeat(y[:3], 2)
    return y


def flattened(x):  # a 2-d array repeated with no axis: flattened first
    y = np.ones(x.size * 2 + 2, x.dtype)
    y[2:] = np.repeat(x, 2)
    return y, y.sum()


def both_uses(x):  # the repeated array is also returned: it must exist
    r = np.repeat(x, 2)
    y = np.zeros(r.shape[0] + 1)
    y[1:] = r
    return y, r


def _numba(fn, *args, compiled_calls):
    check_same(fn, *args, backend="numba", graphs=1, breaks=0)
    (report,) = npdynamo.explain(fn, backend="numba")(*args).backend_reports
    assert report.compiled_calls == compiled_calls


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["float64", "float32", "int64", "int8", "uint16", "bool", "complex128"]),
       st.integers(0, 300), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_repeat_into_its_slice_gives_numpys_array(dtype, n, k, seed):
    npdynamo.reset()  # (each example a new dtype and size: no recompile limit across them)
    x = (np.random.default_rng(seed).normal(0, 50, n) + 0.5).astype(dtype)
    _numba(repeating, x, k, compiled_calls=["repeat"])


def test_a_strided_argument_and_the_loop_form_in_the_report():
    x = np.arange(40.0)[::2]
    _numba(repeating, x, 3, compiled_calls=["repeat"])
    (report,) = npdynamo.explain(repeating, backend="numba")(x, 3).backend_reports
    assert ("repeat", "repeat: its own compiled loop, into the slice it is assigned to") in \
        report.not_fused


def test_what_the_loop_does_not_take_runs_numpys_steps():
    ints = np.arange(-5, 6, dtype=np.int16)
    _numba(into_floats, ints, compiled_calls=["repeat"])
    _numba(overlapping, np.arange(8.0), compiled_calls=["repeat"])
    _numba(flattened, np.arange(12, dtype=np.int32).reshape(3, 4), compiled_calls=["repeat"])
    _numba(both_uses, np.arange(5.0), compiled_calls=[])


def test_setitems_into_a_made_array_keep_python_semantics():
    def fn(a):
        y = np.empty(a.shape[0] * 2)
        y[: a.shape[0]] = a * 2.0
        y[a.shape[0]:] = a + 1.0
        return y

    def with_view(a):  # a view taken before the write sees it, as in Python
        y = a * 2.0
        v = y[:3]
        y[1:4] = a[:3] + 1.0
        return y, v, v.sum()

    a = np.random.default_rng(1).random(50)
    for f in (fn, with_view):
        check_same(f, a, backend="numba", graphs=1, breaks=0)


def read_before_and_after(a):
    """An early read of a view (``s``) that fusion could join with a later one (``t``) into a
    kernel running after the assignment: in place, it would read the new values."""
    b = a * 1.0
    row = b[0]
    s = row + 1.0
    b[:] = b * 0.5
    t = s + row
    return t, b


def read_before_and_after_in_a_loop(a):
    s = np.zeros(a.shape[1])
    for i in range(len(a)):
        row = a[i]
        s = s + row
        a[:] = a * 0.5  # the loop's own copy of a, written in place
        s = s + row
    return s, a


def read_by_a_slice_before_and_after(a, n):
    b = a * 1.0
    for i in range(n):
        head = b[i, :3]
        u = head * 2.0
        b[i, 1:4] = b[i, :3] + 1.0
        b[i, :3] = u + head
    return b


@pytest.mark.parametrize("fn,args", [
    (read_before_and_after, (np.random.default_rng(2).random((6, 5)),)),
    (read_before_and_after_in_a_loop, (np.random.default_rng(3).random((20, 30)),)),
    (read_by_a_slice_before_and_after, (np.random.default_rng(4).random((12, 6)), 12)),
])
def test_a_reader_fused_after_an_assignment_reads_the_old_values_python_read(fn, args):
    """Each reader of the array's memory that comes before the assignment in the code runs
    before it in the program (or the assignment copies): the results are Python's."""
    check_same(fn, *args, backend="numba", graphs=1, breaks=0)
