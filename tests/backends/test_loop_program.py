"""Whole loops compiled into one njit function (``backends/numba/loop_program.py``).

Each program runs plain, compiled on the eager backend (bitwise, with the arguments' states)
and compiled on the numba backend (within tolerance); the numba report must say the loop ran as
one compiled program and count its runs, so a silent fall back to the Python loop fails.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo as nd
from benchmarks.loop_kernels import crc16
from examples.solver_loop import heat_stencil, jacobi, make_system
from tests.backends.compare import assert_close
from tests.capture import control_flow_programs as P
from tests.capture import for_loop_programs as FL
from tests.capture import triangular_programs as TRI
from tests.differential import check_same, run_both

RNG = np.random.default_rng(13)


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    # the tuner may run the eager candidate on the first calls: the loop program must run
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")


def loop_records(compiled) -> list:
    """The loop records of the numba graphs ``compiled`` holds after its calls (the function the
    test ran, not a second capture and compile of it)."""
    return [record for graph in nd.inspect(compiled).graphs
            for record in [*(getattr(graph.report, "loops", None) or []),
                           getattr(graph.report, "whole", None)] if record is not None]


def same_everywhere(fn, *args, compiled_loops: int = 1) -> list:
    """``fn`` plain vs eager (bitwise, in one graph with no break) vs numba (within tolerance,
    same exceptions); the numba report shows ``compiled_loops`` loops run as compiled programs.
    Returns the records."""
    check_same(fn, *args, graphs=1, breaks=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback of the numba backend to eager
        compiled = nd.compile(fn, backend="numba")
        for _ in range(2):
            run = run_both(fn, compiled, args, {})  # same exception type and message
            if run.exc is None:
                assert_close(run.got, run.expected)
            assert_close(run.comp_args, run.plain_args, "args after the call")
        records = loop_records(compiled)
    ran = [r for r in records if r.compiled and r.runs > 0]
    assert len(ran) == compiled_loops, [str(r) for r in records]
    return records


# -- programs ------------------------------------------------------------------------------------
def conjugate_gradient(A, b, tol):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    while np.sqrt(rs) > tol:
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        new = r @ r
        p = r + (new / rs) * p
        rs = new
    return x


def newton_scalar(a):
    """The square root of ``a`` (a NumPy float) by Newton's method: scalars carried only."""

    def going(state):
        _x, step = state
        return np.abs(step) > 1e-14

    def step(state):
        x, _ = state
        delta = (x * x - a) / (2.0 * x)
        return x - delta, delta

    return nd.while_loop(going, step, (a + np.float64(1.0), np.float64(1.0)))[0]


def plain_while(A, b):
    x = np.zeros_like(b)
    err = 1.0
    steps = 0
    while err > 1e-10:
        new = (b - A @ x) / 10.0
        err = np.abs(new - x).max()
        x = new
        steps += 1
    return x, steps


def cond_in_body(x, T):
    def body(t, v):
        return nd.cond(v.sum() > 0, lambda w: w - 0.5 * t, lambda w: w * 1.5 + 1.0, v)

    return nd.fori_loop(0, T, body, x)


def halve_until_small(x):
    """A plain ``if`` on an array value inside a plain ``while``: a cond in a while_loop."""
    steps = 0
    while np.abs(x).max() > 1.0:
        if x.sum() > 0:
            x = x * 0.5
        else:
            x = x * 0.75
        steps += 1
    return x, steps


def rows_summed(v, T):
    """Reads row ``t`` of ``v``: out of bounds once ``T`` exceeds its rows."""
    s = np.zeros(v.shape[1])
    for t in range(T):
        s = s + v[t]
    return s


def sorted_each_step(x, T):
    """``np.sort`` has no nopython form: the compiled loop calls NumPy's in object mode."""
    return nd.fori_loop(0, T, lambda t, v: np.sort(v * -1.0), x)


def int_matmul_and_pow(M, x, T):
    """An int matrix product and a Python power: NumPy calls inside the compiled loop."""

    def body(t, state):
        v, k = state
        return (M @ v) % 7, k ** 2 % 1000 + t

    return nd.fori_loop(0, T, body, (x, 3))


