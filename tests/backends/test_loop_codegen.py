"""What the loop writer generates for a loop program's body (``backends/numba/loop_writer.py``):
scalar kernels inlined with shared 0-d buffers, ``loop_runtime``'s helpers inlined, comparisons
of Python numbers as loop code, and a graph with a branch at its top level as one function
(``loop_program.whole_graph_program``). Each program runs plain, on eager (bitwise) and on numba
(within tolerance) through ``same_everywhere``, which also asserts the compiled code ran."""

from __future__ import annotations

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


def test_numpy_scalars_of_every_kernel_share_one_buffer_per_dtype_and_position():
    records = same_everywhere(crc16, RNG.integers(0, 256, 24))
    (ran,) = [r for r in records if r.runs]
    source = _source(ran)
    # crc16's kernels give at most two int64 scalars each, 17 kernel calls in all
    assert source.count("np.empty((), ") == 2, source
    assert source.count("_kernel") >= 17


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
