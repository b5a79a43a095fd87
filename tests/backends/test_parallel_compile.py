"""One graph's independent kernels compile side by side: the tiered numba backend splits them
into parts, one compile worker each (``tiering.submit``, ``backend.kernel_shares``)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import tiers
from npdynamo.backends.numba import diskcache
from npdynamo.backends.numba.backend import kernel_shares, numba_backend


@pytest.fixture(autouse=True)
def _tiered(monkeypatch, tmp_path):
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setattr(npdynamo.config, "compile_workers", 2)
    monkeypatch.setattr(diskcache, "_loaded", {})  # this test's kernels come from its cache
    yield
    npdynamo.synchronize(timeout=300)


def four_kernels(a, w):
    # matmuls between the elementwise steps: four kernels, each of other ops (none shared)
    b = np.tanh(a * 0.5) @ w
    c = np.exp(-b * b) @ w
    d = np.sqrt(np.abs(c) + 1.0) @ w
    return np.sin(d) * np.cos(d) + 2.0 * d


def test_one_graphs_kernels_compile_in_two_workers_at_once():
    made = []

    def backend(gm, example_inputs):
        compiled = numba_backend(gm, example_inputs)
        made.append(compiled.run)  # the ``Tiered`` while the kernels compile
        return compiled

    fn = npdynamo.compile(four_kernels, backend=backend)
    rng = np.random.default_rng(0)
    a, w = rng.random((20, 20)), rng.random((20, 20)) / 20
    np.testing.assert_allclose(fn(a, w), four_kernels(a, w), rtol=1e-9)
    (tiered,) = made
    assert isinstance(tiered, tiers.Tiered)
    assert tiered.job.prepared.wait(300)
    jobs = tiered.job.jobs.jobs
    assert len(jobs) == 2  # two parts of two kernels
    before = diskcache.kernel_loads()
    assert npdynamo.synchronize(timeout=300)
    assert all(job.status == "done" for job in jobs)
    assert len({job.worker_pid for job in jobs}) == 2  # each part on a worker of its own
    assert sum(job.kernels[1] for job in jobs) == tiered.compiled.report.kernels == 4
    np.testing.assert_allclose(fn(a + 1, w), four_kernels(a + 1, w), rtol=1e-9)
    assert tiered.switched
    assert diskcache.kernel_loads()["compiled"] == before["compiled"]  # all loaded from disk


def test_a_groups_serial_and_parallel_versions_share_a_part():
    names = ["_kernel0_parallel", "_kernel0", "_kernel1_parallel", "_kernel1", "_kernel2",
             "_kernel3_parallel", "_kernel3"]
    share = kernel_shares(names, 2)
    assert share == {"_kernel0_parallel": 0, "_kernel0": 0, "_kernel1_parallel": 1,
                     "_kernel1": 1, "_kernel2": 0, "_kernel3_parallel": 1, "_kernel3": 1}
    assert set(kernel_shares(names, 3).values()) == {0, 1, 2}