def gradient_steps(A, b, T):
    """``A.T`` (a NumPy call in object mode: an F-ordered view) read by a matrix product."""
    x = np.zeros(A.shape[1])
    for _t in range(T):
        x = x + 0.01 * (A.T @ (b - A @ x))
    return x


def half_carried(z, T):
    """A carried float16 array: numba has no float16, the loop stays in Python."""
    return nd.fori_loop(0, T, lambda t, v: v * 0.5, z.astype(np.float16))


def signed_shifts(v, counts):
    """Arithmetic right shifts of negative values and counts past the width, in a loop."""
    acc = np.zeros_like(v)
    for i in range(counts.shape[0]):
        acc = (acc ^ (v >> counts[i])) + (v << counts[i])
    return acc


def int_growth(x, T):
    """A Python int carried through the loop outgrows int64: Python's exact int results."""

    def body(t, state):
        v, n = state
        return v + 1.0, n * 3 + 1

    return nd.fori_loop(0, T, body, (x, 1))


def divide_by_zero_steps(x, T):
    return nd.fori_loop(0, T, lambda t, v: v / (v - v), x)


# -- tests ---------------------------------------------------------------------------------------
def test_jacobi_solver_is_one_compiled_loop():
    A, b = make_system(60)
    same_everywhere(jacobi, A, b, 1e-10)


def test_conjugate_gradient_with_a_plain_while():
    M = RNG.random((30, 30))
    A = M @ M.T + 30 * np.eye(30)
    same_everywhere(conjugate_gradient, A, RNG.random(30), 1e-10)


def test_newton_on_a_scalar_carried_value():
    records = same_everywhere(newton_scalar, np.float64(2.0))
    assert type(nd.compile(newton_scalar, backend="numba")(np.float64(2.0))) is np.float64
    assert records[0].op == "while_loop"


@pytest.mark.parametrize("T", [20, 2000])
def test_heat_stencil_fori_loop(T):
    same_everywhere(heat_stencil, np.sin(np.linspace(0.0, 3.0, 256)), T)


@pytest.mark.parametrize("fn, shape", [
    (FL.heat_1d, (64,)), (FL.heat_1d_in_place, (64,)), (FL.jacobi_2d, (12, 10))])
def test_plain_for_stencils(fn, shape):
    u = RNG.random(shape)  # the in-place ones end in the same state (same_everywhere checks)
    for T in (20, 300):
        same_everywhere(fn, u, T)


@pytest.mark.parametrize("fn, args", [
    (FL.index_mod, (np.ones(3), 20)),
    (FL.row_recurrence, (RNG.random(4), 30)),
    (FL.rows_in_place, (RNG.random((40, 6)),)),
    (FL.mirrored, (RNG.random(20), np.zeros(20))),
    (FL.two_arrays, (RNG.random(12), np.zeros(10), 30)),
    (FL.if_else_ends_body, (np.ones(3), 40)),
], ids=["index_mod", "row_recurrence", "rows_in_place", "mirrored", "two_arrays", "if_else"])
def test_plain_for_loops_indexing_with_the_loop_index(fn, args):
    same_everywhere(fn, *args)


def test_plain_for_loops_with_the_index_and_counters():
    same_everywhere(FL.with_index_arithmetic, RNG.random(5), 40)
    same_everywhere(FL.counters, RNG.random(5), 40)
    same_everywhere(FL.nested, RNG.random(5), 20, 18)


def test_plain_while_err_above_tol():
    A = np.eye(6) + 0.1 * RNG.random((6, 6))
    records = same_everywhere(plain_while, A, np.ones(6))
    x, steps = nd.compile(plain_while, backend="numba")(A, np.ones(6))
    assert type(steps) is int and steps == plain_while(A, np.ones(6))[1]
    assert "one compiled program" in str(records[0])


def test_nested_loops_and_a_cond_in_a_loop_body():
    same_everywhere(P.nested, RNG.standard_normal(4) * 10, 0, 5)
    same_everywhere(cond_in_body, RNG.standard_normal(5), 30)
    same_everywhere(halve_until_small, RNG.standard_normal(5) * 50)


