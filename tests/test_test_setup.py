"""The test run's own setup: kernels go to a temporary cache directory, not the user's; the
external kernel lists are shared among the CI run's Python versions without leaving one out."""

import os

from npdynamo.backends.numba import diskcache
from tests.shards import VERSIONS, version_shard


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
