"""Loops that own their carried arrays: a body's assignments into a carried array write it in
place (no copy of the whole matrix per iteration), into a copy the loop makes before its first
iteration. Same values, same argument states and the same exceptions as plain Python, on both
backends; a loop of no iteration returns the arrays it was given."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.eager import owning_loops
from tests.backends.compare import assert_close
from tests.capture import triangular_programs as TRI
from tests.differential import CountingBackend, check_same, run_both

RNG = np.random.default_rng(3)


def scaled_rows(A, n):
    for i in range(n):
        A[i, :] *= 0.5  # the argument itself: the entry writes the loop's result back
    return A.sum()


def rows_then_bad_index(A, n):
    for i in range(n):
        A[i, i:] -= 1.0
        A[i + 3, 0] += A[i, 0]  # past the end at i = n - 3: IndexError midway
    return A


def kept_alias(A, n):
    B = A  # the same array: both names see every write
    for i in range(n):
        A[i, i:] += 1.0
    return B, A is B


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn,args", [
    (TRI.cholesky_rows, lambda: (TRI.spd(40, RNG),)),
    (scaled_rows, lambda: (RNG.random((20, 5)), 20)),
    (kept_alias, lambda: (RNG.random((20, 20)), 20)),
], ids=["cholesky", "argument", "alias"])
def test_in_place_loops_match_python(fn, args, backend):
    if backend == "eager":
        check_same(fn, *args(), calls=3, graphs=1, breaks=0)
        return
    compiled = npdynamo.compile(fn, backend="numba")
    for _ in range(2):
        run = run_both(fn, compiled, args(), {})
        assert_close(run.got, run.expected, rtol=1e-9)
        assert_close(run.comp_args, run.plain_args, "args after the call", rtol=1e-9)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_raise_midway_leaves_the_argument_as_python_does(backend):
    A = RNG.random((20, 20))
    compiled = npdynamo.compile(rows_then_bad_index, backend=backend)
    run = run_both(rows_then_bad_index, compiled, (A, 20), {})  # the same IndexError
    assert isinstance(run.exc, IndexError)
    np.testing.assert_array_equal(run.comp_args[0], run.plain_args[0])


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_no_iteration_returns_the_array_itself(backend):
    def loop(A, n):
        B = A * 1.0
        for i in range(n):
            B[i, i:] -= 1.0
        return B

    compiled = npdynamo.compile(loop, backend=backend)
    for n in (20, 0, 20):
        run = run_both(loop, compiled, (RNG.random((20, 20)), n), {})
        assert_close(run.got, run.expected)


def test_the_body_writes_its_carried_array_in_place():
    backend = CountingBackend()
    npdynamo.compile(TRI.cholesky_rows, backend=backend)(TRI.spd(20, RNG))
    graph = backend.graphs[0].graph
    owned = owning_loops(graph)
    assert owned is not None
    (loop,) = [n for n in owned.nodes if getattr(n.target, "name", "") == "fori_loop"]
    assert loop.target.impl.__name__ == "fori_loop_owning"


def weighted_distances(A, B, W):
    """Two nested loops filling a matrix element by element (numpy-benchmarks' ``wdist``)."""
    m, n = A.shape[1], B.shape[1]
    D = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            d = (A[:, i] - B[:, j]) / W[:, i]
            D[i, j] = np.sqrt((d**2).sum())
    return D


def test_an_inner_loop_writes_in_place_inside_an_outer_one():
    """The inner loop owns the matrix (one copy per outer iteration, not one per element); the
    outer body, which writes nothing itself, is generated around it."""
    args = (RNG.random((6, 30)), RNG.random((6, 30)), RNG.random((6, 30)) + 0.5)
    check_same(weighted_distances, *args, calls=3, graphs=1, breaks=0)
    backend = CountingBackend()
    npdynamo.compile(weighted_distances, backend=backend)(*args)
    owned = owning_loops(backend.graphs[0].graph)
    assert owned is not None
    (outer,) = [n for n in owned.nodes if getattr(n.target, "name", "") == "fori_loop"]
    assert outer.target.impl.__name__ != "fori_loop_owning"  # copies nothing itself
    body = outer.args[2]  # the generated outer body: its inner loop is the owning one
    inner = [v for v in body.__globals__.values()
             if getattr(v, "__name__", "") == "fori_loop_owning"]
    assert inner


def test_a_cond_that_reads_elements_leaves_the_matrix_owned(loop_sources):
    """Smith-Waterman: a ``cond`` reads ``H[i - 1, j - 1]`` and gives a number, then
    ``H[i, j] = h``: the numba loop writes ``H`` in place (one copy before the loops, none
    per element)."""
    from benchmarks.loop_kernels import smith_waterman

    sources = loop_sources
    args = (RNG.integers(0, 4, 20), RNG.integers(0, 4, 23), 2.0, -1.0, 1.0)
    compiled = npdynamo.compile(smith_waterman, backend="numba")
    run = run_both(smith_waterman, compiled, args, {})
    assert_close(run.got, run.expected, rtol=1e-9)
    assert sources
    for lines in sources:
        first_loop = next(k for k, line in enumerate(lines) if line.lstrip().startswith("for "))
        assert not any(".copy()" in line for line in lines[first_loop:]), "\n".join(lines)


def escape_steps(C, n):
    """A masked update of a carried array (numpy-benchmarks' mandelbrot): ``Z[I] = ...``."""
    Z = np.zeros_like(C)
    N = np.zeros(C.shape, np.int64)
    for k in range(n):
        inside = np.abs(Z) < 2.0
        N[inside] = k
        Z[inside] = Z[inside] ** 2 + C[inside]
    return Z, N


def test_a_masked_update_writes_the_carried_array_in_place():
    grid = np.linspace(-2.0, 1.0, 30)
    C = grid + 1j * grid[:, None]
    check_same(escape_steps, C, 20, calls=3, graphs=1, breaks=0)
    backend = CountingBackend()
    npdynamo.compile(escape_steps, backend=backend)(C, 20)
    owned = owning_loops(backend.graphs[0].graph)
    (loop,) = [n for n in owned.nodes if getattr(n.target, "name", "") == "fori_loop"]
    assert loop.target.impl.__name__ == "fori_loop_owning"
    body = loop.args[2]  # both carried arrays written in place: the masked update too
    called = {getattr(v, "__name__", "") for v in body.__globals__.values()}
    assert "mask_apply_into" in called and "_mask_apply" in called  # (its copying fallback)
