"""A loop with other small work around it runs as the whole graph's one function
(``loop_program._worth_one_function``), its new arrays created in nopython code
(``loop_creation``): no NumPy call and no Python step around the loop's own call.

Each function runs plain, on the eager backend (bitwise) and on numba (within tolerance), and
the numba report must show the whole graph's function ran with no NumPy call in object mode.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import npdynamo as nd
from benchmarks.loop_kernels import KERNELS
from tests.backends.compare import assert_close
from tests.backends.test_loop_program import same_everywhere
from tests.differential import check_same, run_both

RNG = np.random.default_rng(29)


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the compiled form runs from the first call


def whole_graph_ran(records) -> None:
    ran = [r for r in records if r.compiled and r.runs]
    assert [r.op for r in ran] == ["whole graph"], [str(r) for r in records]
    assert all(r.numpy_ops == () for r in records), [str(r) for r in records]


def created(A, n):
    E = np.eye(n)
    Z = np.zeros((n, n), dtype=np.int64)
    F = np.full((n,), 2.5)
    ones = np.ones_like(A)
    s = 0.0
    for i in range(n):
        for j in range(i):
            E[i, j] = A[i, j] * F[j] + ones[j, i]
            Z[i, j] = i - j
            s += A[j, i]
    return E, Z, ones, s


def test_new_arrays_around_a_loop_are_nopython_code():
    whole_graph_ran(same_everywhere(created, RNG.random((20, 20)), 20))


def like_of_a_column_block(A):
    B = A[:, 1:]  # strided: NumPy's zeros_like keeps its C order; the check holds
    Z = np.zeros_like(B)
    for i in range(B.shape[0]):
        Z[i, 0] = B[i, 0] + i
    return Z


def like_of_a_transpose(A):
    Z = np.zeros_like(A.T)  # F-ordered in NumPy: no nopython form gives that
    for i in range(Z.shape[0]):
        Z[i, 0] = A[0, i] + i
    return Z


@pytest.mark.parametrize("fn", [like_of_a_column_block, like_of_a_transpose])
def test_a_like_of_a_view_keeps_numpys_memory_order(fn):
    A = RNG.random((20, 6))
    compiled = nd.compile(fn, backend="numba")
    for _ in range(2):
        run = run_both(fn, compiled, (A,), {})
        assert run.exc is None
        assert_close(run.got, run.expected)
        assert run.got.flags.c_contiguous == run.expected.flags.c_contiguous
        assert run.got.flags.f_contiguous == run.expected.flags.f_contiguous


def large_around_a_loop(x, n):
    y = np.sin(x) * 2.0 + 1.0  # a parallel kernel's size: the program keeps it
    acc = 0.0
    for i in range(n):
        acc += y[i]
    return y, acc


def test_large_work_around_a_loop_stays_the_program():
    records = same_everywhere(large_around_a_loop, RNG.random(1 << 17), 20)
    assert [r.op for r in records if r.runs] == ["fori_loop"], [str(r) for r in records]


@pytest.mark.parametrize("name", ["lu_doolittle", "cholesky_rows", "adi_sweep",
                                  "iir_forward_backward", "hysteresis", "nussinov",
                                  "jacobi_break", "jacobi_return"])
def test_corpus_kernels_run_as_one_function(name):
    (kernel,) = [k for k in KERNELS if k.name == name]
    args = kernel.make("small", np.random.default_rng(25))
    whole_graph_ran(same_everywhere(kernel.plain, *args))


def test_an_array_allocated_for_a_loop_is_not_copied_before_it():
    # iir: y = np.empty_like(x) is written by the forward loop only, z by the backward one:
    # each is the loop's own array, written in place with no copy (as hand-written numba)
    (kernel,) = [k for k in KERNELS if k.name == "iir_forward_backward"]
    records = same_everywhere(kernel.plain, *kernel.make("small", np.random.default_rng(25)))
    whole_graph_ran(records)
    (record,) = [r for r in records if r.runs]
    source = inspect.getsource(record.dispatcher.py_func)
    assert "for " in source and ".copy()" not in source, source


# -- np.diag: a vector's new matrix; a matrix's diagonal copied where it is only read --------------
def diagonals_read(A, v, n):
    D = np.diag(A)  # NumPy's read-only view: the loop reads it only
    U = np.diag(A, 1)
    M = np.diag(v, -2)  # a new (n + 2) x (n + 2) matrix
    B = np.diag(v > 0.5)
    s = 0.0
    for i in range(n):
        s += D[i] * M[i + 2, i] + U[i % (n - 1)] + B[i, i]
    return s, M


def test_diag_is_nopython_code_where_it_is_only_read():
    whole_graph_ran(same_everywhere(diagonals_read, RNG.random((20, 20)), RNG.random(20), 20))


def diagonal_returned(A, n):
    D = np.diag(A)
    s = 0.0
    for i in range(n):
        s += D[i]
    return D, s


def diagonal_view_returned(A, n):
    D = np.diag(A)
    s = 0.0
    for i in range(n):
        s += A[i, 0]
    return D[1:], s


def diagonal_through_a_loop(A, n):
    D = np.diag(A)
    E = np.zeros(n)
    for i in range(n):
        if A[i, i] > 0.5:
            E = D
    return E


@pytest.mark.parametrize("fn, counts", [
    (diagonal_returned, (1, 0)), (diagonal_view_returned, (1, 0)),
    # on eager the branch that picks the view by the data is no cond: a break each time
    (diagonal_through_a_loop, (9, 10))])
def test_a_returned_diagonal_is_numpys_read_only_view(fn, counts):
    # (data of its own: the graph count follows the diagonal, whatever ran before in the worker)
    A = np.random.default_rng(1).random((20, 20))
    A[0, 0] = 0.9  # (the loop's branch takes the diagonal)
    check_same(fn, A, 20, graphs=counts[0], breaks=counts[1])
    compiled = nd.compile(fn, backend="numba")
    for _ in range(2):
        run = run_both(fn, compiled, (A, 20), {})
        assert run.exc is None
        assert_close(run.got, run.expected)
        got = run.got[0] if isinstance(run.got, tuple) else run.got
        want = run.expected[0] if isinstance(run.expected, tuple) else run.expected
        assert got.flags.writeable == want.flags.writeable
        assert np.shares_memory(got, run.comp_args[0]) == np.shares_memory(
            want, run.plain_args[0])


# -- dots: in order below loop_runtime.SHORT_DOT terms, reassociated from there on ---------------
def prefix_dots(A, x, n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = A[i, :i] @ x[:i] + (A[:, :i] @ x[:i]).sum()  # vecvec and matvec, i terms
    return out


def test_dots_on_both_sides_of_the_short_length():
    from npdynamo.backends.numba.loop_runtime import SHORT_DOT

    n = 2 * SHORT_DOT + 3  # dots of 0 .. n - 1 terms
    A, x = RNG.standard_normal((n, n)), RNG.standard_normal(n)
    whole_graph_ran(same_everywhere(prefix_dots, A, x, n))


def _diag_graph(body_returns: str, result: str):
    """A graph ``D = np.diag(A)`` carried by a fori_loop whose body returns ``body_returns``
    ("same": D as it came, "other": a new array) and whose result is ``result`` ("read": only
    summed, "returned")."""
    from npdynamo.fx.graph import Graph
    from npdynamo.fx.graph_module import GraphModule
    from npdynamo.ops.higher_order import FORI_LOOP
    from npdynamo.ops.meta import ArrayMeta, ScalarMeta
    from npdynamo.ops.registry import REGISTRY
    from npdynamo.ops.tuples import TUPLE_ITEM

    vec = ArrayMeta((4,), np.dtype(np.float64))
    body = Graph()
    body.placeholder("i", ScalarMeta(int))
    carried = body.placeholder("d", vec)
    body.output((carried if body_returns == "same" else
                 body.call_function(REGISTRY["negative"], (carried,)),))
    g = Graph()
    a = g.placeholder("A", ArrayMeta((4, 4), np.dtype(np.float64)))
    d = g.call_function(REGISTRY["diag"], (a,))
    loop = g.call_function(FORI_LOOP, (0, 3, GraphModule(body, "body"), (d,), ()))
    item = g.call_function(TUPLE_ITEM, (loop, 0))
    g.output((item,) if result == "returned" else (g.call_function(REGISTRY["sum"], (item,)),))
    return g, d


@pytest.mark.parametrize("body_returns, result, escapes", [
    ("same", "read", False), ("same", "returned", True), ("other", "read", True)])
def test_a_carried_diagonal_escapes_where_the_loop_may_return_it(body_returns, result, escapes):
    from npdynamo.backends.numba.loop_creation import _escapes

    graph, diag = _diag_graph(body_returns, result)
    assert _escapes(diag) is escapes
