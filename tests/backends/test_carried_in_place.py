"""A loop body's kernel that rebinds a carried vector (``v = v - r * q``, Gram-Schmidt's inner
step) writes it in place in the numba loop program (``direct_writes(owned=True)``) instead of
allocating a new vector per iteration; and the cases where that would be wrong keep their
allocation: the old vector read after the kernel, read through a view at other indices,
carried on as another value, or reached through another input of the loop (``held[0]`` of
``held = [v]``) or through a view taken before an inner loop rebinds it (``w = v[:]``), and a
start value that is the caller's argument. Eager bitwise, numba at its
tolerance, argument states, one graph and no break."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import npdynamo
from benchmarks.loop_kernels import gram_schmidt as project_out
from tests.backends.compare import assert_close
from tests.differential import check_same, run_both

RNG = np.random.default_rng(25)


def decay(x, n):
    """Starts from the argument itself: the loop copies it once before writing it."""
    v = x
    for _ in range(n):
        v = v * 0.5 + 1.0
    return v, x


def via_list(x, n):
    """The start value is also read, unchanged, as ``held[0]``: not written in place."""
    v = x.copy()
    held = [v]
    for _ in range(n):
        v = v * 0.5 + held[0]
    return v


def via_tuple_nested(x, n):
    """The same inside an outer loop: the inner loop's start value is the outer's vector."""
    v = x.copy()
    for _ in range(n):
        held = (v,)
        for _ in range(20):
            v = v * 0.5 + held[0]
    return v


def reversed_mix(x, n):
    """The kernel reads ``v[::-1]``, a view of ``v`` at other indices: not in place."""
    v = x.copy()
    for i in range(n):
        v = 0.5 * (v + v[::-1]) + i
    return v


def old_read_after(x, n):
    """The old ``v`` is read after the new one is computed (by ``v @ w``): not in place."""
    v = x.copy()
    s = 0.0
    for _ in range(n):
        w = v * 0.5 + 1.0
        s = s + v @ w
        v = w
    return v, s


def old_read_in_the_kernel(x, n):
    """The old ``v`` is read by the kernel computing the new one (``d``'s update fuses with
    ``w``): each element read before the kernel stores it, so both are written in place."""
    v = x.copy()
    d = np.zeros_like(x)
    for _ in range(n):
        w = v * 0.5 + 1.0
        d = d + (w - v)
        v = w
    return v, d


def both_kept(x, n):
    """The new vector is carried as two values: writing one would change the other."""
    v = x.copy()
    u = x.copy()
    for _ in range(n):
        v = v * 0.5 + u
        u = v
    return v, u


def view_kept(x, n):
    """``w = v[:]`` views the outer loop's vector and is read after the inner loop rebinds
    ``v``: the inner loop may not write the outer's vector in place (``w`` keeps its values)."""
    v = x.copy()
    t = np.zeros_like(x)
    for _ in range(n):
        w = v[:]
        for _ in range(20):
            v = v * 0.5 + 1.0
        t = t + w
    return v, t


def reshaped_kept(x, n):
    """The same through a reshape (a NumPy call giving a view) and a read after the loop."""
    v = x.copy()
    t = np.zeros(x.shape[0])
    for _ in range(n):
        w = v.reshape(-1)
        for _ in range(20):
            v = v * 0.5 + 1.0
        t = t + w
    return v, t


def last_column(A):
    """A column copied and updated by an inner loop (as Gram-Schmidt's), also carried out of
    the outer iteration (``last``): a new copy each time, not one buffer."""
    m, n = A.shape
    total = np.zeros(m)
    last = np.zeros(m)
    for k in range(n):
        v = A[:, k].copy()
        for j in range(k):
            v = v - 0.5 * A[:, j]
        total = total + v
        last = v
    return total, last


CASES = [
    (project_out, lambda: (RNG.random((20, 16)),)),
    (decay, lambda: (RNG.random(7), 40)),
    (via_list, lambda: (RNG.random(7), 40)),
    (via_tuple_nested, lambda: (RNG.random(7), 20)),
    (reversed_mix, lambda: (RNG.random(7), 40)),
    (old_read_after, lambda: (RNG.random(7), 40)),
    (old_read_in_the_kernel, lambda: (RNG.random(7), 40)),
    (both_kept, lambda: (RNG.random(7), 40)),
    (last_column, lambda: (RNG.random((6, 20)),)),
    (view_kept, lambda: (RNG.random(7), 20)),
    (reshaped_kept, lambda: (RNG.random(7), 20)),
]
IDS = [fn.__name__ for fn, _ in CASES]


@pytest.mark.parametrize("fn,args", CASES, ids=IDS)
def test_eager_is_bitwise_python(fn, args):
    check_same(fn, *args(), calls=2, graphs=1, breaks=0)


