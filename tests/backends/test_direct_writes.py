"""In-place updates computed straight into the caller's arrays by the numba backend's last
kernel: same objects, same memory, same values as plain Python, and the copy-back path whenever
the direct write would not be exact."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.hooks import compiled_entries
from tests.backends.compare import assert_close


def adam(p, g, m, v, lr, t):
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    p -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)


def _arrays(n=1000, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(3)] + [
        rng.random(n).astype(dtype)]


def _report(compiled):
    (entry,) = compiled_entries(compiled)
    return entry.report


def _run_both(fn, args, calls=3, **compile_kwargs):
    """Plain and compiled on copies; the compiled arrays must stay the same objects and memory."""
    plain, comp = copy.deepcopy(args), copy.deepcopy(args)
    where = [a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else None
             for a in comp]
    ids = [id(a) for a in comp]
    compiled = npdynamo.compile(fn, backend="numba", **compile_kwargs)
    for _ in range(calls):
        want = fn(*plain)
        got = compiled(*comp)
        if want is not None:
            assert_close(got, want)
        for a, b in zip(comp, plain):
            assert_close(a, b, "argument after the call")
    assert [id(a) for a in comp] == ids
    assert [a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else None
            for a in comp] == where
    return compiled, comp


def test_in_place_adam_writes_the_callers_arrays_directly():
    p, g, m, v = _arrays()
    compiled, _ = _run_both(adam, [p, g, m, v, 1e-3, 1])
    report = _report(compiled)
    assert report.direct_writes == ["m", "p", "v"]
    assert "written in place by the kernels: m, p, v" in str(report)


def test_the_kernel_stores_through_the_inputs_own_parameter():
    """A second parameter holding the same memory would defeat LLVM's overlap check (the loop
    would run scalar): the kernel has one parameter per written array and stores into it."""
    p, g, m, v = _arrays()
    compiled, _ = _run_both(adam, [p, g, m, v, 1e-3, 1])
    dispatchers = _report(compiled).dispatchers
    assert dispatchers
    for dispatcher in dispatchers:  # the serial and the parallel version
        code = dispatcher.py_func.__code__
        params = code.co_varnames[:code.co_argcount]
        arrays = [name for name in params if not name.startswith("c")]  # c*: float constants
        assert arrays == ["in0", "in1", "in2", "in3"]  # p, g, m, v: no output parameters


def test_partly_overlapping_arguments_match_python():
    base = np.abs(_arrays(1001)[3]) + 0.5
    for shift in (1, 7):
        plain_base, comp_base = base.copy(), base.copy()
        g = np.linspace(-1, 1, 1000 - shift + 1).astype(np.float32)[: 1000 - shift]
        plain = [plain_base[: 1000 - shift].copy(), g, plain_base[:1000 - shift],
                 plain_base[shift:1000]]
        comp = [comp_base[: 1000 - shift].copy(), g, comp_base[:1000 - shift],
                comp_base[shift:1000]]
        compiled = npdynamo.compile(adam, backend="numba")
        for t in (1, 2):
            adam(*plain, 1e-3, t)
            compiled(*comp, 1e-3, t)
            assert_close(comp_base, plain_base)
            assert_close(comp[0], plain[0])


def test_a_read_only_argument_raises_as_python_after_the_writes_before_it():
    p, g, m, v = _arrays()
    v.flags.writeable = False
    plain, comp = [p.copy(), g, m.copy(), v], [p.copy(), g, m.copy(), v]
    with pytest.raises(ValueError) as want:
        adam(*plain, 1e-3, 1)
    compiled = npdynamo.compile(adam, backend="numba")
    with pytest.raises(ValueError) as got:
        compiled(*comp, 1e-3, 1)
    assert str(got.value) == str(want.value)
    for a, b in zip(comp, plain):  # m was scaled once before the failing v update, as in Python
        np.testing.assert_array_equal(a, b)


def test_a_strided_view_gets_the_copy_back_path():
    p, g, m, v = _arrays(2000)
    wide = np.zeros((2, 1000), np.float32)  # row views are contiguous, column views are not
    wide[0] = m[:1000]
    args = [p[::2], g[::2], wide[0], v[::2], 1e-3, 2]
    _run_both(adam, args)  # p and v are strided: copied back; m (a row) is written directly


def bump_and_return_new(m):
    y = m * 2.0
    m[...] = y
    return y  # a new array: must not become m itself


def bump_and_return_same(m):
    m *= 2.0
    return m


def test_a_written_value_that_is_also_returned_stays_its_own_array():
    (m,) = _arrays()[:1]
    compiled, (mc,) = _run_both(bump_and_return_new, [m])
    y = compiled(mc)
    assert y is not mc and not np.shares_memory(y, mc)
    assert _report(compiled).direct_writes == []
    compiled, (mc,) = _run_both(bump_and_return_same, [m.copy()])
    assert compiled(mc) is mc
    assert _report(compiled).direct_writes == ["m"]


def read_elsewhere_then_update(m, g):
    total = m.sum()  # another kernel reads the old m
    m += g
    return total


def update_then_numpy_call(m, a):
    m += 1.0
    return np.linalg.det(a)  # a NumPy call after the kernel: it may raise


def test_no_direct_write_when_another_step_reads_the_input_or_follows_the_kernel():
    m, g = _arrays()[:2]
    compiled, _ = _run_both(read_elsewhere_then_update, [m, g])
    assert _report(compiled).direct_writes == []
    a = np.eye(3) * 2.0
    compiled, _ = _run_both(update_then_numpy_call, [m.astype(np.float64), a])
    assert _report(compiled).direct_writes == []


def test_a_numpy_call_raising_after_the_update_leaves_pythons_state():
    m = np.ones(4)
    singular = np.zeros((2, 2))

    def update_then_inv(m, a):
        m *= 3.0
        return np.linalg.inv(a)

    plain, comp = m.copy(), m.copy()
    with pytest.raises(np.linalg.LinAlgError):
        update_then_inv(plain, singular)
    compiled = npdynamo.compile(update_then_inv, backend="numba")
    with pytest.raises(np.linalg.LinAlgError):
        compiled(comp, singular)
    np.testing.assert_array_equal(comp, plain)  # written once, as Python does


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NaNs on both sides
def test_the_same_array_passed_twice_matches_python():
    p, g, _, v = _arrays()
    shared = v.copy()  # positive: it is m and v at once, and v goes under a square root
    plain = [p.copy(), g.copy(), shared.copy()]
    plain.insert(3, plain[2])  # m is v, in both runs
    comp = [p.copy(), g.copy(), shared.copy()]
    comp.insert(3, comp[2])
    adam(*plain, 1e-3, 1)
    npdynamo.compile(adam, backend="numba")(*comp, 1e-3, 1)
    for a, b in zip(comp, plain):
        assert_close(a, b)
    assert comp[2] is comp[3]


def test_every_trailing_kernel_writes_directly_and_a_failing_one_is_recomputed(monkeypatch):
    from numba.core.errors import TypingError

    from benchmarks import workloads
    from npdynamo.backends.numba import NumbaFallbackWarning

    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the program itself is entry.compiled
    rng = np.random.default_rng(1)
    shapes = {"w": (30, 20), "b": (20,)}
    state = [{k: rng.standard_normal(s) for k, s in shapes.items()} for _ in range(2)]
    state += [{k: rng.random(s) for k, s in shapes.items()} for _ in range(2)]
    compiled, comp = _run_both(workloads.adam_in_place, [*state, 3], calls=2)
    report = _report(compiled)
    assert len(report.direct_writes) == 6 and report.kernels == 2  # one kernel per shape
    (entry,) = compiled_entries(compiled)
    program = entry.compiled.run.__globals__
    kernels = sorted(k for k in program if re.fullmatch(r"_kernel\d+", k))

    def broken(*args):
        raise TypingError("simulated: no implementation for these argument types")

    program[kernels[-1]] = broken  # the second kernel fails after the first wrote its inputs
    plain = copy.deepcopy(comp)
    workloads.adam_in_place(*plain)
    with pytest.warns(NumbaFallbackWarning, match="simulated"):
        compiled(*comp)
    for got, want in zip(comp[:4], plain[:4]):
        assert_close(got, want)


def test_a_kernel_failing_after_a_draw_does_not_draw_again(monkeypatch):
    from numba.core.errors import TypingError

    from npdynamo.backends.numba import NumbaFallbackWarning

    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the program itself is entry.compiled

    def noisy(x, rng):
        return np.exp(x * 2.0 + rng.standard_normal(x.shape)) - 1.0

    compiled = npdynamo.compile(noisy, backend="numba")
    x = np.linspace(0.0, 1.0, 16)
    plain_rng, comp_rng = np.random.default_rng(5), np.random.default_rng(5)
    assert_close(compiled(x, comp_rng), noisy(x, plain_rng))
    (entry,) = compiled_entries(compiled)
    assert entry.report.kernels >= 1  # the draw is followed by a kernel
    program = entry.compiled.run.__wrapped__.__globals__  # inside the generator-restoring wrapper
    kernels = sorted(k for k in program if re.fullmatch(r"_kernel\d+", k))

    def broken(*args):
        raise TypingError("simulated: no implementation for these argument types")

    program[kernels[-1]] = broken
    with pytest.warns(NumbaFallbackWarning, match="simulated"):
        got = compiled(x, comp_rng)
    assert_close(got, noisy(x, plain_rng))
    assert comp_rng.bit_generator.state == plain_rng.bit_generator.state


def train_step(x, y, w1, b1, w2, lr=0.05):
    h = np.maximum(x @ w1 + b1, 0.0)
    err = h @ w2 - y
    d_h = (err @ w2.T) * (h > 0)
    w2 -= lr * (h.T @ err)  # matmuls, transposes and sums follow this update
    b1 -= lr * d_h.sum(axis=0)
    w1 -= lr * (x.T @ d_h)
    return (err * err).sum()


def _train_args(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in ((16, 8), (16, 4), (8, 32), 32, (32, 4))]


def test_updates_between_matmuls_and_sums_write_the_callers_arrays_directly():
    compiled, _ = _run_both(train_step, _train_args())
    assert _report(compiled).direct_writes == ["b1", "w1", "w2"]


def test_with_warnings_as_errors_the_updates_go_through_copies():
    """With a NumPy call after the kernel that a RuntimeWarning-as-error could make raise, the
    program writes into copies (the entry copies them back), with Python's results."""
    import warnings

    compiled, comp = _run_both(train_step, _train_args())
    plain = copy.deepcopy(comp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want, got = train_step(*plain), compiled(*comp)
    assert_close(got, want)
    for a, b in zip(comp, plain):
        assert_close(a, b, "argument after the call")


def update_then_overflowing_sum(m, g, big):
    m -= g
    return (g.T * big).sum(axis=0)


def test_a_sum_raising_after_a_direct_write_leaves_pythons_state():
    """(Under warnings-as-errors alone the kernels run and do not warn: ``errstate``.)"""
    m, g = np.ones((3, 2)), np.full((3, 2), 1e300)
    compiled = npdynamo.compile(update_then_overflowing_sum, backend="numba")
    compiled(m.copy(), g, 1.0)
    plain, comp = m.copy(), m.copy()
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            update_then_overflowing_sum(plain, g, 1e300)
        with pytest.raises(FloatingPointError):
            compiled(comp, g, 1e300)
    np.testing.assert_array_equal(comp, plain)  # written once, as Python does


def update_then_numpy_sum(m, g, x):
    m -= g
    return x.sum(axis=0)  # not a trailing axis: a NumPy call after the kernel


def test_a_numpy_sum_warning_as_error_after_the_update_leaves_pythons_state():
    import warnings

    m, g = np.ones((3, 2)), np.full((3, 2), 2.0)
    x = np.full((2, 3), 1e308)  # the sum overflows: a RuntimeWarning
    compiled = npdynamo.compile(update_then_numpy_sum, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(m.copy(), g, x)
    assert _report(compiled).direct_writes == ["m"]
    plain, comp = m.copy(), m.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning):
            update_then_numpy_sum(plain, g, x)
        with pytest.raises(RuntimeWarning):
            compiled(comp, g, x)
    np.testing.assert_array_equal(comp, plain)  # written once, as Python does
