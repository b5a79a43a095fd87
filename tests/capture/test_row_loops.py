"""``for row in a`` and ``for i, row in enumerate(a, start)`` over an array of the graph, long
enough to form: one ``fori_loop`` over ``range(len(a))`` whose variable is the view ``a[i]``
indexed when its iteration starts (``capture/flow/row_loops.py``). Writes into ``a`` by earlier
iterations are seen by later rows, a rebound ``a`` leaves the loop iterating the array it
started with, and what cannot be formed (a short loop, the variable read after the loop, a
body that leaves the loop, a 0-d array) iterates the rows as before. Each runs plain and
compiled on copies of the same inputs with its graph and break counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from tests.differential import check_same

RNG = np.random.default_rng(11)
N = 40  # rows: past config.for_loop_min_trips


def squares(v):
    acc = np.zeros(1)
    for x in v:
        acc += x * x
    return acc


def column_sums(a):
    s = np.zeros(a.shape[1])
    for row in a:
        s = s + row * row
    return s


def weighted_rows(a, out):
    for i, row in enumerate(a):
        out[i] = row.sum() * i
    return out


def counted_from(a, out):
    for k, row in enumerate(a, 3):
        out[k - 3] = row.max() + k
    return out


def counted_from_keyword(a, out):
    for k, row in enumerate(a, start=-2):
        out[k + 2] = row[0] - k
    return out


def carry_down(a):
    """Each row adds half of itself to the next one: later rows see the earlier writes."""
    n = len(a)
    for i, row in enumerate(a):
        a[(i + 1) % n] += row * 0.5
    return a


def check_mask(db, mask=(1, 0, 1)):
    out = np.zeros(db.shape[0], dtype=bool)
    for idx, line in enumerate(db):
        target, vector = line[0], line[1:]
        if (mask == np.bitwise_and(mask, vector)).all():
            if target == 1:
                out[idx] = 1
    return out


def pairs(a):
    s = np.zeros(1)
    for x, y in a:
        s = s + x * y
    return s


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_rows_and_enumerate_are_one_fori_loop(backend):
    a = RNG.random((N, 3))
    cases = [
        (squares, (RNG.random(N),)),
        (column_sums, (a,)),
        (weighted_rows, (a, np.zeros(N))),
        (counted_from, (a, np.zeros(N))),
        (counted_from_keyword, (a, np.zeros(N))),
        (carry_down, (a,)),
        (check_mask, (RNG.integers(0, 2, (N, 4)).astype(bool),)),
        (pairs, (RNG.random((N, 2)),)),
    ]
    for fn, args in cases:
        npdynamo.reset()
        check_same(fn, *args, backend=backend, graphs=1, breaks=0)
        assert "in the graph as one fori_loop" in str(npdynamo.explain(fn)(*args)), fn.__name__


def normalise(a):
    for row in a:
        row /= row.sum()  # a write into a through the row
    return a


def add_first(a):
    for row in a:
        row += a[0]  # row 0 doubled first: the later rows add its new value
    return a


def nested(a):
    s = np.zeros(1)
    for row in a:
        for x in row:  # (3 items: unrolled inside the body)
            s = s + x
    return s


def running_total(v):
    s = 0  # a Python int the first iteration makes a NumPy float: it runs before the node
    for x in v:
        s = s + x
    return s


def aliased(a):
    b = a
    for row in a:
        b[0] += row
    return a


def of_a_view(a):
    s = np.zeros(a.shape[1])
    for row in a[1:]:
        s = s + row
        a[0] += 1.0
    return s, a


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_writes_through_the_rows_are_into_the_array(backend):
    a = RNG.random((N, 3)) + 0.1
    for fn, arg in ((normalise, a), (add_first, a), (nested, a), (running_total, a[:, 0])):
        npdynamo.reset()
        check_same(fn, arg, backend=backend, graphs=1, breaks=0)
        assert "in the graph as one fori_loop" in str(npdynamo.explain(fn)(arg.copy()))


def seen_by_the_row(a):
    s = np.zeros(a.shape[1])
    for row in a:
        s = s + row
        a[:] = a * 0.5  # the row is a view: it sees the write in its own iteration
        s = s + row
    return s, a


def nested_rows(a, out):
    for i, row in enumerate(a):
        for j, x in enumerate(row):  # (a row of 30: a loop node inside the loop node)
            out[i, j] = x * i - j
    return out


def counted_from_an_argument(a, k):
    out = np.zeros(len(a))
    for i, row in enumerate(a, k):
        out[i - k] = row.max() + i
    return out


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_in_iteration_writes_nested_loops_and_a_start_argument(backend):
    a = RNG.random((20, 30))
    for fn, args, loops in ((seen_by_the_row, (a,), 1), (nested_rows, (a, np.zeros(a.shape)), 2),
                            (counted_from_an_argument, (a, 4), 1)):
        npdynamo.reset()
        check_same(fn, *args, backend=backend, graphs=1, breaks=0)
        report = str(npdynamo.explain(fn)(*args))
        assert report.count("in the graph as one fori_loop") == loops, report


def seen_by_the_row_of_a_range(a):
    s = np.zeros(a.shape[1])
    for i in range(len(a)):
        row = a[i]
        s = s + row
        a[:] = a * 0.5
        s = s + row
    return s, a


@pytest.mark.parametrize("fn", [seen_by_the_row, seen_by_the_row_of_a_range])
def test_a_row_read_after_its_array_is_written_on_numba(fn):
    """Fusion once joined the two sums into one kernel after the write, in place: the first sum
    then read the new row (``inplace.readers_run_first``)."""
    npdynamo.reset()
    check_same(fn, RNG.random((20, 30)), backend="numba", calls=1)


def test_a_write_into_the_array_by_another_name_unrolls():
    a = RNG.random((N, 3))
    for fn in (aliased, of_a_view):  # the body writes into what it iterates, not through it
        npdynamo.reset()
        check_same(fn, a, graphs=1, breaks=0)
        assert "fori_loop" not in str(npdynamo.explain(fn)(a.copy()))


def dot_rows(a, b):
    out = np.zeros(min(len(a), len(b)))
    for i, (x, y) in enumerate(zip(a, b)):  # (a nested target: unrolled)
        out[i] = x @ y
    s = np.zeros(1)
    for x, y in zip(a, b):  # stops at the shorter
        s += x @ y
    return out, s


def three(a, b, c):
    s = np.zeros(a.shape[1])
    for x, y, z in zip(a, b, c):
        s = s + x * y - z
    return s


def zip_itself(a):
    for x, y in zip(a, a):
        x *= 2.0  # y is the same row: it sees the write
        a[0] += y
    return a


def zip_strict(a, b):
    s = np.zeros(1)
    for x, y in zip(a, b, strict=True):
        s += x @ y
    return s


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_zip_of_arrays_is_one_fori_loop_to_the_shortest(backend):
    a, b, c = RNG.random((N, 3)), RNG.random((N + 7, 3)), RNG.random((N - 3, 3))
    for fn, args in ((dot_rows, (a, b)), (dot_rows, (b, a)), (three, (a, b, c)),
                     (zip_itself, (a,))):
        npdynamo.reset()
        check_same(fn, *args, backend=backend, graphs=1, breaks=0)
        assert "in the graph as one fori_loop" in str(npdynamo.explain(fn)(*args)), fn.__name__


def test_zip_that_does_not_form_is_zip_as_before():
    a = RNG.random((20, 3))
    check_same(zip_strict, a, a[::-1].copy(), graphs=1, breaks=0)  # strict: unrolled
    npdynamo.reset()
    check_same(zip_strict, a, a[:19].copy())  # ValueError at the end, as Python's
    npdynamo.reset()
    check_same(three, a, a.copy(), [[1.0, 2.0, 3.0]] * 20, graphs=1, breaks=0)  # a list: unrolled
    compiled = npdynamo.compile(three, dynamic=True)
    for n in (30, 41):  # sizes of their own per call: the shortest is not known at capture
        check_same(three, RNG.random((n, 2)), RNG.random((n + 1, 2)), RNG.random((n, 2)),
                   compiled=compiled, calls=1)


def test_check_mask_of_the_benchmark_is_one_graph():
    db = np.array(np.random.default_rng(0).integers(0, 2, (1000, 4)), dtype=bool)
    check_same(check_mask, db, graphs=1, breaks=0)  # (its nested ifs: conds on 3.13 too)


def test_rows_of_ints_and_bools_in_a_condition():
    def count_positive(a):
        n = np.zeros(2, np.int64)
        for row in a:
            if row.sum() > 0:
                n[0] += 1
            else:
                n[1] -= row.min()
        return n

    check_same(count_positive, RNG.integers(-3, 3, (N, 4)), graphs=1, breaks=0)


def rebound(a):
    s = np.zeros(a.shape[1])
    for row in a:
        s = s + row
        a = a * 2.0  # the iterator keeps the array the loop started with
    return s, a


def written_then_rebound(a):
    s = np.zeros(a.shape[1])
    for row in a:
        s = s + row
        a[0] += 1.0
        a = a * 2.0
    return s, a


def test_a_rebound_array_is_not_what_the_loop_iterates():
    a = RNG.random((N, 2))
    check_same(rebound, a, graphs=1, breaks=0)
    assert "one fori_loop" in str(npdynamo.explain(rebound)(a.copy()))
    npdynamo.reset()
    check_same(written_then_rebound, a[:20].copy(), graphs=1, breaks=0)  # unrolled


def row_read_after(a):
    s = np.zeros(a.shape[1])
    for row in a:
        s = s + row
    return s, row


def left_by_break(a):
    s = np.zeros(a.shape[1])
    for row in a:
        if row[0] > 0.7:
            break
        s = s + row
    return s


def printed(a):
    s = 0.0
    for row in a:
        s += float(row[0])
    return s


def test_what_does_not_form_iterates_the_rows_as_before():
    a = RNG.random((20, 3))
    check_same(row_read_after, a, graphs=1, breaks=0)  # unrolled
    assert "fori_loop" not in str(npdynamo.explain(row_read_after)(a.copy()))
    npdynamo.reset()
    check_same(left_by_break, a)  # a break on the data, as before
    npdynamo.reset()
    check_same(printed, a)  # float() of a row's element: Python runs the loop
    npdynamo.reset()
    check_same(column_sums, np.zeros((0, 3)), graphs=1, breaks=0)  # no row: no iteration
    npdynamo.reset()
    check_same(weighted_rows, np.zeros((0, 3)), np.zeros(0), graphs=0, breaks=0)


def test_a_0d_array_raises_as_python():
    def over(a):
        s = np.zeros(1)
        for x in a:
            s = s + x
        return s

    def enumerated(a):
        s = np.zeros(1)
        for i, x in enumerate(a):
            s = s + x * i
        return s

    check_same(over, np.array(3.0))  # TypeError: iteration over a 0-d array
    check_same(enumerated, np.array(3.0))


def test_rows_of_a_symbolic_first_dimension_reuse_the_graph():
    rows = npdynamo.compile(weighted_rows, dynamic=True)
    elements = npdynamo.compile(squares, dynamic=True)
    for n in (30, 45, 61):
        check_same(weighted_rows, RNG.random((n, 3)), np.zeros(n), compiled=rows, calls=1,
                   graphs=1, breaks=0)
        check_same(squares, RNG.random(n), compiled=elements, calls=1, graphs=1, breaks=0)
    a = RNG.random((30, 3))
    npdynamo.mark_dynamic(a, 0)
    report = str(npdynamo.explain(column_sums)(a))
    assert "the bounds are symbolic sizes" in report, report


DTYPES = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.bool_])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), m=st.integers(1, 4), dtype=DTYPES, start=st.integers(-5, 5))
def test_generated_shapes_and_dtypes(n, m, dtype, start):
    npdynamo.reset()
    a = (RNG.random((n, m)) * 10 - 3).astype(dtype)

    def kernel(a, out):
        for i, row in enumerate(a, start):
            out[i - start] = (row * 2).sum() + i
        return out

    check_same(kernel, a, np.zeros(n), calls=1, graphs=int(n > 0), breaks=0)
    npdynamo.reset()
    check_same(column_sums, a, calls=1, graphs=1, breaks=0)
