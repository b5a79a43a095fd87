"""``capture/hooks/cache.py``: the policy every cache of compiled entries shares, with fake
entries (no capture): first entry whose check holds runs, a miss builds, the limit is final."""

from __future__ import annotations

import warnings

import pytest

from npdynamo import config
from npdynamo.capture.hooks.cache import EntryCache, FrameCache, cache_for, forget_entries
from npdynamo.errors import RecompileLimitWarning


def code_of(x):
    return x


class Entry:
    """An entry for one value of ``x``: runs when called with it."""

    def __init__(self, value):
        self.value = value

    def check(self, x):
        return x == self.value

    def run(self, x):
        return ("entry", self.value)

    def miss_reason(self, x):
        return f"x == {self.value} failed"

    def serve(self, rebind):
        """``CompiledEntry.serve`` of a graph that waits for nothing: its ``run``."""
        return self.run


def plain(x):
    return ("python", x)


@pytest.fixture
def cache():
    return EntryCache(code_of.__code__)


def test_a_miss_builds_an_entry_and_the_next_call_finds_it(cache):
    built = []

    def build(args):
        built.append(args)
        return Entry(args[0])

    assert cache.run_or_capture(plain, (1,), build) == ("entry", 1)
    assert cache.run_or_capture(plain, (1,), build) == ("entry", 1)
    assert built == [(1,)] and cache.lookup((1,)) is not None and cache.lookup((2,)) is None


def test_a_build_that_gives_nothing_runs_the_python_fallback(cache):
    assert cache.run_or_capture(plain, (3,), lambda args: None) == ("python", 3)
    assert cache.entries == []


def test_at_the_limit_the_code_runs_as_python_until_cleared(cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in range(5):
            cache.run_or_capture(plain, (x,), lambda args: Entry(args[0]))
    assert len(cache.entries) == 2 and list(cache.pairs) == []
    assert "cache_size_limit (2) reached; last reason: x == 0 failed" in cache.python_only
    assert [w.category for w in caught] == [RecompileLimitWarning]  # warned once
    assert cache.run_or_capture(plain, (0,), lambda args: Entry(args[0])) == ("python", 0)
    cache.clear()
    assert cache.python_only is None and cache.entries == []
    assert cache.run_or_capture(plain, (0,), lambda args: Entry(args[0])) == ("entry", 0)


class Session:
    """What a frame cache reads of its session: settings and how to capture."""

    def __init__(self, backend, fullgraph=False, dynamic=None):
        self.backend, self.fullgraph, self.dynamic = backend, fullgraph, dynamic
        self.calls = []

    def build_entry(self, fn, frame_args, **options):
        self.calls.append(options)
        return Entry(frame_args[0])


def test_frame_caches_are_shared_by_sessions_with_the_same_settings_and_capture_through_the_first():
    def backend(gm, example_inputs):
        return gm

    first, second, other = Session(backend), Session(backend), Session(backend, fullgraph=True)
    try:
        cache = cache_for(code_of, code_of.__code__, first)
        assert isinstance(cache, FrameCache) and cache.session is first
        assert cache_for(code_of, code_of.__code__, second) is cache
        assert cache_for(code_of, code_of.__code__, other) is not cache
        miss = cache.miss_handler(code_of, plain)
        assert miss(7) == ("entry", 7)
        assert first.calls == [{"backend": backend, "fullgraph": False, "dynamic": None,
                                "context": first}]
        assert second.calls == []
    finally:
        forget_entries()
