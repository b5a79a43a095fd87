"""Structurally identical fusion groups (an unrolled loop body) share one numba kernel, and
long unrolled loops are cut into groups of bounded size that share kernels too."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import fusion, numba_backend
from npdynamo.backends.numba.fusion import MAX_GROUP_NODES
from tests.backends.compare import assert_close


@pytest.fixture(autouse=True)
def _unrolled(monkeypatch):
    # these loops are here to be unrolled: the kernels shared between the copies of one body
    # are what is measured (formed into a fori_loop, the body would be one kernel anyway)
    monkeypatch.setattr(npdynamo.config, "capture_for_loops", False)


def _compile(fn, *args):
    programs = []

    def backend(gm, example_inputs):
        programs.append(numba_backend(gm, example_inputs))
        return programs[-1]

    compiled = npdynamo.compile(fn, backend=backend)
    assert_close(compiled(*args), fn(*args))
    assert_close(compiled(*args), fn(*args))
    (program,) = programs
    assert not program.report.fell_back, program.report.reason
    return program.report


def layers(x, w, b):
    for _ in range(20):
        x = np.maximum(x @ w * 0.5 + b, 0.0)  # matmul is a NumPy call between the kernels
    return x


def test_an_unrolled_body_compiles_one_kernel():
    rng = np.random.default_rng(0)
    report = _compile(layers, rng.standard_normal((4, 8)), rng.standard_normal((8, 8)) / 3,
                      rng.standard_normal(8))
    assert report.kernels == 20 and report.distinct == 1
    assert len(set(report.kernel_files)) == 1
    assert "20 kernel(s) (1 distinct)" in str(report)


def chain(x, y):
    for _ in range(150):
        x = x * 0.5 + y
    return x


def test_a_long_chain_is_cut_into_groups_that_share_kernels():
    report = _compile(chain, np.linspace(0.0, 1.0, 32), np.linspace(1.0, 2.0, 32))
    assert all(len(ops) <= MAX_GROUP_NODES for ops in report.groups)
    assert report.kernels == -(-300 // MAX_GROUP_NODES) and report.distinct == 2


def branches(x, w):
    h = x @ w  # a NumPy call: the cycle check walks through it
    a = np.tanh(x) * 2.0 + h
    b = np.sqrt(np.abs(h)) + x
    return a * b, a - b


def test_a_cycle_check_that_gives_up_refuses_the_join(monkeypatch):
    """Past ``CYCLE_WALK_LIMIT`` a join is refused: more kernels, the same results."""
    rng = np.random.default_rng(1)
    args = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    full = _compile(branches, *args).kernels
    npdynamo.reset()
    monkeypatch.setattr(fusion, "CYCLE_WALK_LIMIT", 0)
    assert _compile(branches, *args).kernels > full


def scaled_layers(x, w):
    # the same layer with another coefficient and offset each time: kernels that differ only
    # in float constants, which are kernel parameters, so they share one compiled kernel
    for scale, offset, d in ((0.5, 0.1, 2.0), (0.25, -0.2, 3.0), (0.125, 0.3, 10.0),
                             (2.0, 0.0, 0.5), (0.75, 1e-3, 7.0)):
        x = np.tanh(x @ w * scale + offset) / d  # by d: a product by its reciprocal
    return x


def test_kernels_differing_only_in_float_constants_compile_once():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 8)), rng.standard_normal((8, 8)) / 3
    report = _compile(scaled_layers, x, w)
    assert report.kernels == 5 and report.distinct == 1
    assert len(set(report.kernel_files)) == 1
    assert report.compiled_kernels() == 1  # one numba compile (or cache load) for the five


def float32_constants(x):
    # one constant converted to two dtypes: two parameters of their own, each value exact
    y = x.astype(np.float32) * 0.1
    return y, x * 0.1, (x @ x.T) * 0.1


def test_constants_keep_their_dtype_and_bits():
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    want = float32_constants(x)
    got = npdynamo.compile(float32_constants, backend="numba")(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)  # one rounding: bitwise equal


def softsign_rows(x, y):
    s = x / (1.0 + np.abs(x)) + y
    return s - s.max(axis=-1, keepdims=True)


def test_graphs_of_other_static_sizes_reuse_the_compiled_kernel():
    # sizes are read from the arrays inside a kernel, never written into its source: a graph
    # recompiled for new static sizes finds its kernel already compiled
    programs = []

    def backend(gm, example_inputs):
        programs.append(numba_backend(gm, example_inputs))
        return programs[-1]

    compiled = npdynamo.compile(softsign_rows, backend=backend, dynamic=False)
    rng = np.random.default_rng(4)
    for shape in ((5, 40), (7, 60)):
        x, y = rng.standard_normal(shape), rng.standard_normal(shape)
        assert_close(compiled(x, y), softsign_rows(x, y))
    first, second = (p.report for p in programs)
    assert first.kernel_files == second.kernel_files
    assert [id(d) for d in first.dispatchers] == [id(d) for d in second.dispatchers]
    assert second.compiled_kernels() == first.compiled_kernels()  # no numba compile for it
