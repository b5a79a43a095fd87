"""What the loop writer generates for a loop program's body (``backends/numba/loop_writer.py``):
scalar kernels inlined and returning their values, plain int64 index arithmetic where its range
is proved, ``loop_runtime``'s helpers inlined, comparisons
of Python numbers as loop code, and a graph with a branch at its top level as one function
(``loop_program.whole_graph_program``). Each program runs plain, on eager (bitwise) and on numba
(within tolerance) through ``same_everywhere``, which also asserts the compiled code ran."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from numba import njit

import npdynamo as nd
from benchmarks.loop_kernels import cholesky_rows, crc16, nussinov
from npdynamo.backends.numba import loop_runtime
from tests.backends.compare import assert_close
from tests.backends.test_loop_program import loop_records, same_everywhere
from tests.differential import run_both

RNG = np.random.default_rng(25)


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    # the tuner may run the eager candidate on the first calls: the compiled code must run
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")


def _globals(record) -> dict:
    return record.dispatcher.py_func.__globals__


def _source(record) -> str:
    import inspect
    return inspect.getsource(record.dispatcher.py_func)


def iterate_until(x, tol, max_iter):
    it = 0
    while True:
        x = 0.5 * x + 1.0
        it += 1
        if np.abs(x - 2.0).max() < tol or it >= max_iter:
            break
    return x, it


def signed_running_sum(x, n):
    s = 0  # a Python int that the first step makes float64: that step is peeled
    for i in range(n):
        s = s + x[i] if x[i] > 0.5 else s - x[i]
    return s


# -- scalar kernels -----------------------------------------------------------------------------
def test_scalar_kernels_are_inlined_into_the_loop_and_share_their_buffers():
    seq = RNG.integers(0, 4, 16)
    records = same_everywhere(nussinov, seq)
    (ran,) = [r for r in records if r.runs]
    kernels = [v for k, v in _globals(ran).items() if k.startswith("_kernel")]
    assert kernels and all(k.targetoptions.get("inline") == "always" for k in kernels)
    # numba inlines the kernels' code into the loop: one function, no separate machine code
    assert all(not k.overloads for k in kernels)


def test_scalar_kernels_return_their_numpy_scalars_with_no_0d_buffer():
    records = same_everywhere(crc16, RNG.integers(0, 256, 24))
    (ran,) = [r for r in records if r.runs]
    source = _source(ran)
    # crc16's 17 kernel calls give one or two int64 scalars each, as locals the kernel
    # returns (``v1, v2, = _kernel...``): no 0-d buffer stored into and loaded back
    assert source.count("np.empty((), ") == 0, source
    assert source.count("_kernel") >= 17
    assert re.search(r"v\d+, v\d+, = _kernel", source), source


def float32_accumulate(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s = s + x[i] * np.float32(1.5)
    return s


def int16_sum(x):
    s = np.int16(0)
    for i in range(x.shape[0]):
        s = s + x[i] * np.int16(3)  # int16 arithmetic (computed as int64 by numba)
    return s


def sum_and_max(x):
    s, m = np.float64(0.0), np.float64(-np.inf)
    for i in range(x.shape[0]):
        t = x[i] * 2.0
        s = s + t
        m = max(m, t)  # NaN and equal values: whichever Python's max keeps
    return s, m


@pytest.mark.parametrize("fn, x", [
    (float32_accumulate, RNG.random(33).astype(np.float32)),
    (int16_sum, RNG.integers(-10, 10, 40).astype(np.int16)),
    (sum_and_max, RNG.random(40)),
    (sum_and_max, np.where(np.arange(40) % 7 == 3, np.nan, RNG.random(40))),
])
def test_scalar_kernel_results_keep_their_dtypes_and_values_as_locals(fn, x):
    records = same_everywhere(fn, x)
    (ran,) = [r for r in records if r.runs]
    assert "np.empty((), " not in _source(ran), _source(ran)  # returned, not stored
    expected, got = fn(x.copy()), nd.compile(fn, backend="numba")(x.copy())
    for e, g in zip(*(v if type(v) is tuple else (v,) for v in (expected, got))):
        assert type(g) is type(e)  # float32, int16, float64: as NumPy gives them


def _last_whole(compiled):
    """The whole-graph function record of the graph ``compiled`` captured last."""
    return nd.inspect(compiled).graphs[-1].report.whole


def shifted_sum(x, y):
    s = 0.0
    for i in range(y.shape[0]):
        s += x[i + 1]  # reads past x's end when y is as long: NumPy raises IndexError
    return s


def test_an_index_out_of_bounds_in_a_compiled_loop_raises_numpys_index_error():
    fn = nd.compile(shifted_sum, backend="numba")
    x = RNG.random(40)
    for n in (30, 35, 40, 39):  # (35 on: one program for every length, which then raises)
        run = run_both(shifted_sum, fn, (x, np.zeros(n)), {})  # same exception and message
        assert (type(run.exc) is IndexError) == (n == 40)
        if run.exc is None:
            assert run.got == run.expected
    record = _last_whole(fn)
    assert record.runs >= 2  # n = 35 and 39 ran compiled (n = 40 raised in it)
    assert "int_add" not in _source(record)  # i + 1 is proved within int64: plain


def offset_index(x, k):
    s = 0.0
    n = x.shape[0]
    for i in range(n):
        s += x[(i + k) % n]  # i + k leaves int64 for a k near 2**63: Python's int does not
    return s


# (i + k for k = 1 - 2**63 is within int64 for i in 0..39: plain, and exact)
@pytest.mark.parametrize("k, bounded", [(3, True), (2**63 - 3, False), (1 - 2**63, True),
                                        (-(2**63) + 1 - 2**62, False)])
def test_an_index_sum_that_leaves_int64_is_pythons(k, bounded):
    fn = nd.compile(offset_index, backend="numba")
    x = RNG.random(40)
    for _ in range(2):
        run = run_both(offset_index, fn, (x, k), {})
        assert run.exc is None and run.got == run.expected
    # (k is a constant of the graph) i + k, in 0 + k .. 39 + k, within int64 or not
    source = _source(_last_whole(fn))
    assert ("int_add(" not in source) == bounded, source
    # unbounded: int_add raised OverflowError in every call, which reran on the usual program
    assert (_last_whole(fn).runs >= 2) if bounded else _last_whole(fn).runs == 0


# -- helpers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_vecvec_is_numpys_dot_in_its_dtype_without_an_allocation(dtype):
    x = RNG.random(7).astype(dtype)
    y = RNG.random(7).astype(dtype)

    @njit
    def dot(a, b):
        return loop_runtime.vecvec(a, b)

    # (numba gives a float32 back as a Python float: its type is numba's signature's)
    assert_close(np.asarray(dot(x, y), dtype=dtype), np.asarray(x @ y))
    assert dot.nopython_signatures[0].return_type == numba.from_dtype(np.dtype(dtype))
    assert dot(x[:0], y[:0]) == 0
    assert loop_runtime.vecvec.targetoptions["inline"] == "always"


def test_dots_of_index_bounded_slices_are_loop_code():
    A = RNG.random((20, 20))  # (a loop of fewer steps than for_loop_min_trips is unrolled)
    A = A @ A.T + 20 * np.eye(20)
    records = same_everywhere(cholesky_rows, A)
    assert all(r.numpy_ops == () for r in records)


def test_a_shorter_operand_of_a_dot_raises_as_numpy_does():
    # vecvec runs under the loop program's bounds checks: a y shorter than x stops the
    # compiled loop and the Python loop raises NumPy's own error
    def ragged_dots(a, n):
        total = 0.0
        for i in range(n):
            total = total + a[i, :i + 2] @ a[i, :i + 1]
        return total

    a = RNG.random((20, 30))
    run = run_both(ragged_dots, nd.compile(ragged_dots, backend="numba"), (a, 20), {})
    assert type(run.exc) is ValueError


# -- comparisons of Python numbers ---------------------------------------------------------------
def test_a_comparison_of_python_ints_is_loop_code_not_a_numpy_call():
    x = RNG.random(8)
    # (the loop and the whole graph's function around it, which runs: neither calls NumPy)
    records = same_everywhere(iterate_until, x, 1e-9, 500)
    assert all(r.numpy_ops == () for r in records), [str(r) for r in records]
    nd.reset()
    records = same_everywhere(iterate_until, x, 1e-30, 7)  # stops at max_iter
    assert all(r.numpy_ops == () for r in records), [str(r) for r in records]
    x_out, it = nd.compile(iterate_until, backend="numba")(x, 1e-30, 7)
    assert it == 7 and type(it) is int


# -- a whole graph as one function ---------------------------------------------------------------
def test_a_top_level_branch_makes_the_whole_graph_one_function():
    x = RNG.random(24)
    records = same_everywhere(signed_running_sum, x, 20)
    assert [r.op for r in records if r.runs] == ["whole graph"]
    assert "the whole graph: one compiled function" in str(records[-1])


def test_the_whole_graph_reruns_the_usual_program_where_it_raises():
    x = RNG.random(24)
    compiled = nd.compile(signed_running_sum, backend="numba")
    compiled(x, 20)
    run = run_both(signed_running_sum, compiled, (x, 30), {})  # reads past the end
    assert type(run.exc) is IndexError
    assert_close(run.comp_args, run.plain_args)


def test_the_whole_graph_leaves_read_only_arguments_and_errstate_to_the_program():
    x = RNG.random(24)
    compiled = nd.compile(signed_running_sum, backend="numba")
    expected = signed_running_sum(x, 20)
    assert_close(compiled(x, 20), expected)
    (whole,) = [r for r in loop_records(compiled) if r.op == "whole graph"]
    runs = whole.runs
    frozen = x.copy()
    frozen.setflags(write=False)
    assert_close(compiled(frozen, 20), expected)
    with np.errstate(all="raise"):
        assert_close(compiled(x, 20), expected)
    assert whole.runs == runs  # neither call ran the whole graph's function
    assert_close(compiled(x, 20), expected)
    assert whole.runs == runs + 1


# -- NumPy scalars' ** and np.array of NumPy scalars ---------------------------------------------
def spring_forces(pos, k):
    force = np.zeros_like(pos)
    for i in range(1, pos.shape[0]):
        dx, dy = pos[i] - pos[i - 1]
        length = np.sqrt(dx**2 + dy**2)  # ** of NumPy float64 scalars: scalar math
        pull = np.array([k * dx / length, k * dy / length])  # a vector of NumPy scalars
        force[i - 1] += pull
        force[i] -= pull
    return force


def powers_of_scalars(x, n):
    total = np.float64(0.0)
    for i in range(n):
        total = total + x[i] ** 3 + x[i] ** -1.5 + x[i] ** 0.5 + x[i] ** x[n - 1 - i]
    return total


def test_scalar_power_and_a_vector_of_scalars_are_loop_code():
    pos = np.cumsum(RNG.random((30, 2)), axis=0)
    (record,) = [r for r in same_everywhere(spring_forces, pos, 2.5) if r.runs]
    assert record.numpy_ops == (), str(record)
    source = _source(record)
    assert "math.pow(" in source and "objmode" not in source, source


@pytest.mark.parametrize("x", [RNG.random(20) + 0.5, np.r_[0.0, -1.0, np.inf, RNG.random(17)]])
def test_scalar_power_is_numpys_on_special_values(x):
    # 0 ** -1.5 is inf and -1 ** 0.5 nan, with NumPy's warnings, which the kernels' policy
    # leaves out on numba (same_everywhere compares the results; check_same the warnings on eager)
    with np.errstate(all="ignore"):
        (record,) = same_everywhere(powers_of_scalars, x, 20)  # (16 trips or more: a loop)
    assert record.numpy_ops == (), str(record)
