"""The vectorisable exp/tanh/log of the numba kernels against NumPy over their whole input range."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from npdynamo.backends.numba import approx


def _kernel(fn):
    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return run


RUNNERS = {
    name: _kernel(getattr(approx, name))
    for name in ("exp_f32", "exp_f64", "tanh_f32", "tanh_f64", "log_f32", "log_f64")
}


def _inputs(dtype):
    fi = np.finfo(dtype)
    rng = np.random.default_rng(1)
    lo_exp = -45 if dtype == np.float32 else -323
    span = 110.0 if dtype == np.float32 else 750.0
    parts = [
        rng.uniform(-1, 1, 20000),
        rng.uniform(-span, span, 20000),  # past overflow and into the subnormal range
        rng.standard_normal(5000) * 1e-4,
        np.logspace(lo_exp, 3, 5000),  # subnormal ... huge, both signs
        -np.logspace(lo_exp, 3, 5000),
        np.geomspace(fi.smallest_subnormal, fi.max, 20000, dtype=dtype),  # log's whole range
        1.0 + rng.uniform(-0.3, 0.42, 5000),  # log near its zero
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
            fi.max,
            -fi.max,
            fi.tiny,
            -fi.tiny,
            fi.smallest_subnormal,
            -fi.smallest_subnormal,
            88.72,
            88.73,
            -87.33,
            -103.97,
            709.78,
            709.79,
            -745.13,
            9.01,
            19.06,
            0.5493,
            -0.5493,
        ],
    ]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).astype(dtype)


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_approximation_matches_numpy(name):
    op, bits = name.split("_")
    dtype = np.float32 if bits == "f32" else np.float64
    x = _inputs(dtype)
    got = np.empty_like(x)
    RUNNERS[name](x, got)
    with np.errstate(all="ignore"):
        want = getattr(np, op)(x)
    assert got.dtype == want.dtype
    # nan, +-inf and the sign of zero exactly as NumPy
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    zeros = want == 0
    assert np.array_equal(got[zeros] == 0, np.ones(zeros.sum(), bool))
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))
    fi = np.finfo(dtype)
    finite = np.isfinite(want)
    normal = finite & (np.abs(want) >= fi.tiny)
    w = want[normal].astype(np.float64)
    ulps = np.abs(got[normal].astype(np.float64) - w) / np.spacing(np.abs(want[normal]))
    assert ulps.max() <= approx.MAX_ULPS, (
        f"{name}: {ulps.max()} ulps at x={x[normal][ulps.argmax()]}"
    )
    sub = finite & ~normal
    err = np.abs(got[sub].astype(np.float64) - want[sub]) / fi.smallest_subnormal
    assert err.size == 0 or err.max() <= 2


def test_table_names_exist():
    for helper in approx.APPROXIMATIONS.values():
        assert callable(getattr(approx, helper))


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_wide_vectors_give_the_same_bits(name):
    """512-bit vectorisation (``runtime.prefer_wide_vectors``) changes only the speed."""
    dtype = np.float32 if name.endswith("32") else np.float64
    x = _inputs(dtype)
    want, got = np.empty_like(x), np.empty_like(x)
    RUNNERS[name](x, want)
    from benchmarks.transcendentals import wide_loop

    wide_loop(getattr(approx, name))(x, got)
    np.testing.assert_array_equal(got, want)


def test_kernels_with_polynomials_ask_for_wide_vectors_where_the_cpu_has_them():
    from npdynamo.backends.numba import codegen, runtime

    lines = ["    for i0 in prange(n0):", "        out0[i0] = exp_f32(in0[i0])"]
    if runtime.has_wide_vectors():
        assert codegen._computes_polynomials(lines)
        assert codegen._widened(lines) == [
            "    prefer_wide_vectors()", lines[0], "        prefer_wide_vectors()", lines[1]]
    else:
        assert not codegen._computes_polynomials(lines)
    assert not codegen._computes_polynomials(["        out0[i0] = in0[i0] * 2.0"])
