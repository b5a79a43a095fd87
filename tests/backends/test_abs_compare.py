"""``abs(z) < c`` on complex ``z`` in numba kernels (``backends/numba/magnitudes.py``): decided
from ``re*re + im*im`` away from the circle, by NumPy's ``abs`` near it; NumPy's booleans bit
for bit, on values a few ulps either side of the bound, special parts (inf, nan, zeros of either
sign, subnormal and huge parts) and bounds outside the range the shortcut takes (negative, nan,
inf, tiny, huge), for every ordering either way round, complex64 and complex128."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import npdynamo as nd
from npdynamo.backends.numba import runtime
from tests.backends.compare import assert_close
from tests.differential import check_same

ORDERINGS = (np.less, np.less_equal, np.greater, np.greater_equal)


@njit
def _apply(helper, z, c, code, out):
    for i in range(z.size):
        out[i] = helper(z[i], c[i], code)


def _near_circle(c: float, dtype, rng: np.random.Generator, n: int) -> np.ndarray:
    """Complex values whose NumPy modulus is within a few ulps of ``c`` (and a few exactly)."""
    part = np.finfo(dtype).dtype
    angle = rng.uniform(0, 2 * np.pi, n)
    z = (c * np.exp(1j * angle)).astype(dtype)
    steps = rng.integers(-4, 5, n)
    re = z.real.copy()
    for k in range(n):  # nudge the real part by a few ulps
        for _ in range(abs(steps[k])):
            re[k] = np.nextafter(re[k], part.type(np.inf) if steps[k] > 0 else part.type(-np.inf))
    z.real = re
    return z


SPECIALS = [0.0, -0.0, 1.0, -2.5, 3.0, 4.0, 1e-310, 1e-40, 1e30, 1e300, np.inf, -np.inf, np.nan]
BOUNDS = [5.0, 2.5, 0.0, -1.0, np.nan, np.inf, 1e-300, 1e-70, 1e-40, 1e-20, 1e-8, 1e8, 1e20, 1e70,
          1e200, 3e38, 1e308]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([np.complex64, np.complex128]), st.sampled_from(BOUNDS),
       st.integers(0, 2**32 - 1))
def test_the_helper_gives_numpys_comparisons(dtype, bound, seed):
    rng = np.random.default_rng(seed)
    part = np.finfo(dtype).dtype
    with np.errstate(all="ignore"):
        c = part.type(bound)
        near = (_near_circle(float(c), dtype, rng, 64) if np.isfinite(c) and c > 0
                else np.zeros(0, dtype))
        re, im = np.meshgrid(np.array(SPECIALS, part), np.array(SPECIALS, part))
        special = (re + 1j * im).astype(dtype).ravel()
        scattered = (rng.standard_normal(64) * float(c if np.isfinite(c) and c else 1)
                     * np.exp(1j * rng.uniform(0, 6.3, 64))).astype(dtype)
        z = np.concatenate([near, special, scattered])
        bounds = np.full(z.size, c, part)
        helper = (runtime.complex_abs_compare_c64 if dtype is np.complex64
                  else runtime.complex_abs_compare_c128)
        for code, ordering in enumerate(ORDERINGS):
            out = np.empty(z.size, bool)
            _apply(helper, z, bounds, code, out)
            want = ordering(np.abs(z), c)
            assert np.array_equal(out, want), (ordering.__name__, c, z[out != want])


def escape(c, horizon, steps):
    z = np.zeros_like(c)
    n = np.zeros(c.shape, np.int64)
    for k in range(steps):
        inside = np.less(np.abs(z), horizon)
        n[inside] = k
        z[inside] = z[inside] ** 2 + c[inside]
    return z, n


def orderings(z, bound, bounds):
    return (np.abs(z) < bound, np.abs(z) <= bounds, bound > np.abs(z), np.abs(z) >= bound,
            np.abs(z) * 2.0 < bounds)


def _ops(report) -> set:
    """The fused ops of a numba report and of its subgraphs' (a loop body's kernels)."""
    inner = (_ops(sub) for _, sub in report.subgraphs if sub is not None)
    return {op for g in report.groups for op in g}.union(*inner)


def _fused(fn, args) -> set:
    report = nd.explain(fn, backend="numba")(*copy.deepcopy(args))
    return set().union(*(_ops(r) for r in report.backend_reports if r is not None))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_escape_loops_and_orderings_compare_in_kernels(dtype):
    rng = np.random.default_rng(7)
    grid = np.linspace(-2, 1, 40)
    c = (grid + 1j * grid[:, None] * 0.8).astype(dtype)
    check_same(escape, c, 2.0, 20, backend="eager", graphs=1, breaks=0)
    z = (rng.standard_normal(500) * 3 + 1j * rng.standard_normal(500) * 3).astype(dtype)
    z[:40] = _near_circle(2.5, dtype, rng, 40)
    bounds = np.full(500, 2.5, np.finfo(dtype).dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fn, args in ((escape, (c, 2.0, 20)), (orderings, (z, 2.5, bounds))):
            compiled = nd.compile(fn, backend="numba")
            for _ in range(2):
                assert_close(compiled(*copy.deepcopy(args)), fn(*copy.deepcopy(args)), rtol=0.0)
                nd.synchronize()
    fused = _fused(orderings, (z, 2.5, bounds))
    assert "abs_compare" in fused and "less" in fused  # the product's magnitude: compared as is
    assert "abs_compare" in _fused(escape, (c, 2.0, 20))


def test_a_magnitude_widened_by_the_comparison_is_compared_as_numpy_orders_it():
    z = np.array([3 + 4j, 1e20 + 1j, np.nan + 0j], np.complex64)
    bounds = np.array([5.0, 1e20, 1.0])  # float64: the float32 modulus is widened first

    def widened(z, bounds):
        return np.abs(z) < bounds, np.abs(z) >= bounds

    check_same(widened, z, bounds, backend="numba", graphs=1, breaks=0)
    assert "abs_compare" not in _fused(widened, (z, bounds))
