"""``np.triu``/``np.tril`` have kernel code: fused with the elementwise ops and reductions around
them (no NumPy call, no materialised triangle), NumPy's values bit for bit on every kernel dtype,
every ``k`` (above, on and below the diagonal, beyond the matrix) and stacked matrices; a 1-d
input (NumPy broadcasts it to a square) stays a NumPy call."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from tests.backends.compare import assert_close, check_one_graph, not_fused
from tests.differential import run_both

DTYPES = ["float32", "float64", "int8", "int64", "uint16", "bool"]


def _triangles(k):
    def fn(x):
        return np.triu(x + x, k), np.tril(x * x, k).sum(axis=-1), np.triu(x, k).sum()

    return fn


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(DTYPES), st.lists(st.integers(1, 6), min_size=2, max_size=3),
       st.integers(-7, 7), st.integers(0, 2**32 - 1))
def test_triangles_in_kernels_match_numpy(dtype, shape, k, seed):
    rng = np.random.default_rng(seed)
    x = (rng.integers(-50, 50, shape) if dtype != "bool" else rng.random(shape) > 0.5)
    x = x.astype(dtype)
    fn = _triangles(k)
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    with np.errstate(all="ignore"):
        run = run_both(fn, compiled, (x,), {})
    assert run.exc is None
    # sums of small integers stored exactly: the kernels must give NumPy's values bitwise
    assert_close(run.got, run.expected, rtol=0.0)


def test_triangle_is_fused_not_a_numpy_call():
    x = np.random.default_rng(1).random((9, 7))
    fn = _triangles(-2)
    check_one_graph(fn, (x,))
    calls = not_fused(fn, (x,))
    assert not [c for c in calls if c.startswith(("triu", "tril"))], calls


def test_a_1d_triangle_stays_a_numpy_call():
    def fn(v):
        return np.triu(v * 2) + 1

    v = np.arange(5.0)
    check_one_graph(fn, (v,))
    assert any(c.startswith("triu") for c in not_fused(fn, (v,)))


def lennard_jones(cluster):
    diff = cluster[:, np.newaxis, :] - cluster[np.newaxis, :, :]
    d = np.triu(np.sqrt((diff * diff).sum(-1)))
    r = d[d > 1e-6]
    sr6 = (1. / r) ** 6
    return (4. * (sr6 * sr6 - sr6)).sum()


def rows_masked(x):
    s = np.sqrt((x * x).sum(-1))  # one value per row, then a where on it: a branch per row
    return np.where(s > 1.0, 1.0 / (s - 1.0) ** 3 + np.tril(x, -1).sum(-1), -s)


def test_values_only_a_row_selection_needs_are_computed_in_its_branch():
    """The triangle's masked-out pairs skip the Lennard-Jones divisions: the kernel computes
    them under an ``if`` on the mask (NumPy's values, at the kernels' tolerance)."""
    rng = np.random.default_rng(2)
    for fn, x in ((lennard_jones, rng.normal(0, 3, (30, 3))),
                  (rows_masked, rng.normal(0, 1, (40, 3)))):
        check_one_graph(fn, (x,))
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaFallbackWarning)
            out = npdynamo.explain(fn, backend="numba")(x)
        (report,) = out.backend_reports
        sources = [open(p).read() for p in report.kernel_files if p != "<memory>"]
        assert sources, report.kernel_files
        assert any("        if v" in s and "/ v" in s.split("        if v", 1)[1].split(
            "else:", 1)[0] for s in sources), sources[0]
