"""The elementwise ops of the ONNX table on generated values: for each op and dtype one
program is exported and run in ONNX Runtime on arrays hypothesis draws (signed zeros,
infinities, NaN, subnormals, huge and tiny numbers, every integer), against NumPy (float32
rtol 1e-5, float64 rtol 1e-10, integers and booleans exactly; an absolute error of a few
units of the dtype's epsilon is allowed, where an op's result crosses 0: ONNX Runtime's sin of
pi is 0.0, NumPy's 1.2e-16). Each example is 64 values per operand; CI (derandomized) runs 8
examples per op and dtype (512 values per operand), a local run 16."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import npdynamo

ort = pytest.importorskip("onnxruntime")

#: NumPy function, operands, dtypes, the magnitude the floats are drawn within (None: any)
UNARY = {
    "exp": (np.exp, "f", None), "log": (np.log, "f", None), "sqrt": (np.sqrt, "f", None),
    "sin": (np.sin, "f", None), "cos": (np.cos, "f", None), "tan": (np.tan, "f", None),
    "tanh": (np.tanh, "f", None), "cosh": (np.cosh, "f", None), "sinh": (np.sinh, "f", None),
    "arcsin": (np.arcsin, "f", None), "arccos": (np.arccos, "f", None),
    "arctan": (np.arctan, "f", None), "arcsinh": (np.arcsinh, "f", None),
    "arccosh": (np.arccosh, "f", None), "arctanh": (np.arctanh, "f", None),
    "expm1": (np.expm1, "f", None), "log1p": (np.log1p, "f", None),
    "exp2": (np.exp2, "f", None), "log2": (np.log2, "f", None), "log10": (np.log10, "f", None),
    "cbrt": (np.cbrt, "f", None), "sinc": (np.sinc, "f", None), "floor": (np.floor, "f", None),
    "ceil": (np.ceil, "f", None), "rint": (np.rint, "f", None), "trunc": (np.trunc, "f", None),
    "square": (np.square, "fi", None), "absolute": (np.absolute, "fi", None),
    "negative": (np.negative, "fi", None), "sign": (np.sign, "fi", None),
    "reciprocal": (np.reciprocal, "f", None), "deg2rad": (np.deg2rad, "f", None),
    "rad2deg": (np.rad2deg, "f", None), "isnan": (np.isnan, "f", None),
    "isinf": (np.isinf, "f", None), "isfinite": (np.isfinite, "f", None),
    "nan_to_num": (np.nan_to_num, "f", None), "invert": (np.invert, "i", None),
}
BINARY = {
    "add": (np.add, "fi", None), "subtract": (np.subtract, "fi", None),
    "multiply": (np.multiply, "fi", None), "divide": (np.divide, "f", None),
    "power": (np.power, "f", None), "maximum": (np.maximum, "fi", None),
    "minimum": (np.minimum, "fi", None), "fmax": (np.fmax, "fi", None),
    "fmin": (np.fmin, "fi", None), "fmod": (np.fmod, "fi", None),
    "floor_divide": (np.floor_divide, "fi", None), "remainder": (np.remainder, "fi", None),
    "arctan2": (np.arctan2, "f", None), "hypot": (np.hypot, "f", None),
    "logaddexp": (np.logaddexp, "f", None), "logaddexp2": (np.logaddexp2, "f", None),
    "heaviside": (np.heaviside, "f", None), "equal": (np.equal, "fi", None),
    "less": (np.less, "fi", None), "greater_equal": (np.greater_equal, "fi", None),
    "not_equal": (np.not_equal, "fi", None), "bitwise_and": (np.bitwise_and, "i", None),
    "bitwise_xor": (np.bitwise_xor, "i", None), "gcd": (np.gcd, "i", None),
    "lcm": (np.lcm, "i", None), "left_shift": (np.left_shift, "i", None),
    "right_shift": (np.right_shift, "i", None),
}
DTYPES = {"f": [np.float64, np.float32], "i": [np.int64, np.int32]}
SHAPE = (64,)
EXAMPLES = 8 if os.environ.get("CI") else 16


def _params():
    for name, (_, kinds, _) in {**UNARY, **BINARY}.items():
        for kind in kinds:
            for dtype in DTYPES[kind]:
                yield pytest.param(name, np.dtype(dtype), id=f"{name}-{np.dtype(dtype).name}")


@functools.cache
def _program(name: str, dtype: np.dtype):
    fn, _, _ = {**UNARY, **BINARY}[name]
    arity = 1 if name in UNARY else 2
    args = [np.ones(SHAPE, dtype) for _ in range(arity)]
    program = (lambda x: (fn(x),)) if arity == 1 else (lambda x, y: (fn(x, y),))
    ep = npdynamo.export(program, *args)
    session = ort.InferenceSession(ep.to_onnx().SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return fn, arity, session


def _values(dtype: np.dtype, bound):
    if dtype.kind == "f":
        elements = st.floats(width=dtype.itemsize * 8, allow_subnormal=True)
        if bound is not None:
            elements = st.floats(-bound, bound, width=dtype.itemsize * 8) | st.sampled_from(
                [np.nan, np.inf, -np.inf, -0.0])
        special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-310])
        return hnp.arrays(dtype, SHAPE, elements=elements | special)
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if bound is None else (-bound, bound)
    return hnp.arrays(dtype, SHAPE, elements=st.integers(lo, hi) | st.integers(-70, 70))


@pytest.mark.parametrize("name,dtype", list(_params()))
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_elementwise_op_matches_numpy(name, dtype, data):
    fn, arity, session = _program(name, dtype)
    bound = {**UNARY, **BINARY}[name][2]
    args = [data.draw(_values(dtype, bound), label=f"x{i}") for i in range(arity)]
    if name in ("left_shift", "right_shift"):
        args[1] = data.draw(hnp.arrays(dtype, SHAPE, elements=st.integers(-2, 70)))
    with np.errstate(all="ignore"):
        expected = np.asarray(fn(*args))
    (got,) = session.run(None, {i.name: a for i, a in zip(session.get_inputs(), args)})
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind == "f":
        rtol = 1e-5 if expected.dtype == np.float32 else 1e-10
        atol = 4 * np.finfo(expected.dtype).eps
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)
