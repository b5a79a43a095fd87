"""The cache limit as a final decision, and thread-safe capture, with the real translator."""

from __future__ import annotations

import copy
import threading
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo import config
from npdynamo.api import enable, reset
from npdynamo.capture.hooks import RecompileLimitWarning, compiled_entries
from npdynamo.capture.hooks.cache import cache_of
from npdynamo.capture.hooks.compiled_function import dispatcher_of
from tests.differential import CountingBackend, assert_same_value

pytestmark = pytest.mark.usefixtures("fresh_caches")


def scaled(x, n):
    return x * n + 1.0


def scaled_closure_maker(offset):
    def scaled_closure(x, n):
        return x * n + offset

    return scaled_closure


def test_past_the_limit_the_front_runs_the_users_code(cache_limit):
    cache_limit(3)
    backend = CountingBackend()
    compiled = npdynamo.compile(scaled, backend=backend)
    x = np.arange(4.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(10):
            assert_same_value(scaled(x, n), compiled(x, n))
        for n in range(3):  # values that had entries: plain Python now, same results
            assert_same_value(scaled(x, n), compiled(x, n))
    limit_warnings = [w for w in caught if w.category is RecompileLimitWarning]
    assert len(limit_warnings) == 1
    assert "n: expected 0, got 3" in str(limit_warnings[0].message)
    assert backend.count == 3
    assert len(compiled_entries(compiled)) == 3  # kept for inspection
    cache = cache_of(compiled)
    assert compiled.__code__ is scaled.__code__
    assert len(cache.pairs) == 0 and cache.python_only is not None


def test_closure_past_the_limit_runs_its_own_code_with_its_cells(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 1)
    fn = scaled_closure_maker(5.0)
    compiled = npdynamo.compile(fn)
    x = np.arange(3.0)
    with pytest.warns(RecompileLimitWarning):
        for n in range(4):
            assert_same_value(fn(x, n), compiled(x, n))
    assert compiled.__code__ is fn.__code__
    assert dispatcher_of(compiled).__closure__ is fn.__closure__


def test_reset_after_the_limit_compiles_again(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 1)
    backend = CountingBackend()
    compiled = npdynamo.compile(scaled, backend=backend)
    x = np.ones(2)
    with pytest.warns(RecompileLimitWarning):
        compiled(x, 1)
        compiled(x, 2)
    reset()
    assert compiled.__code__ is not scaled.__code__
    assert_same_value(scaled(x, 2), compiled(x, 2))
    assert backend.count == 2
    assert len(compiled_entries(compiled)) == 1


def region_step(x, n):
    return x * n - 2.0


def test_region_hooked_function_past_the_limit_gets_its_code_back(cache_limit):
    cache_limit(2)
    code = region_step.__code__
    x = np.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with enable():
            for n in range(6):
                assert_same_value(x * n - 2.0, region_step(x, n))
    assert sum(w.category is RecompileLimitWarning for w in caught) == 1
    assert region_step.__code__ is code
    reset()
    assert region_step.__code__ is code


# --- threads ---------------------------------------------------------------------------------


def racing(x, w):
    return np.tanh(x @ w) + x.sum()


@pytest.mark.parametrize("rounds", [3])
def test_concurrent_first_calls_capture_once(rounds):
    threads = 8
    rng = np.random.default_rng(0)
    for round_ in range(rounds):
        reset()
        backend = CountingBackend()
        compiled = npdynamo.compile(racing, backend=backend)
        x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
        expected = racing(x, w)
        barrier = threading.Barrier(threads)
        results: list = [None] * threads
        errors: list = []

        def worker(i, x=x, w=w, barrier=barrier, compiled=compiled, results=results, errors=errors):
            try:
                args = copy.deepcopy((x, w))
                barrier.wait()
                results[i] = compiled(*args)
            except BaseException as exc:  # reported below
                errors.append(exc)

        pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert errors == []
        for got in results:
            assert_same_value(expected, got)
        assert len(compiled_entries(compiled)) == 1, f"round {round_}"
        assert backend.count == 1
        # a later new shape is still compiled
        x2 = rng.standard_normal((6, 3))
        assert_same_value(racing(x2, w), compiled(x2, w))
        assert len(compiled_entries(compiled)) == 2
        assert cache_of(compiled).python_only is None


def test_concurrent_calls_with_different_shapes_each_capture_once():
    threads = 8
    backend = CountingBackend()
    compiled = npdynamo.compile(racing, backend=backend, dynamic=False)
    w = np.ones((3, 3))
    inputs = [np.full((1 + i % 4, 3), float(i)) for i in range(threads)]
    barrier = threading.Barrier(threads)
    results: list = [None] * threads

    def worker(i):
        barrier.wait()
        results[i] = compiled(inputs[i], w)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    for i in range(threads):
        assert_same_value(racing(inputs[i], w), results[i])
    # 4 distinct shapes: never more than 4 entries (dynamic shapes may merge some)
    assert 1 <= len(compiled_entries(compiled)) <= 4
    assert backend.count == len(compiled_entries(compiled))


def counts_up(n):
    yield from range(n)


def test_generator_function_past_the_limit_keeps_a_plain_front(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 0)
    compiled = npdynamo.compile(counts_up)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no generator code in a function
        with pytest.warns(RecompileLimitWarning):
            assert list(compiled(3)) == [0, 1, 2]
        assert list(compiled(4)) == [0, 1, 2, 3]
    assert compiled.__code__ is not counts_up.__code__
    assert cache_of(compiled).python_only is not None


def counter_in_arithmetic_after_a_break(x):
    for i in range(40):
        npdynamo.graph_break()
        x = x * 0.5 + i  # ``i`` is read: a guarded value, one entry per iteration
    return x


def test_a_resume_point_past_the_limit_runs_python_for_good(cache_limit):
    cache_limit(4)
    backend = CountingBackend()
    compiled = npdynamo.compile(counter_in_arithmetic_after_a_break, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert_same_value(
                counter_in_arithmetic_after_a_break(np.ones(3)), compiled(np.ones(3))
            )
    limit_warnings = [w for w in caught if issubclass(w.category, RecompileLimitWarning)]
    assert len(limit_warnings) == 1
    assert "from now on it runs as plain Python" in str(limit_warnings[0].message)
    graphs = backend.count
    compiled(np.ones(3))  # nothing new is compiled once the resume point runs in Python
    assert backend.count == graphs


def test_racing_calls_capture_each_resume_point_once():
    backend = CountingBackend()
    compiled = npdynamo.compile(counter_in_arithmetic_after_a_break, backend=backend)
    barrier = threading.Barrier(8)
    results = [None] * 8

    def call(k):
        barrier.wait()
        results[k] = compiled(np.ones(3))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecompileLimitWarning)
        threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        reset()
        alone = CountingBackend()
        npdynamo.compile(counter_in_arithmetic_after_a_break, backend=alone)(np.ones(3))
    expected = counter_in_arithmetic_after_a_break(np.ones(3))
    for got in results:
        assert_same_value(expected, got)
    # eight racing calls compiled exactly what one call compiles: nothing twice
    assert backend.count == alone.count
