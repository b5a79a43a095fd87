"""Dynamic scalars (``ScalarMeta``): NEP 50 weak-scalar promotion, exactly as NumPy applies it.

A graph takes a Python int/float/complex as an input whose value capture does not know. Its
rule-computed dtype must be NumPy's for every value, and the graph run on the eager backend must
give NumPy's result bitwise, or raise what NumPy raises (an int out of an int8 array's range).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npdynamo import fx, ops
from npdynamo.fx.passes import propagate_shapes
from npdynamo.ops import scalar_ops
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbol_table import SymbolTable

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.float16,
          np.float32, np.float64, np.complex64]
OPS = ["add", "subtract", "multiply", "divide", "maximum", "power", "less", "floor_divide"]
VALUES = {
    int: st.one_of(st.integers(-300, 300), st.integers(-(2**63), 2**63 - 1)),
    float: st.floats(allow_nan=True, allow_infinity=True, width=64),
    complex: st.complex_numbers(max_magnitude=1e6),
}


def outcome(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as exc:  # noqa: BLE001 - the exception type is compared
            return None, type(exc)


def scalar_graph(op_name, dtype, kind, scalar_first, symbolic):
    size = SymbolTable().new(3) if symbolic else 3
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((size,), dtype))
    s = g.placeholder("s", ScalarMeta(kind))
    args = (s, x) if scalar_first else (x, s)
    g.output(g.call_function(ops.REGISTRY[op_name], args))
    return g


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(DTYPES), st.sampled_from([int, float, complex]),
       st.booleans(), st.booleans(), st.data())
def test_weak_promotion_matches_numpy(op_name, dtype, kind, scalar_first, symbolic, data):
    ufunc = getattr(np, op_name)
    x = np.array([1, 2, 3]).astype(dtype)
    g = scalar_graph(op_name, np.dtype(dtype), kind, scalar_first, symbolic)
    meta, rule_error = outcome(lambda: propagate_shapes(g, [p.meta["val"] for p in
                                                            g.placeholders]))
    value = data.draw(VALUES[kind])
    call = (lambda v: ufunc(v, x)) if scalar_first else (lambda v: ufunc(x, v))
    want, error = outcome(lambda: call(value))
    if rule_error is not None:
        # The rule refuses only what NumPy refuses for every value of that type
        other, other_error = outcome(lambda: call(kind(1)))
        assert other_error is not None and error is not None
        return
    out_meta = g.output_node.meta["val"][0]
    gm = fx.GraphModule(g)
    got, got_error = outcome(lambda: gm(x, value)[0])
    assert got_error is error
    if error is None:
        assert out_meta.dtype == want.dtype and got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=True)
        assert type(got) is type(want)


def test_the_three_promotions_of_the_brief():
    cases = [
        (np.float32, float, 0.1, np.float32),  # lr * g stays float32
        (np.int8, int, 3, np.int8),  # int scalar with int8 array stays int8
        (np.int32, float, 0.5, np.float64),  # float scalar with int array: float64
    ]
    for dtype, kind, value, result in cases:
        g = scalar_graph("multiply", np.dtype(dtype), kind, True, True)
        propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
        assert g.output_node.meta["val"][0].dtype == result
        x = np.arange(5).astype(dtype)
        got = fx.GraphModule(g)(x, value)[0]
        assert got.dtype == result and np.array_equal(got, value * x)
    g = scalar_graph("add", np.dtype(np.int8), int, False, True)
    propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
    x = np.array([100, 27], np.int8)
    with np.errstate(over="ignore"):
        assert np.array_equal(fx.GraphModule(g)(x, 100)[0], x + 100)  # wraps as NumPy does
    assert outcome(lambda: fx.GraphModule(g)(x, 300))[1] is outcome(lambda: x + 300)[1]
    assert outcome(lambda: x + 300)[1] is OverflowError


def test_scalar_meta_where_numpy_converts_strongly():
    # np.where and np.full see the Python scalar by value (np.result_type keeps it weak)
    meta = ops.where.infer(ArrayMeta((3,), np.dtype(bool)), ArrayMeta((3,), np.float32),
                           ScalarMeta(float))
    assert meta.dtype == np.result_type(np.float32, 0.5)
    assert ops.full.infer(ScalarMeta(int), shape=(2,), dtype=None).dtype == np.full(2, 7).dtype


# -- Python arithmetic on dynamic scalars ----------------------------------------------------

PY_VALUES = {
    bool: st.booleans(),
    int: st.integers(-10, 10),
    float: st.floats(-10, 10, allow_nan=False),
    complex: st.complex_numbers(max_magnitude=10),
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(scalar_ops.BINARY)), st.sampled_from([int, float, complex]),
       st.sampled_from([bool, int, float, complex]), st.booleans(), st.data())
def test_python_arithmetic_on_dynamic_scalars(name, kind, other_kind, dynamic_first, data):
    """The op's rule gives Python's result type for every value, or refuses; the graph gives
    Python's value and raises Python's exception."""
    op = ops.REGISTRY[name]
    fn = scalar_ops.BINARY[name]
    const = data.draw(PY_VALUES[other_kind])
    g = fx.Graph()
    s = g.placeholder("s", ScalarMeta(kind))
    g.output(g.call_function(op, (s, const) if dynamic_first else (const, s)))
    _, rule_error = outcome(lambda: propagate_shapes(g, [ScalarMeta(kind)]))
    gm = fx.GraphModule(g) if rule_error is None else None
    for _ in range(3):
        value = data.draw(PY_VALUES[kind])
        pair = (value, const) if dynamic_first else (const, value)
        want, error = outcome(lambda p=pair: fn(*p))
        if rule_error is not None:
            assert rule_error is not TypeError or error is TypeError
            continue
        if error is None:
            assert g.output_node.meta["val"][0] == ScalarMeta(type(want))
        got, got_error = outcome(lambda v=value: gm(v)[0])
        assert got_error is error
        if error is None:
            assert type(got) is type(want) and (got == want or got != got)


def schedule_graph():
    """``x * (lr * 0.5 ** step / x.shape[0])`` and ``step + 1``: a schedule in one graph."""
    s0 = SymbolTable().new(4)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0,), np.float32))
    lr = g.placeholder("lr", ScalarMeta(float))
    step = g.placeholder("step", ScalarMeta(int))
    decay = g.call_function(ops.py_pow, (0.5, step))  # 0.5 ** step is a float for any step
    rate = g.call_function(ops.py_truediv, (g.call_function(ops.py_mul, (lr, decay)), s0))
    g.output((g.call_function(ops.multiply, (x, rate)), g.call_function(ops.py_add, (step, 1))))
    return g


def test_python_arithmetic_with_sizes_and_a_training_schedule():
    g = schedule_graph()
    propagate_shapes(g, [p.meta["val"] for p in g.placeholders])
    assert [str(v) for v in g.output_node.meta["val"]] == ["float32[s0]", "weak int"]
    gm = fx.GraphModule(g)
    for n, step_value in ((3, 0), (10, 7)):
        xs = np.arange(n, dtype=np.float32)
        out, nxt = gm(xs, 0.1, step_value)
        want = xs * (0.1 * 0.5 ** step_value / n)
        assert out.dtype == np.float32 and np.array_equal(out, want)
        assert type(nxt) is int and nxt == step_value + 1
    g2 = fx.Graph()
    k = g2.placeholder("k", ScalarMeta(int))
    g2.output(g2.call_function(ops.py_pow, (2, k)))  # int or float depending on k's sign
    with pytest.raises(ops.UnsupportedArguments):
        propagate_shapes(g2, [ScalarMeta(int)])
