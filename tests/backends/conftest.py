"""Shared set-up of the backend tests: one kernel cache directory per test session.

Tests never touch the user's cache: ``NPDYNAMO_CACHE_DIR`` points at a session temporary
directory, shared by all backend tests so that a kernel generated twice compiles once.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("npdynamo-cache")
    saved = os.environ.get("NPDYNAMO_CACHE_DIR")
    os.environ["NPDYNAMO_CACHE_DIR"] = str(path)
    yield path
    if saved is None:
        os.environ.pop("NPDYNAMO_CACHE_DIR", None)
    else:
        os.environ["NPDYNAMO_CACHE_DIR"] = saved


@pytest.fixture
def monkeypatch_parallel(monkeypatch):
    """Every kernel runs with ``prange``, however small (to test the parallel code paths)."""
    from npdynamo.backends.numba import threads

    monkeypatch.setattr(threads, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "auto")
