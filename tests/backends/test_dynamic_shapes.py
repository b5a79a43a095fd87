"""Size-generic backends: one compiled graph with symbolic sizes serves every size.

Hand-built graphs with a symbolic batch size run on 20 sizes: the eager backend bitwise equal to
NumPy, the numba backend within its documented tolerance, and the numba kernels compiled once
(counted: machine-code versions of the program's dispatchers, kernel modules loaded), with the
parallel/serial choice made per call from the concrete size.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo
from benchmarks.dynamic_shapes import compile_graph, make_inputs, train_step, train_step_graph
from npdynamo import fx, ops
from npdynamo.backends.numba import NumbaFallbackWarning, diskcache, threads
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbol_table import SymbolTable
from tests.backends.compare import assert_close
from tests.fx.test_symbolic_graphs import SIZES, assert_bitwise, shapes_graph, shapes_numpy
from tests.ops.test_dynamic_scalars import schedule_graph


def test_training_step_20_sizes_eager_bitwise_numba_close_kernels_once():
    rng = np.random.default_rng(0)
    first = make_inputs(SIZES[0], rng)
    eager, facts = compile_graph(train_step_graph(), first, "eager")
    numba_fn, _ = compile_graph(train_step_graph(), first, "numba")
    report = numba_fn.report
    assert facts == [] and not report.fell_back and report.kernels >= 5
    compiled = report.compiled_kernels()
    modules = len(diskcache._loaded)
    # BLAS graph: serial kernels only, one dispatcher each (a kernel module an earlier test
    # loaded may already hold versions for other argument types: counted from here on)
    assert len(report.dispatchers) == report.distinct and compiled >= report.distinct
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        for n in SIZES:
            args = make_inputs(n, rng)
            want = train_step(*args)
            assert_bitwise(eager(*args), want)
            assert_close(numba_fn(*args), want)
    assert report.compiled_kernels() == compiled  # no numba compile for a new size
    assert len(diskcache._loaded) == modules  # no new kernel module either


def test_kernel_sources_do_not_depend_on_the_size_seen_at_capture():
    files = []
    for hint in (3, 77):
        g = train_step_graph()
        s = SymbolTable().new(hint)
        for p in g.placeholders[:3]:  # x, t, labels carry the batch size
            meta = p.meta["val"]
            p.meta["val"] = ArrayMeta((s, *meta.shape[1:]), meta.dtype)
        fn, _ = compile_graph(g, make_inputs(hint, np.random.default_rng(1)), "numba")
        files.append(fn.report.kernel_files)
    assert files[0] == files[1]  # same kernel sources: same disk cache entries


def elementwise_graph():
    """No BLAS: every kernel may run in parallel, decided per call."""
    s0 = SymbolTable().new(4)
    g = fx.Graph()
    call = lambda op, *a, **k: g.call_function(op, a, k)  # noqa: E731
    x = g.placeholder("x", ArrayMeta((s0, 8), np.float64))
    lr = g.placeholder("lr", ScalarMeta(float))
    e = call(ops.exp, call(ops.multiply, x, lr))
    p = call(ops.divide, e, call(ops.sum, e, axis=1, keepdims=True))
    g.output((call(ops.add, call(ops.multiply, p, p), 1.0), call(ops.sum, p)))
    return g


def elementwise_numpy(x, lr):
    e = np.exp(x * lr)
    p = e / np.sum(e, axis=1, keepdims=True)
    return p * p + 1.0, np.sum(p)


def test_parallel_choice_made_per_call(monkeypatch):
    monkeypatch.setattr(threads, "PARALLEL_MIN_ELEMENTS", 200)
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "auto")
    rng = np.random.default_rng(2)
    fn, _ = compile_graph(elementwise_graph(), (rng.random((4, 8)), 0.5), "numba")
    report = fn.report
    assert report.parallel and all(p is None for p in report.parallel)
    assert "chosen per call" in str(report)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        for n in SIZES:  # 16 to 2040 elements: both sides of the threshold
            x, lr = rng.standard_normal((n, 8)), float(rng.random())
            assert_close(fn(x, lr), elementwise_numpy(x, lr))
    # a serial and a parallel version per kernel at most, whatever the number of sizes
    assert report.compiled_kernels() <= 2 * report.kernels
    assert report.compiled_kernels() > report.distinct  # the parallel versions did run


def test_shape_ops_graph_on_numba():
    rng = np.random.default_rng(3)
    g = shapes_graph()
    fn, facts = compile_graph(g, (rng.random((6, 4)), rng.random((1, 4))), "numba")
    assert facts == []  # x[1:] - x[:-1]: the same size s0 - 1 on both sides, 1 or not
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        for n in SIZES:
            x, b = rng.standard_normal((2 * n, 4)), rng.standard_normal((1, 4))
            assert_close(fn(x, b), shapes_numpy(x, b))


@pytest.mark.parametrize("dtype, kind, values", [
    (np.float32, float, [0.1, 1e-3, -2.5]),
    (np.int32, float, [0.5, 3.0]),
    (np.int8, int, [3, 100, 300]),
    (np.int64, int, [7, -(2**62)]),
])
def test_dynamic_scalars_on_numba(dtype, kind, values):
    s0 = SymbolTable().new(4)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0,), np.dtype(dtype)))
    s = g.placeholder("s", ScalarMeta(kind))
    g.output(g.call_function(ops.add, (g.call_function(ops.multiply, (s, x)), x)))
    xs = np.arange(1, 5).astype(dtype)
    fn, _ = compile_graph(g, (xs, kind(1)), "numba")
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("error", NumbaFallbackWarning)
        for n, v in zip((3, 9, 40), values * 2):
            xs = np.arange(1, n + 1).astype(dtype)
            try:
                want = v * xs + xs
            except OverflowError:
                with pytest.raises(OverflowError):
                    fn(xs, v)
                continue
            got = fn(xs, v)[0]
            assert got.dtype == want.dtype
            assert_close(got, want)


@pytest.mark.parametrize("backend", ["aot_eager", "aot_numba"])
def test_gradients_through_a_symbolic_graph(backend):
    """The AOT partition of a symbolic graph: the backward reads the sizes it needs (a saved
    input carries ``s0`` for ``broadcast_to``), on every size, eager bitwise."""
    s0 = SymbolTable().new(4)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0, 3), np.float64))
    w = g.placeholder("w", ArrayMeta((3,), np.float64))
    y = g.call_function(ops.multiply, (x, w))
    g.output((g.call_function(ops.sum, (g.call_function(ops.tanh, (y,)),)),
              g.call_function(ops.mean, (x,))))
    rng = np.random.default_rng(4)
    aot, _ = compile_graph(g, (rng.random((4, 3)), rng.random(3)), backend)

    def loss(x, w):
        a, b = aot(x, w)
        return a + b

    def plain(x, w):
        return np.sum(np.tanh(x * w)) + np.mean(x)

    step = npdynamo.value_and_grad(loss, argnums=(0, 1))
    for n in SIZES:
        xs, ws = rng.standard_normal((n, 3)), rng.standard_normal(3)
        value, (gx, gw) = step(xs, ws)
        t = np.tanh(xs * ws)
        want_gx = (1 - t * t) * ws + 1 / (n * 3)
        want_gw = np.sum((1 - t * t) * xs, axis=0)
        assert_close(value, plain(xs, ws))
        assert_close(gx, want_gx, rtol=1e-12)
        assert_close(gw, want_gw, rtol=1e-12)


def test_dynamic_float_too_large_for_float32():
    """The kernel narrows the float as NumPy does (to inf); like every kernel under the default
    error state, it does not repeat NumPy's warning (``errstate`` module)."""
    s0 = SymbolTable().new(4)
    g = fx.Graph()
    x = g.placeholder("x", ArrayMeta((s0,), np.float32))
    lr = g.placeholder("lr", ScalarMeta(float))
    g.output(g.call_function(ops.exp, (g.call_function(ops.multiply, (lr, x)),)))
    fn, _ = compile_graph(g, (np.ones(4, np.float32), 0.5), "numba")
    assert "multiply" in fn.report.groups[0]  # fused, lr passed to the kernel
    xs = np.ones(5, np.float32)
    for v in (1e300, -3.4028235677973366e38, float(np.nextafter(3.4028235677973366e38, 0)),
              float("inf"), float("nan"), 2.0):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            assert_close(fn(xs, v)[0], np.exp(v * xs))


def test_python_scalar_arithmetic_on_numba():
    fn, _ = compile_graph(schedule_graph(), (np.ones(4, np.float32), 0.1, 0), "numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        for n, step in ((3, 0), (17, 5), (40, 12)):
            xs = np.arange(n, dtype=np.float32)
            out, nxt = fn(xs, 0.1, step)
            assert_close(out, xs * (0.1 * 0.5 ** step / n))
            assert type(nxt) is int and nxt == step + 1
