"""``npdynamo/api.py``, the composition root: one session per ``compile()``, bound when made,
and ``reset()`` forgetting what every stage learnt."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo import api
from npdynamo.backends import register_backend, registry
from npdynamo.capture import compile_frame, dynamic_dims
from npdynamo.capture.hooks import region
from npdynamo.capture.hooks.cache import cache_of, recompile_reasons
from tests.differential import CountingBackend


def double(x):
    return x * 2


def with_a_break(x):
    y = x + 1
    print_nothing()
    return helper(y)


def print_nothing():
    print(end="")


def helper(y):
    return y * 3


@pytest.fixture(autouse=True)
def fresh():
    npdynamo.reset()
    yield
    npdynamo.reset()


def test_compile_binds_its_backend_and_options_into_one_session():
    backend = CountingBackend()
    compiled = api.compile(double, backend=backend, dynamic=False)
    session = cache_of(compiled).session
    assert (session.backend, session.fullgraph, session.dynamic) == (backend, False, False)
    assert session.build_entry is compile_frame.build_entry
    np.testing.assert_array_equal(compiled(np.ones(3)), np.full(3, 2.0))
    assert backend.count == 1


def test_a_function_called_natively_at_a_break_is_compiled_with_the_same_backend():
    backend = CountingBackend()
    compiled = api.compile(with_a_break, backend=backend, fullgraph=False)
    session = cache_of(compiled).session
    callee = session.compile_callee(helper)
    assert cache_of(callee).backend is backend
    assert cache_of(callee).session is not session  # its own session, default options
    assert (cache_of(callee).session.fullgraph, cache_of(callee).session.dynamic) == (False, None)
    np.testing.assert_array_equal(compiled(np.ones(2)), with_a_break(np.ones(2)))


def test_a_backends_compile_hook_is_bound_into_the_session_and_runs_per_compile():
    calls = []

    def started_backend(gm, example_inputs):
        return gm.forward

    register_backend("test_started", started_backend, override=True,
                     on_compile=lambda: calls.append("started"))
    compiled = api.compile(double, backend="test_started")
    assert cache_of(compiled).session.on_compile is registry.compile_hook(started_backend)
    api.compile(helper, backend="test_started")
    assert calls == ["started", "started"]
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    # a backend registered without one (or a plain callable) binds none
    assert cache_of(api.compile(double, backend=CountingBackend())).session.on_compile is None
    # numba has none: its compile workers start with a function's first graph, not here
    assert cache_of(api.compile(double, backend="numba")).session.on_compile is None


def test_enable_makes_its_blocks_session_with_its_backend():
    backend = CountingBackend()
    block = api.enable(backend)
    assert block.session.backend is backend and block.session.build_entry is not None


def test_reset_forgets_entries_hooks_and_learnt_shapes():
    compiled = api.compile(double)
    compiled(np.ones(3))
    compiled(np.ones(4))  # a recompile, and automatic dynamic shapes learn a size
    assert cache_of(compiled).entries and recompile_reasons(compiled)
    assert dynamic_dims._SEEN
    with api.enable():
        helper(np.ones(2))  # hooked on its first call in the block
    assert region.hooked_functions()
    api.reset()
    assert cache_of(compiled).entries == [] and recompile_reasons(compiled) == []
    assert not dynamic_dims._SEEN and region.hooked_functions() == []


def test_a_compiled_function_unpickles_through_the_composition_root():
    import pickle

    again = pickle.loads(pickle.dumps(api.compile(double, backend="eager")))
    assert again is api._compile_again(double, "eager", False, None)
    np.testing.assert_array_equal(again(np.ones(2)), np.full(2, 2.0))
