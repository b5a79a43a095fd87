"""Slice writes in compiled loop programs: a kernel's output written into a slice of a carried
array is ``loop_runtime.assign`` (cheap to compile), every other slice write numba's own
assignment (which broadcasts and copes with overlap); results as NumPy's either way."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo as nd
from npdynamo.backends.numba.loop_runtime import assign
from tests.backends.test_loop_program import same_everywhere


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")


def heat(u, n):
    for _ in range(n):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def heat_2d(u, n):
    for _ in range(n):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                               + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def row_written(u, n):
    for t in range(n):
        u[t % 3] = np.sqrt(u[t % 3] + 1.0)  # an int index: the selection has one dimension less
    return u


def shifted(u, n):
    for _ in range(n):
        u[1:] = u[:-1]  # overlapping: a view, not a kernel's buffer
    return u


def broadcast_column(u, n):
    for _ in range(n):
        u[1:, :] = u[:1, :] * 0.5  # a (1, m) value broadcast over the rows
    return u


def _uses_assign(records) -> bool:
    (record,) = [r for r in records if r.compiled]
    return "assign" in record.dispatcher.py_func.__code__.co_names


# (trip counts long enough that capture forms the loop instead of unrolling it)
@pytest.mark.parametrize(("fn", "args", "cheap"), [
    (heat, (np.linspace(0.0, 1.0, 40) ** 2, 30), True),
    (heat_2d, (np.random.default_rng(0).random((9, 7)), 40), True),
    (row_written, (np.random.default_rng(1).random((3, 5)), 40), True),
    (shifted, (np.arange(8.0), 40), False),
    (broadcast_column, (np.random.default_rng(2).random((4, 3)), 40), False),
], ids=["heat", "heat_2d", "row_written", "shifted", "broadcast_column"])
def test_slice_writes_in_loop_programs(fn, args, cheap):
    assert _uses_assign(same_everywhere(fn, *args)) is cheap


def test_assign_copies_and_refuses_other_shapes():
    dst = np.zeros((4, 5))
    assign(dst[1:3, ::2], np.arange(6.0).reshape(2, 3))
    want = np.zeros((4, 5))
    want[1:3, ::2] = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(dst, want)
    with pytest.raises(ValueError, match="could not broadcast"):
        assign(dst[1:3], np.ones((3, 5)))


def test_a_compiled_loop_raising_reruns_in_python_with_numpys_error():
    # the slice write's shapes agree by the guards; an error raised in the compiled loop
    # (here an index out of bounds) reruns the loop in Python: NumPy's own exception
    def stepped(u, n, k):
        for _ in range(n):
            u[1:-1] = u[1:-1] * 0.5 + u[k]
        return u

    compiled = nd.compile(stepped, backend="numba")
    u = np.linspace(0.0, 1.0, 6)
    assert np.allclose(compiled(u.copy(), 40, 2), stepped(u.copy(), 40, 2))
    with pytest.raises(IndexError) as plain:
        stepped(u.copy(), 40, 9)
    with pytest.raises(IndexError) as got:
        compiled(u.copy(), 40, 9)
    assert str(got.value) == str(plain.value)
