"""Arithmetic on NumPy scalars: compiled code runs what Python ran.

``a[0] * a[1]`` on two int64 elements is NumPy's scalar math, not ``np.multiply``: it warns
"overflow encountered in scalar multiply" (and raises under ``np.errstate(over="raise")``) where
the ufunc wraps silently. Each operator is checked plain against compiled on generated values of
each dtype: the result (type, dtype, bits), the warnings (category and text) and, under
``np.errstate(all="raise")``, the exception.
"""

from __future__ import annotations

import contextlib
import io
import operator
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import from_dtype

import npdynamo
from tests.differential import assert_same_value

OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}
DTYPES = ["int64", "int32", "uint8", "float32", "float64"]


def _program(symbol: str):
    """``a[0] <symbol> a[1]``, and the same with a Python int on either side, as Python source
    (the operator must be in the bytecode, not behind ``operator.add``)."""
    namespace: dict = {}
    exec(f"def f(a):\n    return a[0] {symbol} a[1], a[1] {symbol} 3, 3 {symbol} a[0]\n",
         namespace)
    return namespace["f"]


def _run(fn, a, state):
    """(result or None, exception or None, warnings as (category, text)) of ``fn(a)``."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
        warnings.simplefilter("always")
        try:
            result, exc = fn(a), None
        except Exception as e:  # the compiled call must raise the same
            result, exc = None, e
    return result, exc, [(w.category, str(w.message)) for w in caught]


def _same_run(expected, got):
    (r1, e1, w1), (r2, e2, w2) = expected, got
    assert (type(e1), str(e1)) == (type(e2), str(e2))
    if e1 is None:
        assert_same_value(r1, r2)
    assert w1 == w2


_COMPILED: dict = {}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("symbol", list(OPERATORS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_operators_between_numpy_scalars_warn_and_raise_like_python(symbol, dtype, data):
    plain = _program(symbol)
    compiled = _COMPILED.setdefault((symbol, dtype), npdynamo.compile(plain))
    values = data.draw(st.lists(from_dtype(np.dtype(dtype)), min_size=2, max_size=2))
    a = np.array(values, dtype=dtype)
    for state in ({}, {"all": "raise"}):
        _same_run(_run(plain, a.copy(), state), _run(compiled, a.copy(), state))


def _unary(a):
    return -a[0], +a[0], abs(a[0]), ~a[1] if a.dtype.kind in "iu" else a[1]


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_unary_operators_and_abs_of_numpy_scalars(dtype, data):
    compiled = _COMPILED.setdefault(("unary", dtype), npdynamo.compile(_unary))
    values = data.draw(st.lists(from_dtype(np.dtype(dtype)), min_size=2, max_size=2))
    a = np.array(values, dtype=dtype)
    for state in ({}, {"all": "raise"}):
        _same_run(_run(_unary, a.copy(), state), _run(compiled, a.copy(), state))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_integer_overflow_between_scalars(backend):
    """The cases the ufunc gets wrong: overflow warns, and raises under errstate."""
    f = _program("*")
    compiled = npdynamo.compile(f, backend=backend)
    a = np.array([2**62, 4], dtype=np.int64)
    expected = _run(f, a, {"over": "raise"})
    assert isinstance(expected[1], FloatingPointError)
    _same_run(expected, _run(compiled, a, {"over": "raise"}))
    if backend == "eager":  # numba kernels do not repeat NumPy's warnings (documented)
        expected = _run(f, a, {})
        assert expected[2] and set(expected[2]) == {
            (RuntimeWarning, "overflow encountered in scalar multiply")}
        _same_run(expected, _run(compiled, a, {}))


def test_a_ufunc_call_between_scalars_stays_a_ufunc_call():
    """``np.multiply(a[0], a[1])`` wraps silently in Python: compiled too."""

    def f(a):
        return np.multiply(a[0], a[1]), np.add(a[0], 1)

    a = np.array([2**62, 4], dtype=np.int64)
    expected = _run(f, a, {"over": "raise"})
    assert expected[1] is None and expected[2] == []
    _same_run(expected, _run(npdynamo.compile(f), a, {"over": "raise"}))


def test_scalar_arithmetic_in_a_loop_body_is_spelt_as_operators():
    """A loop over elements (the Gauss-Seidel shape): one graph, and the body's arithmetic on
    NumPy scalars is generated as Python's operators."""
    from npdynamo.fx.codegen import operator_spelling
    from npdynamo.fx.subgraphs import nodes_with_subgraphs, subgraphs_of
    from tests.capture.triangular_programs import gauss_seidel

    rng = np.random.default_rng(0)
    n = 12
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    compiled = npdynamo.compile(gauss_seidel, backend="eager", dynamic=True)  # a rolled loop
    for _ in range(2):
        expected = gauss_seidel(A, b, np.zeros(n), 3)
        assert_same_value(expected, compiled(A, b, np.zeros(n), 3))
    with contextlib.redirect_stdout(io.StringIO()):
        report = npdynamo.explain(gauss_seidel)(A, b, np.zeros(n), 3)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    graph = report.graphs[0].graph
    graphs = [graph] + [body.graph for loop in nodes_with_subgraphs(graph)
                        for body in subgraphs_of(loop)]
    spelt = [operator_spelling(node) for g in graphs for node in g.nodes
             if getattr(node.target, "name", None) in ("subtract", "divide")]
    assert spelt and set(spelt) == {"-", "/"}


def _with_python_numbers(a, s):
    """NumPy scalars against Python numbers the graph computes or is given: ``float(a[0])``,
    ``int(a[1])`` and the scalar argument ``s``."""
    return float(a[0]) + a[1], a[1] * s, int(a[1]) - a[0], s / a[0]


@pytest.mark.parametrize("values,s", [([1e308, 1e308], 10.0), ([0.0, -2.5], 3.0),
                                      ([-1e300, 1e300], 1e300), ([2.0, np.nan], -0.0)])
def test_numpy_scalars_with_python_numbers_of_the_graph(values, s):
    compiled = _COMPILED.setdefault("python numbers", npdynamo.compile(_with_python_numbers))
    a = np.array(values)
    for state in ({}, {"all": "raise"}):
        _same_run(_run(lambda x: _with_python_numbers(x, s), a.copy(), state),
                  _run(lambda x: compiled(x, s), a.copy(), state))