@pytest.mark.parametrize("fn,args", CASES, ids=IDS)
def test_numba_matches_python(fn, args):
    compiled = npdynamo.compile(fn, backend="numba")
    for _ in range(3):
        run = run_both(fn, compiled, args(), {})
        assert_close(run.got, run.expected)
        assert_close(run.comp_args, run.plain_args, "args after the call")
    found = npdynamo.inspect(compiled)
    assert len(found.graphs) == 1 and not any(e.graph_break for e in found.entries)


def _innermost_body(lines: list[str]) -> list[str]:
    """The lines of the deepest ``for`` loop's body."""
    start = max((k for k, line in enumerate(lines) if line.lstrip().startswith("for ")),
                key=lambda k: len(lines[k]) - len(lines[k].lstrip()))
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def test_the_inner_step_allocates_no_vector(loop_sources):
    """Modified Gram-Schmidt (the loop corpus's): ``v = v - R[j, k] * Q[:, j]`` per inner step."""
    compiled = npdynamo.compile(project_out, backend="numba")
    run = run_both(project_out, compiled, (RNG.random((20, 16)),), {})
    assert_close(run.got, run.expected)
    assert loop_sources
    for lines in loop_sources:
        body = _innermost_body(lines)
        assert not any("np.empty" in line or ".copy()" in line for line in body), \
            "\n".join(lines)


def _allocates_per_step(lines: list[str]) -> bool:
    return any("np.empty" in line for line in _innermost_body(lines))


def _copies_first(lines: list[str]) -> bool:
    return any(".copy()" in line for line in lines)


@pytest.mark.parametrize("fn,kept", [
    (reversed_mix, _allocates_per_step), (old_read_after, _allocates_per_step),
    (both_kept, _allocates_per_step),
    # written in place, into the loop's own copy made before its first iteration (not into
    # the array ``held`` still refers to)
    (via_list, _copies_first), (via_tuple_nested, _copies_first),
], ids=["reversed_mix", "old_read_after", "both_kept", "via_list", "via_tuple_nested"])
def test_aliased_vectors_are_not_written_in_place(loop_sources, fn, kept):
    compiled = npdynamo.compile(fn, backend="numba")
    run = run_both(fn, compiled, (RNG.random(7), 20), {})
    assert_close(run.got, run.expected)
    assert loop_sources
    for lines in loop_sources:
        assert kept(lines), "\n".join(lines)


def _loop_bodies(lines: list[str]) -> list[str]:
    first = next(k for k, line in enumerate(lines) if line.lstrip().startswith("for "))
    return lines[first:]


@pytest.mark.parametrize("fn,hoisted", [(project_out, True), (last_column, False)])
def test_a_column_copy_dead_at_the_iterations_end_is_one_buffer(loop_sources, fn, hoisted):
    """``v = A[:, k].copy()`` copies into one buffer allocated at entry when nothing holds
    ``v`` after the outer iteration (also through the inner loop that updates it); a ``v``
    carried out of the iteration (``last = v``) is a new array each time."""
    A = RNG.random((6, 20)) if fn is not project_out else RNG.random((20, 16))
    compiled = npdynamo.compile(fn, backend="numba")
    run = run_both(fn, compiled, (A,), {})
    assert_close(run.got, run.expected)
    nests = [lines for lines in loop_sources
             if sum(line.lstrip().startswith("for ") for line in lines) >= 2]
    assert nests
    for lines in nests:
        copies = [line for line in _loop_bodies(lines) if ".copy()" in line]
        if hoisted:
            assert not copies and any("assign(h" in line for line in lines), "\n".join(lines)
        else:
            assert copies, "\n".join(lines)


_TRIPS = {fn: npdynamo.compile(fn, backend="numba")
          for fn in (decay, via_list, reversed_mix, old_read_in_the_kernel, view_kept)}


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(fn=st.sampled_from(sorted(_TRIPS, key=lambda f: f.__name__)), n=st.integers(0, 40),
       x=arrays(np.float64, 7, elements=st.floats(-1e3, 1e3)))
def test_any_trip_count_and_values(fn, n, x):
    """The loops run once at 20 trips (formed: one entry for every trip count that runs the
    loop; an empty range is a second graph), then on drawn trip counts, zero included (the
    loop returns what it was given: no copy was made)."""
    compiled = _TRIPS[fn]
    run_both(fn, compiled, (np.ones(7), 20), {})
    run = run_both(fn, compiled, (x, n), {})
    assert_close(run.got, run.expected)
    assert_close(run.comp_args, run.plain_args, "args after the call")
    found = npdynamo.inspect(compiled)
    assert len(found.graphs) <= 2 and not any(e.graph_break for e in found.entries)
