"""Python numbers among ufunc operands become 0-d arrays once (``constant_operands``): the same
bits, dtypes and warnings as plain NumPy, and only where the two cannot differ."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.constant_operands import with_array_constants
from npdynamo.capture.hooks import compiled_entries
from tests.capture.test_row_loops import check_mask  # (a tuple operand, an int into bools)
from tests.differential import assert_same_value, run_both

UFUNCS = ["add", "subtract", "multiply", "divide", "power", "maximum", "fmin", "arctan2",
          "copysign", "fmod", "hypot", "nextafter", "floor_divide", "remainder", "ldexp",
          "greater", "heaviside", "logaddexp"]
CONSTANTS = [0.05, 2, -3, 0.0, -0.0, 1e-300, 1e-40, 3e38, 1e300, float("inf"), float("nan"),
             2**24 + 1, 2**53 + 1, 7, 0.1, -1.5]


def _program(ufunc: str, constant: object, left: bool):
    """``np.<ufunc>(x, constant)`` (or with the constant on the left), the constant written as
    a literal (a global for inf and nan, which have none)."""
    text = {"inf": "INF", "-inf": "-INF", "nan": "NAN"}.get(repr(constant), repr(constant))
    call = f"np.{ufunc}({text}, x)" if left else f"np.{ufunc}(x, {text})"
    namespace = {"np": np, "INF": float("inf"), "NAN": float("nan")}
    exec(f"def f(x):\n    return {call}", namespace)
    return namespace["f"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(UFUNCS), st.sampled_from(CONSTANTS), st.booleans(),
       st.sampled_from([np.float32, np.float64]))
def test_results_and_warnings_match_plain_numpy(ufunc, constant, left, dtype):
    fn = _program(ufunc, constant, left)
    x = np.array([1.5, -2.0, 0.0, 3e38, 1e-30, np.inf], dtype=dtype)
    compiled = npdynamo.compile(fn, backend="eager")
    for _ in range(2):
        with warnings.catch_warnings(record=True) as plain_w:
            warnings.simplefilter("always")
            run = run_both(fn, compiled, (x,), {})
        messages = [str(w.message) for w in plain_w]
        if run.exc is None:
            assert_same_value(run.expected, run.got)
        # each warning once from the plain call and once from the compiled one
        assert sorted(messages[: len(messages) // 2]) == sorted(messages[len(messages) // 2:])


def test_errstate_raise_matches_plain_numpy():
    fn = _program("multiply", 1e300, False)
    compiled = npdynamo.compile(fn, backend="eager")
    x = np.array([1e300, 1.0])
    compiled(x)
    with np.errstate(over="raise"):
        run = run_both(fn, compiled, (x,), {})
    assert run.exc is not None


def sgd(w, g, lr):
    w -= lr * g
    return (g * 2.0 + 1).sum()


def test_a_training_steps_constants_are_converted_once():
    w, g = np.ones(8), np.full(8, 0.5)
    compiled = npdynamo.compile(sgd, backend="eager")
    compiled(w.copy(), g, 0.05)
    (entry,) = compiled_entries(compiled)
    source = entry.compiled.run.__npdynamo_source__  # the generated code the backend runs
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert not any("0.05" in line or "2.0" in line for line in code), source  # 0-d arrays
    plain, comp = w.copy(), w.copy()
    assert_same_value(sgd(plain, g, 0.05), compiled(comp, g, 0.05))
    assert_same_value(plain, comp)


@pytest.mark.parametrize("ufunc,constant,dtype,converted", [
    ("multiply", 0.05, np.float64, True),
    ("multiply", 0.1, np.float32, True),
    ("add", 1, np.int64, False),             # integer results: NEP 50's range checks stay
    ("multiply", 1e300, np.float32, False),  # the cast would overflow
    ("multiply", 1e-40, np.float32, False),  # ... or underflow
    ("add", 2**24 + 1, np.float32, False),   # not exact in float32
    ("add", 2**24 + 1, np.float64, True),
    ("greater", 0.5, np.float64, False),     # a bool result
])
def test_which_constants_convert(ufunc, constant, dtype, converted):
    backend_graphs = []

    def backend(gm, example_inputs):
        backend_graphs.append(gm)
        return gm.forward

    fn = _program(ufunc, constant, False)
    npdynamo.compile(fn, backend=backend)(np.ones(3, dtype=dtype))
    (gm,) = backend_graphs
    assert (with_array_constants(gm.graph) is not None) is converted


def stored_ints(x):
    out = np.ones(x.shape[0], dtype=bool)
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            out[i] = 0
        else:
            out[i] = 2  # any nonzero int stores True
    return out


def tuple_of_floats(x):
    return np.multiply(x, (0.5, 2.0, -1.0)) + np.add((1, 2, 3), x)


@pytest.mark.parametrize("fn,arg", [
    (check_mask, np.random.default_rng(0).integers(0, 2, (300, 4)).astype(bool)),
    (stored_ints, np.random.default_rng(1).random(200)),
    (tuple_of_floats, np.random.default_rng(2).random((4, 3))),
])
def test_tuples_of_numbers_and_int_stores_into_bools_compile_on_numba(fn, arg, monkeypatch):
    """The tuple is the array NumPy makes of it (``tuple_operands_as_arrays``), the int the
    truth NumPy stores: one kernel or loop program, no NumPy call for either."""
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    compiled = npdynamo.compile(fn, backend="numba")
    for _ in range(2):
        run = run_both(fn, compiled, (arg.copy(),), {})
        assert_same_value(run.expected, run.got)
    (entry,) = compiled_entries(compiled)
    report = str(entry.report)
    assert "operand of type tuple" not in report and "another dtype" not in report, report
    if fn is not tuple_of_floats:  # (the loop's setitems are nopython code too)
        assert report.startswith("numba backend") and "the loop runs in numba" in report, report
