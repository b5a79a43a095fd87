"""Patterns of the external numpy-benchmarks kernels (``benchmarks/external.py``) that used to
break or fall back to Python: each is now one graph with no break, plain vs compiled bitwise on
the eager backend and at the documented tolerances on numba (``check_one_graph``)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.backends.compare import check_one_graph
from tests.differential import assert_same_value, check_same

rng = np.random.default_rng(14)


def check_kernel(fn, args: tuple) -> None:
    """One graph, no break, and nothing left to Python (``fullgraph`` alone does not see a
    capture that failed inside and ran the frame plainly), then plain vs compiled."""
    report = npdynamo.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    assert "ran in Python" not in str(report), str(report)
    check_one_graph(fn, args)


def inplace_cast_into_view(ru, rv):
    # grayscott: float64 updates written in place into float32 views (NumPy casts same_kind)
    U = np.zeros((6, 6), dtype=np.float32)
    u = U[1:-1, 1:-1]
    u[:] = 1.0
    u += 0.15 * ru
    u += 0.5 * u * rv - 0.25
    return U


def test_inplace_update_cast_to_the_target_dtype_is_one_graph():
    check_kernel(inplace_cast_into_view, (rng.random((4, 4)), rng.random((4, 4))))


def test_inplace_update_that_numpy_refuses_raises_the_same():
    def f(x, y):
        x += y  # float -> int is not same_kind: NumPy's UFuncTypeError
        return x

    check_same(f, np.arange(3), np.ones(3), graphs=0, breaks=0)  # reruns in Python
    with pytest.raises(TypeError, match="same_kind"):
        npdynamo.compile(f)(np.arange(3), np.ones(3))


def cma_step(E, wxy, mu, R):
    # cma_pt's loop body: np.conj, and ** between NumPy scalars (Python's scalar math)
    Xest = np.sum(E * np.conj(wxy[0]))
    err = (R - abs(Xest) ** 2) * Xest
    wxy[0] += mu * np.conjugate(err) * E
    return err, wxy, np.float32(1.5) ** np.float32(0.3), np.sum(E.real) ** -1.5


def test_conjugate_and_scalar_power_are_one_graph():
    E = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    wxy = rng.standard_normal((2, 2, 5)) + 0j
    check_kernel(cma_step, (E, wxy, 1e-3, 1.0))


@pytest.mark.parametrize("base", [np.float64(0.7), np.float32(-1.3), np.complex128(1 + 2j),
                                  np.float64(0.0)])
@pytest.mark.parametrize("exponent", [2, 0.5, -3, np.float64(1 / 3), np.float16(2)])
def test_scalar_power_is_pythons_scalar_math(base, exponent):
    def f(x, y):
        return (x * 1) ** y  # a graph scalar ** a Python or NumPy scalar

    with np.errstate(all="ignore"):
        check_same(f, base, exponent, compiled=npdynamo.compile(f, fullgraph=True), graphs=1,
                   breaks=0)


def test_scalar_power_of_integers_is_left_to_python():
    def f(x):
        return np.sum(x) ** 3

    report = npdynamo.explain(f)(np.arange(4))
    assert report.graph_break_count == 1 and "integer NumPy scalars" in str(report)
    check_same(f, np.arange(4), graphs=1, breaks=1)


def test_conjugate_of_booleans_and_integers_matches_numpy():
    def f(b, i):
        return np.conj(b), np.conjugate(i * 2)

    check_kernel(f, (np.array([True, False]), np.arange(3, dtype=np.int16)))


def laplacien(image):
    # laplacien: max() of a Python float and a NumPy scalar of the graph (its type depends on
    # which wins, so the graph assumes the scalar does and checks it at run time)
    out = np.abs(4 * image[1:-1, 1:-1] - image[0:-2, 1:-1] - image[1:-1, 2:])
    valmax = np.max(out)
    valmax = max(1., valmax) + 1.E-9
    out /= valmax
    return out, valmax


@pytest.mark.parametrize("scale", [10.0, 0.01])  # the scalar wins / the constant wins
def test_builtin_max_of_a_constant_and_a_graph_scalar_is_one_graph(scale):
    check_kernel(laplacien, (rng.standard_normal((6, 5, 3)) * scale,))


def choices(x, y):
    m = np.max(x)
    return (max(m, 0.5), min(-1, m, 2.0), max(0, 1.5, m, -2.0), min(m, 0.25, 3),
            max(np.sum(y), 1.0, 0.5))


@pytest.mark.parametrize("values", [[0.1, 0.2], [0.7, 3.0], [-3.0, -2.0], [np.nan, 1.0],
                                    [1.5, 1.0], [2.0, 0.0], [0.5, 0.25]])
@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_assumed_choices_give_pythons_objects_whatever_the_data(values, backend):
    x = np.array(values)
    compiled = npdynamo.compile(choices, backend=backend, fullgraph=True)
    check_same(choices, x, x.astype(np.float32), compiled=compiled, calls=3, graphs=1, breaks=0)
    assert npdynamo.explain(choices)(x, x.astype(np.float32)).graph_break_count == 0


def test_choices_that_are_not_assumed_still_break():
    def f(x, n):
        m = np.max(x)
        inexact = max(np.sum(x.astype(np.float32)), 0.1)  # 0.1 is no float32
        return inexact, max(np.sum(x.astype(np.int64)), 3), max(m, n, 0.5), max(m, True)

    x = np.array([0.25, 2.0])
    report = npdynamo.explain(f)(x, np.max(x))
    assert report.graph_break_count >= 1 and "compares arrays" in str(report)
    # the first max() that compares arrays breaks; its resume function then runs in Python: a
    # float or np.float64 the data picks is handed back beside a float that may be the same
    # object (capture/mixed_scalars.py keeps `is` exact that way)
    check_same(f, x, np.max(x), graphs=1, breaks=2)
    # NumPy's OverflowError, from Python
    check_same(lambda x: max(np.max(x), 10**400), x, graphs=1, breaks=1)


def test_a_failed_assumption_reruns_without_drawing_twice():
    def f(rng, x):
        noisy = x + rng.standard_normal(x.shape)
        return max(0.0, np.max(noisy)), rng.standard_normal(2)

    x = np.full(2, -0.5)
    outcomes = set()
    for backend in ("eager", "numba"):
        compiled = npdynamo.compile(f, backend=backend, fullgraph=True)
        for seed in range(6):  # some seeds make the maximum negative: the constant wins
            plain_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
            for _ in range(2):
                want, got = f(plain_rng, x), compiled(rng, x)
                assert_same_value(want, got)
                assert rng.bit_generator.state == plain_rng.bit_generator.state
                outcomes.add(type(want[0]))
    assert outcomes == {float, np.float64}


def sequences_with_arrays(db, mask=(1, 0, 1)):
    # check_mask: a tuple of numbers compared with an array (NumPy converts it)
    v = db[0, 1:]
    return (mask == np.bitwise_and(mask, v), [1.5, 2] + db[0, :2], (2, 3) * db[1, :2],
            [1, 2] @ db[:2, :2], db[0, :2] < [True, False], [] + db[0, :0], (1, 2j) != db[2, :2])


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint16])
def test_a_sequence_of_numbers_next_to_an_array_is_one_graph(dtype):
    db = np.random.default_rng(1).integers(0, 2, (3, 4)).astype(dtype)
    check_kernel(sequences_with_arrays, (db,))


def test_a_sequence_next_to_a_numpy_scalar_stays_pythons():
    def f(x):
        return [1, 2] * np.sum(x), (1, 2) + np.sum(x), (1, 2) == np.sum(x), (1, 2) == x[:1]

    # a break at each of the three sequence ops; the second size recompiles each part
    check_same(f, np.arange(2), graphs=4, breaks=3)
    # (1, 2) == x[:1] has shapes (2,) and (1,): broadcasts
    check_same(f, np.arange(3), graphs=8, breaks=6)


def scalar_folds(x, y):
    a, b = np.max(np.abs(x)), np.max(np.abs(y))
    i, j = np.argmax(x), np.argmin(y)
    return max(a, b), min(a, b, np.min(x)), max(i, j), max([a]), min((b, a)), max(a, b) / 2


@pytest.mark.parametrize("x, y", [
    ([1.0, -3.0], [2.0, 0.5]), ([np.nan, 1.0], [2.0, 0.5]), ([1.0, 2.0], [np.nan, 0.5]),
    ([0.0, -0.0], [-0.0, 0.0]), ([2.0, 2.0], [-2.0, 1.0]),
])
def test_builtin_max_of_numpy_scalars_of_one_dtype_is_one_graph(x, y):
    check_kernel(scalar_folds, (np.array(x), np.array(y)))


def test_builtin_max_of_numpy_scalars_of_two_dtypes_still_breaks():
    def f(x):
        return max(np.max(x), np.max(x.astype(np.float32)))

    assert npdynamo.explain(f)(np.ones(2)).graph_break_count == 1
    check_same(f, np.array([1.0, 2.0]), graphs=1, breaks=1)
