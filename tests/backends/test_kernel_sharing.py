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
