"""The numba backend end to end: workloads through ``npdynamo.compile(backend="numba")``, result
types, fallbacks, logging, the report and the thread policy."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import numpy as np
import pytest

import npdynamo
from benchmarks import workloads
from npdynamo.backends.numba import NumbaFallbackWarning, threads, ufunc_table
from npdynamo.backends.numba.backend import prepare_graph
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta
from tests.backends.compare import assert_close
from tests.differential import CountingBackend

RNG = np.random.default_rng(7)


def _run(fn, *args, calls: int = 2):
    """``fn`` compiled with the numba backend against plain NumPy; returns the compiled fn."""
    compiled = npdynamo.compile(fn, backend="numba")
    with np.errstate(all="ignore"):
        want = fn(*args)
        for _ in range(calls):
            with warnings.catch_warnings():
                warnings.simplefilter("error", NumbaFallbackWarning)
                got = compiled(*args)
            assert_close(got, want)
    return compiled


def _report(compiled_fn, *args):
    backend = CountingBackend()
    npdynamo.compile(compiled_fn, backend=backend)(*args)
    from npdynamo.backends.numba import numba_backend

    return numba_backend(backend.graphs[0], list(args)).report


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_workloads_match_numpy(dtype):
    x = RNG.standard_normal((16, 32)).astype(dtype)
    w, b = RNG.standard_normal(32).astype(dtype), RNG.standard_normal(32).astype(dtype)
    _run(workloads.gelu, x[0])
    _run(workloads.gelu_cubed, x)
    _run(workloads.softmax, x)
    _run(workloads.layernorm, x, w, b)
    _run(workloads.tiny_chain, x[0, :10])
    params = {"w": x, "b": w}
    grads = {k: v * 0.5 for k, v in params.items()}
    m = {k: v * 0.1 for k, v in params.items()}
    v = {k: np.abs(a) for k, a in params.items()}
    _run(workloads.adam, params, grads, m, v, 3)
    w1, w2 = RNG.standard_normal((32, 8)).astype(dtype), RNG.standard_normal((8, 4)).astype(dtype)
    _run(workloads.mlp_forward, x, w1, w[:8], w2, b[:4])


def test_parallel_kernels_match_numpy(monkeypatch_parallel):
    x = RNG.standard_normal((64, 48)).astype(np.float32)
    _run(workloads.softmax, x)
    _run(workloads.gelu, x.ravel())

    def full(x):
        return x.sum(), x - x.mean(), np.max(x, axis=(0, 1), keepdims=True)

    _run(full, x.astype(np.float64))


def test_large_float32_sums_stay_accurate():
    x = RNG.uniform(0, 1, 3_000_000).astype(np.float32)

    def total(x):
        return x.sum(), x.mean()

    got = npdynamo.compile(total, backend="numba")(x)
    exact = x.astype(np.float64).sum()
    assert abs(float(got[0]) - exact) <= 1e-6 * exact  # NumPy's pairwise sum: ~1e-7
    assert type(got[1]) is np.float32


def test_result_types_are_numpys():
    def f(x, s):
        total = x.sum()  # a NumPy scalar
        zero_d = np.where(total > 0, total, 0.0)  # np.where gives a 0-d array
        return total, total * 2, zero_d, x, (x > 0).all(), s * x

    x = RNG.standard_normal((3, 4))
    compiled = _run(f, x, np.float32(2))
    got = compiled(x, np.float32(2))
    assert type(got[0]) is np.float64 and type(got[1]) is np.float64
    assert type(got[2]) is np.ndarray and got[2].shape == ()
    assert got[3] is x  # an input comes back as the very same object
    assert type(got[4]) is np.bool_


def test_integer_results_are_exact():
    def f(a, b):
        c = a * b + 7
        return c, -a, np.abs(b), c.sum(axis=-1), (a > b).sum(), np.maximum(a, b) ** 3

    info = np.iinfo(np.int8)
    a = np.array([[info.min, info.max, -3, 0], [5, -7, 100, 1]], np.int8)
    _run(f, a, a[::-1].copy())


def _graph_of(fn, *args):
    backend = CountingBackend()
    npdynamo.compile(fn, backend=backend)(*args)
    return backend.graphs[0]


def test_unsupported_op_falls_back_with_one_warning(monkeypatch):
    # a deliberately broken table entry: numba cannot type the generated expression
    monkeypatch.setitem(ufunc_table.UFUNC_EMITTERS, "negative",
                        lambda ins, out, e: f"no_such_helper({e[0]})")

    def f(x):
        return -x * 3 + 1

    x = RNG.standard_normal(6)
    compiled = npdynamo.compile(f, backend="numba")
    with pytest.warns(NumbaFallbackWarning, match=r"negative.*TypingError") as caught:
        got = compiled(x)
    assert len([w for w in caught if w.category is NumbaFallbackWarning]) == 1
    assert np.array_equal(got, f(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        assert np.array_equal(compiled(x), f(x))  # no second warning
    gm = _graph_of(f, x)
    from npdynamo.backends.numba import numba_backend

    with pytest.warns(NumbaFallbackWarning):
        fn = numba_backend(gm, [x])
    assert fn.report.fell_back and "negative" in fn.report.reason


def test_failure_after_compiling_falls_back_at_call_time(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the program itself, no tuner in front

    def f(x):
        return x * 2 + 1

    x = RNG.standard_normal(5)
    from npdynamo.backends.numba import numba_backend

    fn = numba_backend(_graph_of(f, x), [x])
    from numba.core.errors import TypingError

    def broken(*args):
        raise TypingError("simulated: no implementation for these argument types")

    kernel_names = [k for k in fn.run.__globals__ if k.startswith("_kernel")]
    assert kernel_names
    fn.run.__globals__[kernel_names[0]] = broken
    with pytest.warns(NumbaFallbackWarning, match="simulated"):
        assert np.array_equal(fn(x)[0], f(x))
    assert fn.report.fell_back
    assert np.array_equal(fn(x)[0], f(x))


def test_backend_bug_falls_back(monkeypatch):
    from npdynamo.backends.numba import backend as backend_module

    def boom(graph):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(backend_module, "partition", boom)
    x = RNG.standard_normal(4)
    with pytest.warns(NumbaFallbackWarning, match="simulated bug"):
        fn = backend_module.numba_backend(_graph_of(workloads.tiny_chain, x), [x])
    assert np.array_equal(fn(x)[0], workloads.tiny_chain(x))


def test_kernel_source_is_logged(caplog):
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    with caplog.at_level(logging.INFO, logger="npdynamo.output_code"):
        npdynamo.compile(workloads.softmax, backend="numba")(x)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "npdynamo.output_code")
    assert "@njit(" in text and "def kernel(" in text and "def forward(x)" in text
    assert "error_model=\"numpy\"" in text and "fastmath" not in text


def test_loop_program_source_is_logged(caplog):
    from benchmarks.loop_kernels import crc16

    data = RNG.integers(0, 256, 20)
    with caplog.at_level(logging.INFO, logger="npdynamo.output_code"):
        npdynamo.compile(crc16, backend="numba")(data)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "npdynamo.output_code")
    assert "numba loop program of the whole graph" in text, text
    assert "def loop(p0):" in text and "for i" in text and "in range(1, 20):" in text, text


def test_report_lists_kernels_and_numpy_calls():
    x, w = RNG.standard_normal((8, 4)), RNG.standard_normal((4, 3))

    def f(x, w):
        return np.log(np.abs(np.exp(x) @ w) + 1)

    from npdynamo.backends.numba import numba_backend

    report = numba_backend(_graph_of(f, x, w), [x, w]).report
    assert report.kernels == 2 and report.groups == [("exp",), ("absolute", "add", "log")]
    assert {n for n, _ in report.not_fused} == {"matmul"}
    assert report.parallel == [False, False] and "BLAS" in report.thread_policy
    assert "kernel (serial): exp" in str(report)


def test_thread_policy(monkeypatch):
    def graph_with(op_name):
        g = Graph()
        x = g.placeholder("x", ArrayMeta((4, 4), np.float64))
        node = g.call_function(npdynamo.ops.lookup(op_name), (x, x))
        g.output((node,))
        return g

    assert threads.graph_allows_parallel(graph_with("add"))[0]
    assert not threads.graph_allows_parallel(graph_with("matmul"))[0]
    assert not threads.use_parallel(True, threads.PARALLEL_MIN_ELEMENTS - 1)
    assert threads.use_parallel(True, threads.PARALLEL_MIN_ELEMENTS)
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "never")
    assert not threads.graph_allows_parallel(graph_with("add"))[0]
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "always")
    assert threads.graph_allows_parallel(graph_with("matmul"))[0]


def test_simplified_copy_leaves_the_captured_graph_alone():
    gm = _graph_of(workloads.gelu, RNG.standard_normal(8))
    before = [n.target for n in gm.graph.nodes]
    simplified = prepare_graph(gm.graph)
    assert [n.target for n in gm.graph.nodes] == before
    assert "power" not in {getattr(n.target, "name", "") for n in simplified.nodes}


def test_importing_npdynamo_does_not_import_numba():
    code = ("import sys, npdynamo; "
            "print('numba' in sys.modules, 'numba' in npdynamo.list_backends())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_empty_arrays():
    def f(x):
        return x.sum(), x.sum(axis=-1), x.max(axis=0) if x.shape[0] else x * 2, np.exp(x) + 1

    x = np.zeros((0, 3), np.float32)
    got = _run(f, x)(x)
    assert not np.signbit(got[0])  # NumPy's empty sum is +0.0
    y = np.full((2, 3), -0.0)
    compiled = _run(lambda y: y.sum(), y)
    for _ in range(20):  # through tuning: the kernel and NumPy give +0.0 (its identity)
        assert not np.signbit(compiled(y))


def test_non_contiguous_inputs_later():
    x = RNG.standard_normal((6, 5))
    compiled = _run(workloads.softmax, x)
    xt = np.asfortranarray(x)  # same shape and dtype, other layout: numba compiles again
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        assert_close(compiled(xt), workloads.softmax(xt))
        strided = RNG.standard_normal((6, 10))[:, ::2]
        assert_close(compiled(strided), workloads.softmax(strided))


def test_large_outputs_reuse_only_unreferenced_buffers(monkeypatch):
    from npdynamo.backends.numba.program import REUSE_MIN_BYTES

    # the numba program on every call: tuning would run some calls as the NumPy graph, and
    # which ones depends on timings
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")

    x = RNG.standard_normal(REUSE_MIN_BYTES // 8 + 1)
    fn = npdynamo.compile(workloads.tiny_chain, backend="numba")
    first = fn(x)
    second = fn(x)
    assert second is not first  # still referenced: never handed out twice
    kept = first[:3]  # a view keeps its base alive
    base = first
    del first
    third = fn(x * 2)
    assert third is not base and third is not second
    assert np.array_equal(kept, workloads.tiny_chain(x)[:3])  # the view's data is untouched
    assert np.array_equal(third, workloads.tiny_chain(x * 2))
    pooled = {id(base), id(second), id(third)}
    del base, kept, second
    fourth = fn(x)  # a buffer nobody references any more is reused
    assert id(fourth) in pooled
    assert np.array_equal(fourth, workloads.tiny_chain(x))


def normalize_rows(x):
    return x / x.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_divisions_multiply_by_the_reciprocal_only_where_it_is_a_normal_number(dtype):
    """Each row's divisor is inverted once when 1/d is a normal number; a divisor that is 0,
    subnormal, huge, inf or NaN divides, so those rows are NumPy's (no inf for a finite
    quotient)."""
    info = np.finfo(dtype)
    rows = np.array([
        [1.0, 2.0, 3.0, 4.0],
        [1.0, -1.0, 2.0, -2.0],  # sum 0
        [info.smallest_subnormal] * 4,  # 1/d overflows, the quotients are 0.25
        [info.max / 8] * 4,  # 1/d is subnormal
        [np.inf, 1.0, 2.0, 3.0],
        [np.nan, 1.0, 2.0, 3.0],
    ], dtype=dtype)
    x = np.repeat(rows, 50, axis=0)
    compiled = _run(normalize_rows, x)
    with np.errstate(all="ignore"):
        got = compiled(x)
    np.testing.assert_array_equal(got[100:150], np.full((50, 4), 0.25, dtype))  # exact
    with np.errstate(all="ignore"):
        report = _report(normalize_rows, x)
    sources = [open(path).read() for path in report.kernel_files if path.endswith(".py")]
    assert sources and all("] * r0)" in text and "] / v0)" in text for text in sources)


def divide_by_constants(x):
    return x / 3.0, x / 1e-40, x / 2.0**-130, x / 0.1


def test_a_division_by_a_constant_multiplies_only_by_a_normal_reciprocal():
    """1/3 and 1/0.1 are normal: products within a rounding; float32's 1e-40 and 2**-130 are
    subnormal (their reciprocals overflow): those divide, as NumPy does (inf where it does)."""
    x = np.array([1.0, -2.5, 3e-39, 7.0, 0.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        compiled = _run(divide_by_constants, x)
        got = compiled(x)
        want = divide_by_constants(x)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