def test_carried_tuples_mix_arrays_and_python_numbers():
    same_everywhere(P.carried_numbers, RNG.random(3), 7)
    v, count, total = nd.compile(P.carried_numbers, backend="numba")(RNG.random(3), 7)
    assert (type(count), type(total)) == (int, float)
    same_everywhere(P.early_stopping, np.array([5.0, 4, 3, 3.5, 3.2, 3.1, 3.3, 2.0]), 2)


def test_an_index_out_of_bounds_raises_as_numpy_does():
    v = RNG.random((40, 3))
    same_everywhere(rows_summed, v, 30)
    compiled = nd.compile(rows_summed, backend="numba")
    compiled(v, 30)  # compiled for these argument types
    # the compiled loop stops at the bad index; the Python loop then raises NumPy's IndexError
    # (run_both compares type and message)
    for fn in (nd.compile(rows_summed), compiled):
        run = run_both(rows_summed, fn, (v, 50), {})
        assert type(run.exc) is IndexError
        assert_close(run.comp_args, run.plain_args)


def test_python_int_overflowing_int64_reruns_in_python():
    x = RNG.random(3)
    same_everywhere(int_growth, x, 10)
    got = nd.compile(int_growth, backend="numba")(x, 60)[1]
    assert got == int_growth(x, 60)[1] and got > 2**63


def test_a_loop_that_cannot_be_written_falls_back_with_its_reason():
    z = RNG.random(6)
    check_same(half_carried, z, 20, graphs=1, breaks=0)
    compiled = nd.compile(half_carried, backend="numba")
    assert_close(compiled(z, 20), half_carried(z, 20))
    (record,) = loop_records(compiled)
    assert not record.compiled and "float16" in record.why, str(record)
    assert "Python loop (" in str(record)


def test_ops_without_a_nopython_form_are_numpy_calls_inside_the_compiled_loop():
    (record,) = same_everywhere(sorted_each_step, RNG.random(6), 20)
    assert record.numpy_ops == ("sort",) and "object mode: sort" in str(record)
    M = RNG.integers(0, 5, (4, 4))
    (record,) = same_everywhere(int_matmul_and_pow, M, RNG.integers(0, 5, 4), 20)
    assert {"matmul", "py_pow"} <= set(record.numpy_ops), str(record)
    # a private view of another layout is read through its C-ordered copy
    (record,) = same_everywhere(gradient_steps, RNG.random((8, 5)), RNG.random(8), 30)
    assert record.numpy_ops == ("transpose",), str(record)


def test_shifts_are_compiled_loop_code_not_numpy_calls():
    # the corpus's CRC: shifts, masks and an if on a bit, all scalar loop code; the peeled
    # first iteration's branches put the whole graph in one function, which runs instead
    records = same_everywhere(crc16, RNG.integers(0, 256, 24))
    assert all(record.numpy_ops == () for record in records), [str(r) for r in records]
    assert [r.op for r in records if r.runs] == ["whole graph"]
    for dtype in ("int8", "int64", "uint16"):
        v = np.array([-128, -7, -1, 0, 1, 5, 127], dtype=np.int64).astype(dtype)
        # 20 counts: a loop of fewer than config.for_loop_min_trips steps would be unrolled
        counts = np.array([0, 1, 3, 7, 8, 9, 63, 64, 70, -1] * 2, dtype=np.int64).astype(dtype)
        nd.reset()  # the entries of the other dtypes are the same function's: count this one's
        records = same_everywhere(signed_shifts, v, counts)
        assert records and all(r.numpy_ops == () for r in records), [str(r) for r in records]


def test_zero_trip_loops_return_what_the_python_loop_returns():
    u = np.sin(np.linspace(0.0, 3.0, 32))
    compiled = nd.compile(heat_stencil, backend="numba")
    assert compiled(u, 0) is heat_stencil(u, 0) is u
    A, b = make_system(20)
    same_everywhere(jacobi, A, b, 1e30)  # the condition is false at once
    same_everywhere(heat_stencil, u, 0)


