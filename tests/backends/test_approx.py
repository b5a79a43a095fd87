"""The vectorisable exp/tanh of the numba kernels against NumPy over their whole input range."""

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
    name: _kernel(getattr(approx, name)) for name in ("exp_f32", "exp_f64", "tanh_f32", "tanh_f64")
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
