"""Fixtures the capture tests share (the root ``tests/conftest.py`` resets before each test)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from npdynamo import config
from npdynamo.api import reset


@pytest.fixture
def fresh_caches():
    """No compiled entry, recompile record or hook before the test, nor left after it."""
    reset()
    yield
    reset()


@pytest.fixture
def cache_limit(monkeypatch) -> Callable[[int], None]:
    """``cache_limit(n)``: at most ``n`` entries per code object for this test, with numbers that
    change recompiling (no dynamic scalars), so that ``n + 1`` values of a number reach it."""
    monkeypatch.setattr(config, "automatic_dynamic_shapes", False)
    return lambda n: monkeypatch.setattr(config, "cache_size_limit", n)
