"""NumPy functions writing into their argument (np.copyto with where=, np.putmask,
np.fill_diagonal, np.put_along_axis) captured in one graph with the same write-back as
``x[mask] = v``: the argument itself is updated, views of it see the update, errors are NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.backends.compare import check_one_graph
from tests.differential import check_same

A = np.arange(12.0).reshape(3, 4)
M = A % 3 == 0


def copyto_where(a, m):
    np.copyto(a, -a, where=m)
    return a * 2


def copyto_plain(a, m):
    np.copyto(a[1], 7)  # through a view: reaches a
    np.copyto(a, np.arange(4), casting="unsafe")
    return a.sum()


def putmask_repeats(a, m):
    np.putmask(a, m, np.array([10.0, 20.0]))  # values repeat, as in NumPy
    return a + 0


def fill_diagonal(a, m):
    b = np.zeros((5, 3))
    np.fill_diagonal(b, np.array([1.0, 2.0]), wrap=True)
    np.fill_diagonal(a, 9.0)
    return b


def put_along(a, m):
    np.put_along_axis(a, np.argmax(a, axis=1, keepdims=True), 0.0, axis=1)
    np.put_along_axis(a[0], np.array([0, 2]), -5.0, axis=None)
    return a.max()


def view_sees_write(a, m):
    row = a[0]
    np.putmask(a, m, 0.0)
    return row * 1


CASES = [copyto_where, copyto_plain, putmask_repeats, fill_diagonal, put_along, view_sees_write]


@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_plain_and_compiled_agree_in_one_graph(fn):
    check_one_graph(fn, (A, M))


def test_the_argument_itself_is_written():
    a = A.copy()
    out = npdynamo.compile(copyto_where)(a, M)
    expected = A.copy()
    copyto_where(expected, M)
    assert np.array_equal(a, expected) and np.array_equal(out, expected * 2)


ERRORS = [
    lambda a: np.copyto(a, np.ones(3)),
    lambda a: np.copyto(a.astype(int), 1.5),
    lambda a: np.copyto(a.astype(int), a),
    lambda a: np.copyto(a, 1.0, where=np.ones(3, bool)),
    lambda a: np.copyto(a, 1.0, where=a),
    lambda a: np.copyto(a, 1.0, casting="bogus"),
    lambda a: np.putmask(a, np.ones(5, bool), 1.0),
    lambda a: np.putmask(a.astype(int), a > 1, a),
    lambda a: np.fill_diagonal(a[0], 1.0),
    lambda a: np.fill_diagonal(np.zeros((2, 3, 4)), 1.0),
    lambda a: np.put_along_axis(a, np.zeros((3, 1), int), 5.0, axis=2),
    lambda a: np.put_along_axis(a, np.zeros(3, int), 5.0, axis=1),
    lambda a: np.put_along_axis(a, np.zeros((3, 1)), 5.0, axis=1),
    lambda a: np.put_along_axis(a, np.zeros((3, 1), int), 5.0, axis=None),
    lambda a: np.put_along_axis(a, np.full((3, 1), 9), 5.0, axis=1),  # found at run time
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_numpys_and_nothing_is_written(i):
    # the capture sees the call raise and the frame reruns in Python: no graph; except the
    # last, whose error the graph finds when it runs
    check_same(ERRORS[i], A, graphs=1 if i == len(ERRORS) - 1 else 0, breaks=0)


# -- x[mask] op= v -------------------------------------------------------------------------
def masked_updates(a, m):
    a[a > 4] += 1.5
    a[m] *= -2
    a[a < 0] //= 3
    b = a.copy()
    b[b > 1] -= a[0, :1]  # shape (1,): fits any number of selected elements
    return b


def masked_update_of_rows(a, m):
    a[m[:, 0]] += np.arange(4.0)  # rows: the value fits (k, 4) for any k
    return a.sum(axis=0)


def masked_update_value_changes_the_array(a, m):
    def bump():
        a[0, 0] = 100.0  # runs between the read and the store
        return 1.0

    a[m] += bump()
    return a


def masked_update_needing_the_count(a, m):
    a[m] += np.arange(4.0)  # fits only if exactly 4 elements are selected: a break
    return a


def masked_update_int_by_float(a, m):
    i = a.astype(np.int64)
    i[m] += 1.5  # NumPy's casting error
    return i


@pytest.mark.parametrize("fn", [masked_updates, masked_update_of_rows,
                                masked_update_value_changes_the_array])
def test_masked_augmented_assignment_is_one_graph(fn):
    check_one_graph(fn, (A, M))


@pytest.mark.parametrize("fn,graphs,breaks", [
    # the update breaks, then its resume function breaks again at the store
    (masked_update_needing_the_count, 1, 2),
    (masked_update_int_by_float, 0, 0),  # raises: the frame reruns in Python
])
def test_masked_augmented_assignment_breaks_or_raises_as_numpy(fn, graphs, breaks):
    check_same(fn, A, M, graphs=graphs, breaks=breaks)
    check_same(fn, A, M, backend="numba", graphs=graphs, breaks=breaks)


# -- y[mask] = f(x[mask], ...) ---------------------------------------------------------------
def masked_expressions(a, m):
    a[a > 4] = a[a > 4] - 4  # the mask recomputed: the same value
    b = a * 3
    b[m] = b[m] ** 2 + a[m] / 2 - 1
    b[b > 10] = 10
    return b


def masked_rows(a, m):
    rows = m[:, 0]
    a[rows] = a[rows] * -1.0 + 0.5
    return a


def escaping_selections(a, m):
    picked = a[m]  # returned: computed in Python at a break
    total = np.cumsum(a[a > 2])  # an op on a selection (np.sum folds it, this breaks)
    return picked, total, (a[m] * 2).sum()


def selection_under_another_mask(a, m):
    a[a > 3] = a[m] + 1  # sizes may differ: NumPy decides (a break)
    return a


def mandelbrot_step(c, steps):
    z = np.zeros(c.shape, np.complex128)
    n = np.zeros(c.shape, np.int64)
    for k in range(steps):
        inside = np.less(np.abs(z), 4.0)
        n[inside] = k
        z[inside] = z[inside] ** 2 + c[inside]
    return z, n


@pytest.mark.parametrize("fn", [masked_expressions, masked_rows])
def test_masked_expressions_are_one_graph(fn):
    check_one_graph(fn, (A, M))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_masked_loop_is_one_graph(backend):
    c = np.linspace(-2, 1, 12).reshape(3, 4) + 1j * np.linspace(-1, 1, 12).reshape(4, 3).T
    expected = mandelbrot_step(c, 6)
    z, n = npdynamo.compile(mandelbrot_step, backend=backend, fullgraph=True)(c, 6)
    assert np.array_equal(n, expected[1]) and z.dtype == expected[0].dtype
    assert np.allclose(z, expected[0], rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("fn,graphs", [
    # the resume function after the cumsum recompiles for the second mask's selection size
    (escaping_selections, (2, 3, 3)),
    (selection_under_another_mask, (1, 1, 1)),
])
def test_other_uses_of_selections_break_and_stay_exact(fn, graphs):
    check_same(fn, A, M, graphs=graphs[0], breaks=1)
    check_same(fn, A, np.ones_like(M), graphs=graphs[1], breaks=1)
    check_same(fn, A, A > 3, graphs=graphs[2], breaks=1)
    assert npdynamo.explain(fn)(A.copy(), A > 3).graph_break_count >= 1
