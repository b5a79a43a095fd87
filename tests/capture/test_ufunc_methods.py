"""ufunc methods under capture (``capture/ufunc_methods.py``): ``outer``, ``reduce`` and
``accumulate`` become graph ops with NumPy's shapes, dtypes, values and exceptions (hypothesis
draws the operands); the others are graph breaks that say why; never a RecursionError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from tests.differential import ANY, check_same
from tests.ops.strategies import arrays, axis_arg, maybe_dtype

BACKENDS = ["eager", "numba"]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.power,
          np.arctan2, np.equal, np.less, np.logical_and, np.bitwise_xor, np.floor_divide]
REDUCING = [np.add, np.multiply, np.maximum, np.minimum]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def outer_of(u, a, b):
    return u.outer(a, b)


def reduce_of(u, a, kw):
    return u.reduce(a, **kw)


def accumulate_of(u, a, kw):
    return u.accumulate(a, **kw)


def floyd_warshall(path):
    n = path.shape[0]
    for k in range(n):
        path[:] = np.minimum(path, np.add.outer(path[:, k], path[k, :]))
    return path


def _whole_graph(fn, *args):
    """``fn`` compiled with ``fullgraph=True`` gives what ``fn`` gives (or raises the same).
    Generated operands: a graph, or none (the call raises, or its result is a constant)."""
    npdynamo.reset()
    check_same(fn, *args, calls=1, compiled=npdynamo.compile(fn, fullgraph=True), graphs=ANY,
               breaks=0)


@SETTINGS
@given(u=st.sampled_from(BINARY), a=arrays(scalar_ok=False), b=arrays(scalar_ok=False))
def test_outer_matches_numpy(u, a, b):
    with np.errstate(all="ignore"):
        _whole_graph(outer_of, u, a, b)


@SETTINGS
@given(u=st.sampled_from(REDUCING), data=st.data())
def test_reduce_matches_numpy(u, data):
    a = data.draw(arrays(scalar_ok=False).filter(lambda x: isinstance(x, np.ndarray)))
    kw = {}
    if data.draw(st.booleans()):
        kw["axis"] = data.draw(axis_arg(a.ndim))
    if u in (np.add, np.multiply) and data.draw(st.booleans()):
        kw["dtype"] = data.draw(maybe_dtype())
    if data.draw(st.booleans()):
        kw["keepdims"] = data.draw(st.booleans())
    with np.errstate(all="ignore"):
        _whole_graph(reduce_of, u, a, kw)


@SETTINGS
@given(u=st.sampled_from([np.add, np.multiply]), data=st.data())
def test_accumulate_matches_numpy(u, data):
    a = data.draw(arrays(scalar_ok=False).filter(lambda x: x.ndim > 0))
    kw = {}
    if data.draw(st.booleans()):
        kw["axis"] = data.draw(axis_arg(a.ndim, tuples=False))
    if data.draw(st.booleans()):
        kw["dtype"] = data.draw(maybe_dtype())
    with np.errstate(all="ignore"):
        if kw.get("axis", 0) is None and a.ndim > 1:  # NumPy raises: a graph break
            npdynamo.reset()
            check_same(accumulate_of, u, a, kw, calls=1, graphs=0, breaks=1)
        else:
            _whole_graph(accumulate_of, u, a, kw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_floyd_warshall_the_numpy_way(backend):
    rng = np.random.default_rng(3)
    path = rng.integers(1, 20, (6, 6)).astype(float)
    np.fill_diagonal(path, 0)
    compiled = npdynamo.compile(floyd_warshall, backend=backend, fullgraph=True)
    check_same(floyd_warshall, path, compiled=compiled, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_methods_fuse_and_differentiate(backend):
    def loss(x, y):
        table = np.multiply.outer(x, y) + np.add.accumulate(x)[:, None]
        return np.add.reduce(np.maximum.reduce(table, axis=1) ** 2)

    def spelt_out(x, y):
        table = x[:, None] * y + np.cumsum(x)[:, None]
        return np.sum(np.max(table, axis=1) ** 2)

    x, y = np.linspace(-1, 1, 5), np.linspace(0.5, 2, 3)
    check_same(loss, x, y, backend=backend, compiled=npdynamo.compile(
        loss, backend=backend, fullgraph=True), graphs=1, breaks=0)
    want = npdynamo.grad(spelt_out, argnums=(0, 1))(x, y)
    got = npdynamo.grad(npdynamo.compile(loss, backend=backend), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def scan_maximum(p):
    return np.maximum.accumulate(p) - p


def count_at(c, i, v):
    np.add.at(c, i, v)
    return c


def reduce_at(a):
    return np.multiply.reduceat(a[0], [0, 2])


def reduce_logical(a):
    return np.logical_or.reduce(a > 0, axis=0)


def outer_with_number(a):
    return np.add.outer(a.astype(np.float32), 2.5)  # 2.5 becomes a float64 array: float64


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args,reason,graphs", [  # a graph for the work around the break
    (scan_maximum, (np.array([1.0, 3, 2, 5, 4]),), "np.maximum.accumulate has no graph op", 1),
    (count_at, (np.zeros(4), np.array([0, 1, 1, 3]), np.ones(4)), "np.add.at updates", 0),
    (reduce_at, (np.arange(1.0, 10).reshape(3, 3),), "np.multiply.reduceat", 0),
    (reduce_logical, (np.arange(-3.0, 3).reshape(2, 3),), "np.logical_or.reduce has no graph",
     1),
    (outer_with_number, (np.arange(3.0),), "only of NumPy arrays and scalars", 1),
    (reduce_of, (np.add, [1.5, 2.5], {}), "np.add.reduce of a", 0),
])
def test_other_methods_break_with_a_reason(backend, fn, args, reason, graphs):
    check_same(fn, *args, backend=backend, graphs=graphs, breaks=1)
    report = npdynamo.explain(fn)(*args)
    assert any(reason in r.reason for r in report.break_reasons), report.break_reasons
    with pytest.raises(npdynamo.Unsupported, match=reason.split()[0]):
        npdynamo.reset()
        npdynamo.compile(fn, fullgraph=True)(*args)


def test_outer_of_a_unary_ufunc_raises_as_numpy():
    def f(a):
        return np.sin.outer(a, a)

    check_same(f, np.arange(3.0), graphs=0, breaks=1)


def test_the_eager_tape_names_a_method_it_cannot_differentiate():
    def loss(x):
        return np.multiply.outer(x, x).sum()

    with pytest.raises(npdynamo.GradError, match="np.multiply.outer"):
        npdynamo.grad(loss)(np.linspace(0, 1, 3))
    # compiled, the method is graph ops, which have VJPs
    got = npdynamo.grad(npdynamo.compile(loss))(np.linspace(0, 1, 3))
    np.testing.assert_allclose(got, 2 * np.linspace(0, 1, 3).sum() * np.ones(3))