def test_a_users_errstate_runs_the_python_loop():
    x = np.ones(4)
    compiled = nd.compile(divide_by_zero_steps, backend="numba")
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            compiled(x, 3)
    with np.errstate(all="ignore"):
        assert_close(compiled(x, 3), divide_by_zero_steps(x, 3))


def test_the_explain_report_lists_the_loop():
    report = nd.explain(heat_stencil, backend="numba")(np.ones(16), 20)
    text = report.verbose()
    assert "loop fori_loop (fori_loop): one compiled program" in text, text


@pytest.mark.parametrize("fn, make", [
    (heat_stencil, lambda n: (np.sin(np.linspace(0.0, 3.0, n)), 30)),
    (FL.jacobi_2d, lambda n: (RNG.random((n, n + 1)), 25)),
    (FL.rows_in_place, lambda n: (RNG.random((n, 6)),)),
], ids=["heat_stencil", "jacobi_2d", "rows_in_place"])
def test_one_compiled_loop_serves_every_size(fn, make):
    compiled = nd.compile(fn, backend="numba", dynamic=True)
    for n in (20, 33):
        args = make(n)
        run = run_both(fn, compiled, args, {})
        assert_close(run.got, run.expected)
        assert_close(run.comp_args, run.plain_args, "args after the call")
    (record,) = loop_records(compiled)
    assert record.compiled and record.runs > 0, str(record)


def flipped_each_step(x, T):
    """``np.flip`` (object mode) gives a view of negative stride: the compiled code cannot
    take it, so the loop reruns in Python, from then on for good."""
    return nd.fori_loop(0, T, lambda t, v: np.flip(v * 2.0), x)


def test_a_numpy_call_giving_another_layout_sends_the_loop_back_to_python():
    x = RNG.random(5)
    check_same(flipped_each_step, x, 20, graphs=1, breaks=0)
    report = nd.explain(flipped_each_step, backend="numba")(x.copy(), 20)
    (record,) = report.backend_reports[0].loops
    assert not record.compiled and "UnexpectedValue" in record.why, str(record)
    assert_close(report.result, flipped_each_step(x, 20))


def test_a_read_only_or_fortran_ordered_argument_runs_that_call_in_python():
    u = np.sin(np.linspace(0.0, 3.0, 32))
    u.flags.writeable = False
    same_everywhere(heat_stencil, np.array(u), 20)  # compiled for writeable arrays
    report = nd.explain(heat_stencil, backend="numba")(u, 20)
    (record,) = report.backend_reports[0].loops
    assert record.compiled and record.runs == 0, str(record)
    assert_close(report.result, heat_stencil(u, 20))
    f = np.asfortranarray(RNG.random((6, 5)))
    check_same(FL.jacobi_2d, f, 20, graphs=1, breaks=0)
    report = nd.explain(FL.jacobi_2d, backend="numba")(f.copy(order="F"), 20)
    (record,) = report.backend_reports[0].loops
    assert record.compiled and record.runs == 0, str(record)


@pytest.mark.parametrize("fn, make", [
    (TRI.cholesky_rows, lambda n: (TRI.spd(n, RNG),)),
    (TRI.lu_doolittle, lambda n: (TRI.diagonally_dominant(n, RNG),)),
    (TRI.forward_substitution, lambda n: (np.tril(TRI.diagonally_dominant(n, RNG)),
                                          RNG.random(n))),
    (TRI.gauss_seidel, lambda n: (TRI.diagonally_dominant(n, RNG), RNG.random(n),
                                  np.zeros(n), 20)),
], ids=["cholesky_rows", "lu_doolittle", "forward_substitution", "gauss_seidel"])
def test_triangular_loops_with_the_index_as_a_size(fn, make):
    """Shapes that are expressions of the loop index (``A[:i, i:]``): the index's symbol is
    bound in the body each iteration, and such buffers are never allocated once per call."""
    compiled = nd.compile(fn, backend="numba", dynamic=True)
    for n in (20, 26):
        run = run_both(fn, compiled, make(n), {})
        assert_close(run.got, run.expected, rtol=1e-9)
        assert_close(run.comp_args, run.plain_args, "args after the call", rtol=1e-9)
    (record,) = loop_records(compiled)
    assert record.compiled and record.runs > 0, str(record)
