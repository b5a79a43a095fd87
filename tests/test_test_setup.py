"""The test run's own setup: kernels go to a temporary cache directory, not the user's; the
external kernel lists are shared among the CI run's Python versions without leaving one out."""

import os

from npdynamo.backends.numba import diskcache
from tests.shards import VERSIONS, shard_parameters, version_shard


def test_the_kernel_cache_of_a_test_run_is_not_the_users():
    directory = str(diskcache.cache_dir())
    home_cache = os.path.join(os.path.expanduser("~"), ".cache", "npdynamo")
    assert not os.path.realpath(directory).startswith(os.path.realpath(home_cache))
    assert directory.startswith(os.environ["NPDYNAMO_CACHE_DIR"])


def test_the_versions_of_a_sharded_run_check_every_item_once(monkeypatch):
    items = [f"kernel{i}" for i in range(32)]
    monkeypatch.delenv("NPDYNAMO_TEST_SHARD_BY_VERSION", raising=False)
    assert version_shard(items) == items  # a local run checks the whole list
    monkeypatch.setenv("NPDYNAMO_TEST_SHARD_BY_VERSION", "1")
    shards = [version_shard(items, version) for version in VERSIONS]
    assert sorted(sum(shards, [])) == sorted(items)  # every item on exactly one version
    assert all(10 <= len(shard) <= 11 for shard in shards)


class _Item:
    def __init__(self, nodeid, originalname, params=True, backend=None):
        self.nodeid, self.originalname = nodeid, originalname
        self.path = nodeid.split("::")[0]
        if params:
            self.callspec = type("CallSpec", (), {"params": {"backend": backend}})()


def test_parameter_sets_after_capture_are_shared_and_every_function_runs(monkeypatch):
    items = ([_Item(f"tests/backends/test_k.py::test_a[{i}]", "test_a") for i in range(7)]
             + [_Item(f"tests/backends/test_k.py::test_b[{i}]", "test_b") for i in range(2)]
             + [_Item("tests/backends/test_k.py::test_c", "test_c", params=False)]
             + [_Item(f"tests/capture/test_k.py::test_a[{i}]", "test_a") for i in range(6)])
    monkeypatch.delenv("NPDYNAMO_TEST_SHARD_BY_VERSION", raising=False)
    assert shard_parameters(items) == (items, [])
    monkeypatch.setenv("NPDYNAMO_TEST_SHARD_BY_VERSION", "1")
    runs = [shard_parameters(items, version) for version in VERSIONS]
    for kept, left_out in runs:
        assert sorted(map(id, kept + left_out)) == sorted(map(id, items))
        names = {item.nodeid.split("[")[0] for item in kept}
        assert len(names) == 4  # every function on every version
    shared = [item for item in items if item.nodeid.startswith("tests/backends/test_k.py::test_a")]
    assert sorted(id(i) for kept, _ in runs for i in kept if i in shared) == sorted(map(id, shared))
    assert all(len(left_out) == 4 or len(left_out) == 5 for _, left_out in runs)


def test_capture_tests_on_numba_run_on_one_version_each_and_on_eager_on_all(monkeypatch):
    items = [_Item(f"tests/capture/test_k{i}.py::test_a[{backend}]", "test_a", backend=backend)
             for i in range(60) for backend in ("eager", "numba")]
    monkeypatch.setenv("NPDYNAMO_TEST_SHARD_BY_VERSION", "1")
    runs = [shard_parameters(items, version) for version in VERSIONS]
    numba = [item for item in items if item.callspec.params["backend"] == "numba"]
    kept_numba = [i for kept, _ in runs for i in kept if i in numba]
    assert sorted(map(id, kept_numba)) == sorted(map(id, numba))  # each on exactly one version
    for kept, left_out in runs:
        assert all(i in kept for i in items if i not in numba)  # eager: on every version
        assert 10 <= sum(i in numba for i in kept) <= 30  # about a third each
        assert all(i in numba for i in left_out)
