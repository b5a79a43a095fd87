"""``f(x[mask]).sum()`` and ``.mean()``: one graph (the selection is never a graph value), bitwise
NumPy on the eager backend, and on numba a masked loop in one kernel (no NumPy call left) at the
kernels' tolerances; a mask over leading axes only stays a NumPy call, still one graph."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.backends.compare import check_one_graph, not_fused

rng = np.random.default_rng(5)


def lennard_jones(cluster):
    diff = cluster[:, np.newaxis, :] - cluster[np.newaxis, :, :]
    d = np.triu(np.sqrt((diff * diff).sum(-1)))
    r = d[d > 1e-6]
    sr6 = (1. / r) ** 6
    return (4. * (sr6 * sr6 - sr6)).sum()


def masked_mean(x, y):
    m = x > 0.25
    return (x[m] * 2 - y[m]).mean(), x[m].sum()


def count_and_mean_of_ints(a):
    m = a % 3 == 0
    return (a[m] > 4).sum(), a[m].mean(), (a[m] * a[m]).sum()


def empty_selection(x):
    return x[x > 10].mean(), x[x > 10].sum()


def rows_selected(x, keep):
    return (x[keep] * 2).sum()


CASES = [
    (lennard_jones, (rng.random((40, 3)),)),
    (masked_mean, (rng.random((30, 7)), rng.random((30, 7)))),
    (masked_mean, (rng.random(3000).astype(np.float32), rng.random(3000).astype(np.float32))),
    (count_and_mean_of_ints, (rng.integers(-9, 9, (6, 50)),)),
    (count_and_mean_of_ints, (rng.integers(-9, 9, 50).astype(np.int8),)),
    (empty_selection, (rng.random(20),)),
]


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.parametrize(("fn", "args"), CASES, ids=[f"{c[0].__name__}-{i}"
                                                     for i, c in enumerate(CASES)])
def test_masked_reduction_is_one_graph_and_a_masked_loop(fn, args):
    with np.errstate(all="ignore"):
        check_one_graph(fn, args)
        calls = not_fused(fn, args)
    assert not [c for c in calls if c.startswith("masked_reduce")], calls


def test_a_mask_over_leading_axes_stays_a_numpy_call():
    x, keep = rng.random((5, 4)), np.array([True, False, True, True, False])
    check_one_graph(rows_selected, (x, keep))
    assert any(c.startswith("masked_reduce") for c in not_fused(rows_selected, (x, keep)))


def test_masked_sum_with_arguments_breaks_but_runs():
    def f(x):
        return x[x > 0.5].sum(axis=0)

    x = rng.random(10)
    out = npdynamo.explain(f)(x)
    assert out.graph_break_count == 1 and "arguments" in str(out)
    assert npdynamo.compile(f)(x) == f(x)


# -- masked writes: y[mask] = f(x[mask], ...) and y[mask] = number -------------------------------
def escape_step(z, c, n, count, horizon):
    inside = np.abs(z) < horizon
    count[inside] = n
    z[inside] = z[inside] ** 2 + c[inside]
    return z, count


def masked_writes_of_numbers(x, k, small):
    m = x > 0.5
    y = x.copy()
    y[m] = 2.5
    ints = (x * 10).astype(np.int64)
    ints[m] = k  # a dynamic int into int64
    ints[~m] = True
    small[m] = 100  # in int8's range
    return y, ints, small


def masked_writes_numpy_checks(x, small, k):
    m = x > 0.5
    ints = (x * 10).astype(np.int64)
    ints[m] = 2.75  # NumPy truncates a float written into ints: a NumPy call
    small[m] = k  # an int (a constant of the graph) out of int8's range: a NumPy call
    return ints, small


def test_masked_writes_are_where_in_a_kernel():
    z = rng.standard_normal((20, 30)) + 1j * rng.standard_normal((20, 30))
    c = rng.standard_normal((20, 30)) + 1j * rng.standard_normal((20, 30))
    args = (z, c, 7, np.zeros((20, 30), np.int64), 2.0)
    check_one_graph(escape_step, args)
    assert not not_fused(escape_step, args)  # abs, <, both writes: one kernel
    x = rng.random((6, 9))
    args = (x, 17, np.zeros((6, 9), np.int8))
    check_one_graph(masked_writes_of_numbers, args)
    assert not [c for c in not_fused(masked_writes_of_numbers, args) if "setitem" in c]


def test_masked_writes_numpy_would_convert_differently_staynot_fused():
    x = rng.random((6, 9))
    args = (x, np.zeros((6, 9), np.int8), 5)
    check_one_graph(masked_writes_numpy_checks, args)
    calls = not_fused(masked_writes_numpy_checks, args)
    assert len([c for c in calls if c.startswith("setitem")]) == 1, calls  # k = 5 fits int8
    with pytest.raises(OverflowError):  # k = 300 does not: NumPy's own error
        npdynamo.compile(masked_writes_numpy_checks, backend="numba")(x, args[1].copy(), 300)
