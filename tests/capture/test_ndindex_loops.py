"""``for idx in np.ndindex(shape)`` of a shape known now, long enough to form: one ``fori_loop``
over the flat index whose variable is the index unravelled in C order (``(i // s0, i // s1 % n1,
..., i % nk)``, graph ints), so element reads and writes, neighbour arithmetic and nested
``ndindex`` loops stay in the graph (``capture/flow/ndindex_loops.py``). A short loop, a
loop whose variable is read after it, a loop left by ``break`` and an empty shape iterate
NumPy's index tuples as before. Each runs plain and compiled on copies of the same inputs
(eager bitwise, numba at its tolerance) with its graph and break counts."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same


def around(pos, offset, bound):
    return (pos + offset) % bound


def local_minima(a):
    """True where no neighbour of the 3 x 3 window (wrapping around the edges) is smaller."""
    found = np.ones(a.shape, bool)
    for pos in np.ndindex(a.shape):
        here = a[pos]
        for step in np.ndindex(3, 3):
            q = tuple(around(p, s - 1, n) for p, s, n in zip(pos, step, a.shape))
            found[pos] &= a[q] >= here
    return found


def weighted(a):
    out = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        out[idx] = a[idx] * idx[0] - idx[2] + idx[1] * 0.5
    return out


def rows(v):
    total = np.zeros(1)
    for (k,) in np.ndindex(v.shape):
        total[0] += v[k] * k
    return total


def last_index_read_after(a):
    for idx in np.ndindex(a.shape):
        a[idx] += 1.0
    return a, idx


def left_by_break(a):
    for idx in np.ndindex(a.shape):
        if idx[0] == 3:
            break
        a[idx] = -a[idx]
    return a



@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_long_ndindex_loops_are_one_graph_with_no_break(backend):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, (20, 30)).astype(np.float64)  # 600 x 9: past the unrolling limit
    check_same(local_minima, a, backend=backend, graphs=1, breaks=0)
    npdynamo.reset()
    check_same(weighted, rng.random((4, 5, 6)), backend=backend, graphs=1, breaks=0)
    npdynamo.reset()
    check_same(rows, rng.random(50), backend=backend, graphs=1, breaks=0)
    for fn, args in ((local_minima, (a,)), (weighted, (rng.random((4, 5, 6)),))):
        text = str(npdynamo.explain(fn)(*args))
        assert text.count("in the graph as one fori_loop") == 1  # (3 x 3: unrolled inside)


def test_what_does_not_form_iterates_numpys_tuples():
    a = np.random.default_rng(4).random((6, 5))
    check_same(last_index_read_after, a, backend="eager", graphs=1, breaks=0)  # unrolled
    npdynamo.reset()
    check_same(left_by_break, a, backend="eager", graphs=1, breaks=0)  # unrolled to the break
    npdynamo.reset()
    check_same(weighted, np.zeros((0, 5, 3)), backend="eager", graphs=1, breaks=0)  # no index
    assert "fori_loop" not in str(npdynamo.explain(last_index_read_after)(a.copy()))


def running_sum(a):
    s = 0  # a Python int that the first iteration makes a NumPy float
    for idx in np.ndindex(a.shape):
        s = s + a[idx] * (idx[0] + 1)
    return s


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_loop_whose_first_iteration_runs_before_it_keeps_its_index_tuples(backend):
    a = np.random.default_rng(5).random((6, 7))
    check_same(running_sum, a, backend=backend, graphs=1, breaks=0)
    assert "fori_loop" in str(npdynamo.explain(running_sum)(a))
