"""Comparison of numba-backend results with eager results, at the documented tolerances.

Types, dtypes and shapes must be equal; integer and boolean values bitwise equal; float values
equal up to ``rtol`` (1e-5 float32, 1e-12 float64 by default) relative to the largest magnitude
of the result (the reduction bound: reassociated sums differ by rounding relative to the sum of
magnitudes); nan and +-inf in the same places.
"""

from __future__ import annotations

import numpy as np

RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def assert_close(got, want, path: str = "result", rtol: float | None = None) -> None:
    assert type(got) is type(want), f"{path}: type {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{path}: {len(got)} values, expected {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{path}[{i}]", rtol)
        return
    if isinstance(want, dict):
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_close(got[k], want[k], f"{path}[{k!r}]", rtol)
        return
    if not isinstance(want, (np.ndarray, np.generic)):
        assert got == want or (got != got and want != want), f"{path}: {got!r} != {want!r}"
        return
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
    assert np.shape(got) == np.shape(want), f"{path}: shape {np.shape(got)} != {np.shape(want)}"
    g, w = np.asarray(got), np.asarray(want)
    if w.dtype.kind == "c":  # each part as a float array, at the tolerance of its float dtype
        tol = rtol if rtol is not None else RTOL.get(w.real.dtype, 1e-5)
        assert_close(g.real, w.real, f"{path}.real", tol)
        assert_close(g.imag, w.imag, f"{path}.imag", tol)
        return
    if w.dtype.kind != "f":
        assert np.array_equal(g, w), f"{path}: values differ\n{g}\n{w}"
        return
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{path}: nan differ\n{g}\n{w}"
    assert np.array_equal(np.isposinf(g), np.isposinf(w)), f"{path}: +inf differ\n{g}\n{w}"
    assert np.array_equal(np.isneginf(g), np.isneginf(w)), f"{path}: -inf differ\n{g}\n{w}"
    finite = np.isfinite(w)
    if not finite.any():
        return
    tol = rtol if rtol is not None else RTOL.get(w.dtype, 1e-5)
    scale = max(1.0, float(np.abs(w[finite]).max()))
    err = np.abs(g[finite].astype(np.float64) - w[finite].astype(np.float64))
    assert (err <= tol * scale).all(), f"{path}: max error {err.max()}\n{g}\n{w}"


def check_one_graph(fn, args: tuple, graphs: int = 1) -> None:
    """``fn`` plain vs compiled with ``fullgraph=True`` (one graph, no break): bitwise with
    arguments' state on the eager backend, at the tolerances above on numba. A frame that ran
    in Python instead (the capture saw the call raise) fails too: ``fullgraph`` allows that.
    ``graphs=0``: a program that only returns views of its arguments needs no graph (its
    results are rebuilt from the arguments), yet runs compiled."""
    import npdynamo
    from tests.differential import check_same, run_both

    eager = check_same(fn, *args, compiled=npdynamo.compile(fn, backend="eager", fullgraph=True),
                       graphs=graphs, breaks=0)
    compiled = npdynamo.compile(fn, backend="numba", fullgraph=True)
    for _ in range(2):
        run = run_both(fn, compiled, args, {})
        assert run.exc is None
        assert_close(run.got, run.expected)
    for done in (eager, compiled):
        assert [e.runs_python for e in npdynamo.inspect(done).entries] == [None], fn.__name__


def not_fused(fn, args: tuple) -> list[str]:
    """The ops NumPy runs in ``fn``'s one numba graph (none fell back, no numba fallback warning,
    no graph break), from ``explain``'s backend report."""
    import warnings

    import npdynamo

    with warnings.catch_warnings():
        warnings.simplefilter("error", npdynamo.NumbaFallbackWarning)
        out = npdynamo.explain(fn, backend="numba")(*args)
    assert out.graph_count == 1 and out.graph_break_count == 0, str(out)
    (report,) = out.backend_reports
    assert not report.fell_back, report.reason
    return [name for name, _ in report.not_fused]
