"""Dynamic scalars, plain vs compiled: a Python number whose value changes across calls becomes
a graph input (NEP 50 weak-scalar promotion kept exactly), Python arithmetic on it stays Python
arithmetic, and every other use specialises it."""

import warnings

import numpy as np
import pytest

import npdynamo
from tests.capture.test_dynamic_shapes import NumbaCounting
from tests.differential import CountingBackend, assert_same_value, check_same, run_both


@pytest.fixture(autouse=True)
def _fresh():
    npdynamo.reset()
    yield
    npdynamo.reset()


def sgd(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]
    return params["w"].sum()


def _sgd_args(i, dtype=np.float32):
    params = {"w": np.linspace(-1, 1, 5).astype(dtype), "b": np.zeros(2, dtype)}
    grads = {"w": np.full(5, 0.5, dtype), "b": np.ones(2, dtype)}
    return params, grads, 0.1 * 0.9**i


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_learning_rate_from_a_schedule_is_two_captures(dtype):
    backend = CountingBackend()
    compiled = npdynamo.compile(sgd, backend=backend)
    for i in range(20):  # results, dtypes (float32 stays float32) and parameters bitwise
        # the second lr makes it a dynamic scalar: a second capture, then no more
        check_same(sgd, *_sgd_args(i, dtype), compiled=compiled, calls=1, graphs=min(i + 1, 2),
                   breaks=0)
    assert backend.count == 2


def test_learning_rate_on_numba():
    backend = NumbaCounting()
    compiled = npdynamo.compile(sgd, backend=backend)
    for i in range(10):
        p1, g, lr = _sgd_args(i)
        p2 = {k: v.copy() for k, v in p1.items()}
        np.testing.assert_allclose(compiled(p2, g, lr), sgd(p1, g, lr), rtol=1e-6)
        for k in p1:
            assert p2[k].dtype == p1[k].dtype
            np.testing.assert_allclose(p2[k], p1[k], rtol=1e-6)
    assert backend.count == 2


class Model:
    def __init__(self, step):
        self.step = step
        self.w = np.ones(3)


def train(model, x):
    model.w = model.w - 0.01 * model.step * x  # Python arithmetic, then an array operation
    model.step += 1
    return model.w


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_step_counter_attribute_is_two_captures(backend):
    counting = CountingBackend() if backend == "eager" else NumbaCounting()
    compiled = npdynamo.compile(train, backend=counting)
    for step in range(12):
        model, twin = Model(step), Model(step)
        expected, got = train(model, np.arange(3.0)), compiled(twin, np.arange(3.0))
        assert type(twin.step) is int and twin.step == model.step
        if backend == "eager":
            assert np.array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert counting.count == 2


def add_offset(x, k):
    return x + k  # int8 array + Python int: int8, and NumPy refuses an int that does not fit


def test_int_scalar_keeps_the_arrays_dtype_and_numpys_overflow_error():
    compiled = npdynamo.compile(add_offset)
    x = np.arange(4, dtype=np.int8)
    for i, k in enumerate((1, 2, 100, 5)):  # (k dynamic from the second value on)
        check_same(add_offset, x, k, compiled=compiled, calls=1, graphs=min(i + 1, 2), breaks=0)
    # OverflowError, as NumPy
    check_same(add_offset, x, 300, compiled=compiled, calls=1, graphs=2, breaks=0)


def inverse_distance(x, step):
    return x * (1.0 / (step - 3))


def test_division_by_zero_in_python_arithmetic_raises_as_python_does():
    compiled = npdynamo.compile(inverse_distance)
    for step in (0, 1, 2, 3, 4):  # step 3: ZeroDivisionError from the graph's Python division
        check_same(inverse_distance, np.ones(2), step, graphs=min(step + 1, 2), breaks=0,
                   compiled=compiled, calls=1)


def repeat_rows(x, n):
    out = x
    for _ in range(n):  # a dynamic int used by Python: specialised, still right
        out = out + x
    return out


def test_python_uses_of_a_dynamic_scalar_specialise_it():
    compiled = npdynamo.compile(repeat_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(1, 6):
            check_same(repeat_rows, np.ones(2), n, compiled=compiled, calls=1, graphs=n,
                       breaks=0)  # one entry per n


def test_dynamic_false_keeps_numbers_constant():
    backend = CountingBackend()
    compiled = npdynamo.compile(sgd, backend=backend, dynamic=False)
    for i in range(4):
        check_same(sgd, *_sgd_args(i), compiled=compiled, calls=1, graphs=i + 1, breaks=0)
    assert backend.count == 4


def test_explain_says_which_inputs_are_dynamic():
    compiled = npdynamo.compile(sgd)
    for i in range(2):
        compiled(*_sgd_args(i))
    report = npdynamo.explain(compiled)(*_sgd_args(5))
    assert "Dynamic (no guard on their values): lr (float)" in str(report)
    assert "type(lr) is float" in report.verbose()


def draw_then_break(x, rng):
    v = rng.normal()  # a Python float: NumPy draws it at a graph break
    npdynamo.graph_break()
    return x * v + 1.0


def count_then_break(x, rng):
    n = int(rng.integers(0, 300))  # a Python int, too large for int8 on some calls
    npdynamo.graph_break()
    return x + n


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_float_drawn_before_a_break_is_a_dynamic_local_of_the_resume_function(backend):
    counting = CountingBackend() if backend == "eager" else NumbaCounting()
    compiled = npdynamo.compile(draw_then_break, backend=counting)
    for i in range(20):
        x = np.arange(3, dtype=np.float32)
        got = compiled(x, np.random.default_rng(i))
        expected = draw_then_break(x, np.random.default_rng(i))
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6 if backend == "numba" else 0)
    assert counting.count == 2  # the first value as a constant, then a graph input


def test_an_int_drawn_before_a_break_keeps_python_s_promotion():
    compiled = npdynamo.compile(count_then_break, backend=CountingBackend())
    for i in range(12):  # int8 + an int out of its range raises as NumPy does
        for dtype in (np.int8, np.int64):
            x = np.arange(3, dtype=dtype)
            run = run_both(count_then_break, compiled, (x, np.random.default_rng(i)), {})
            if run.exc is None:
                assert_same_value(run.expected, run.got)
