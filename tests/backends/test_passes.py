"""The graph passes that run before code generation: algebraic simplification, constant folding."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.fx import Graph, GraphModule, passes
from npdynamo.ops.meta import ArrayMeta


def _graph(dtype=np.float64, shape=(5,)):
    g = Graph()
    return g, g.placeholder("x", ArrayMeta(shape, dtype))


def _call(g, name, *args, **kwargs):
    op = ops.lookup(name)
    node = g.call_function(op, args, kwargs)
    node.meta["val"] = op.infer(*(a.meta["val"] if hasattr(a, "meta") else a for a in args),
                                **kwargs)
    return node


def _names(g):
    return [n.target.name for n in g.nodes if n.op == "call_function"]


def _run(g, *args):
    with np.errstate(all="ignore"):
        return GraphModule(g)(*args)


SPECIALS = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3e-300, 1e300])


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7, 8, 2.0, 6.0, 1, -1])
def test_integral_powers_become_products(k):
    g, x = _graph()
    g.output((_call(g, "power", x, k),))
    want = _run(g, SPECIALS)[0]
    assert passes.simplify(g) == 1
    assert "power" not in _names(g)
    got = _run(g, SPECIALS)[0]
    assert got.dtype == want.dtype
    if k in (2, 2.0, 1, -1):
        assert np.array_equal(got, want, equal_nan=True)  # exact
    elif k in (3, 4):
        np.testing.assert_allclose(got, want, rtol=4e-16)  # two roundings, documented
    else:  # up to four roundings, documented (5 ulp)
        np.testing.assert_allclose(got, want, rtol=9e-16)
    rng = np.random.default_rng(abs(int(k)))
    x = rng.uniform(-3, 3, 10000)
    ulps = np.abs(_run(g, x)[0] - x ** k) / np.spacing(np.abs(x ** k))
    assert ulps.max() <= 5  # from NumPy's power, itself within an ulp


@pytest.mark.parametrize("k", [3, 5, 6, 7, 8])
def test_integer_powers_wrap_exactly(k):
    g, x = _graph(np.int8)
    g.output((_call(g, "power", x, k),))
    a = np.arange(-128, 128).astype(np.int8)
    want = _run(g, a)[0]
    passes.simplify(g)
    assert np.array_equal(_run(g, a)[0], want) and set(_names(g)) == {"multiply"}


def test_power_changing_the_dtype_is_kept():
    g, x = _graph(np.int64)
    g.output((_call(g, "power", x, 2.0),))  # int ** float -> float64
    assert passes.simplify(g) == 0


def test_half_power_becomes_sqrt_only_where_exact():
    g, x = _graph()
    g.output((_call(g, "power", x, 0.5),))
    assert passes.simplify(g) == 0  # x may be -0.0 or -inf
    g, x = _graph()
    sq = _call(g, "multiply", x, x)
    s = _call(g, "add", sq, _call(g, "absolute", x))
    g.output((_call(g, "power", s, 0.5),))
    want = _run(g, SPECIALS)[0]
    assert passes.simplify(g) == 1 and "sqrt" in _names(g)
    np.testing.assert_array_equal(_run(g, SPECIALS)[0], want)


def test_identities_keep_nan_and_signed_zero():
    g, x = _graph()
    y = _call(g, "exp", x)
    a = _call(g, "multiply", y, 1)
    b = _call(g, "add", -0.0, a)
    c = _call(g, "subtract", b, 0.0)
    d = _call(g, "divide", c, 1.0)
    g.output((_call(g, "negative", d),))
    want = _run(g, SPECIALS)[0]
    assert passes.simplify(g) == 4
    assert _names(g) == ["exp", "negative"]
    got = _run(g, SPECIALS)[0]
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_identities_that_would_change_results_are_kept():
    g, x = _graph()
    a = _call(g, "add", x, 0.0)  # -0.0 + 0.0 is +0.0
    b = _call(g, "multiply", x, np.float32(1))  # same dtype: float64
    c = _call(g, "multiply", _call(g, "astype", x, dtype=np.dtype(np.float32)), 1.0)
    g.output((_call(g, "negative", a), _call(g, "negative", b), c))
    assert passes.simplify(g) == 1  # only x * float32(1): float64 result, exact
    assert _names(g).count("add") == 1


def test_identity_feeding_an_output_or_a_view_is_kept():
    g, x = _graph()
    a = _call(g, "multiply", x, 1.0)
    r = _call(g, "reshape", _call(g, "multiply", x, 1.0), shape=(5, 1))
    g.output((a, r))
    assert passes.simplify(g) == 0  # the outputs must not share memory with x


def test_constant_folding():
    g, x = _graph()
    ones = _call(g, "ones", shape=(5,))
    two = _call(g, "multiply", ones, 2.0)
    big = _call(g, "zeros", shape=(1000,))
    out = _call(g, "add", x, two)
    g.output((out, big))
    assert passes.constant_fold(g) == 2  # ones and ones*2; the big array stays a call
    assert _names(g) == ["zeros", "add"]
    got = _run(g, np.arange(5.0))
    assert np.array_equal(got[0], np.arange(5.0) + 2)
    assert _run(g, np.arange(5.0))[1] is not got[1]  # a fresh array per call


def test_constant_folding_keeps_calls_that_warn():
    g, x = _graph()
    z = _call(g, "divide", _call(g, "ones", shape=(3,)), 0.0)
    g.output((_call(g, "add", x, 1.0), z))
    before = _names(g)
    passes.constant_fold(g)
    assert "divide" in _names(g) and len(_names(g)) == len(before) - 1
