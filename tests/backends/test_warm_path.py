"""The warm path: how many Python frames deep a compiled function's graph runs.

A warm call is the user's function (the generated dispatcher), the entry's ``run`` and the
graph's code: 3 frames deep; a graph that draws random numbers adds the wrapper that puts the
generators back if it raises (``keep_states_on_error``): 4. The tuner and the compiled tier
retarget the entry to what they settle on (``backends.report.Compiled``), so after tuning (and
after the compiled tier took over) no frame of theirs is left, graphs with draws included.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import compile as compile_step
from npdynamo.backends import own_work, tuning
from npdynamo.backends.numba import diskcache
from npdynamo.ops.random import saved_states

WARM_CALLS = 60  # past every tuning round


def graph_depth(fn, *args) -> int:
    """The stack depth (the user's function is 1) at which the graph's code starts running."""
    depth, found = 0, []

    def profile(frame, event, arg):
        nonlocal depth
        if event == "call":
            depth += 1
            code = frame.f_code
            if code.co_name.startswith("<npdynamo-graph-") or \
                    code.co_filename == "<npdynamo-numba-program>":
                found.append(depth)
        elif event == "return":
            depth -= 1

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    assert found, "the call ran no graph"
    return found[0]


def affine(x, y):
    return np.sin(x) * y + 1.0


def noisy(x, rng):
    return x + rng.standard_normal(x.shape)


def warm(fn, *args) -> None:
    fn(*args)
    assert npdynamo.synchronize(timeout=120)
    for _ in range(WARM_CALLS):
        fn(*args)
    # a race timed while the compile workers still ran is run again once they are idle
    # (``own_work.busy``); its choice then runs as directly as any other
    deadline = time.perf_counter() + 120
    while own_work.busy() and time.perf_counter() < deadline:
        time.sleep(0.01)
    time.sleep(2 * tuning.RETIME_POLL_S)
    for _ in range(WARM_CALLS):
        fn(*args)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_warm_call_runs_the_graph_three_frames_deep(backend):
    fn = npdynamo.compile(affine, backend=backend)
    x, y = np.linspace(0.0, 1.0, 500), np.linspace(1.0, 2.0, 500)
    warm(fn, x, y)
    np.testing.assert_allclose(fn(x, y), affine(x, y), rtol=1e-12)
    assert graph_depth(fn, x, y) == 3


def noisier(x, rng):
    # two draws and a reduction after them: the state keeper saves the generator on every call
    return x * rng.standard_normal(x.shape) + rng.uniform(size=x.shape).sum()


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("kernel", [noisy, noisier])
def test_a_graph_with_draws_adds_only_its_state_keeper(backend, kernel, monkeypatch):
    """Both ways of ``keep_states_on_error``: ``noisy`` on eager (one draw, then ufuncs that
    cannot raise) skips saving the generator's state; the others save it on every call."""
    saves = []
    monkeypatch.setattr(compile_step, "saved_states",
                        lambda states: saves.append(1) or saved_states(states))
    fn = npdynamo.compile(kernel, backend=backend)
    x = np.linspace(0.0, 1.0, 500)
    warm(fn, x, np.random.default_rng(0))
    # (numba may sum in another order than NumPy's pairwise sum)
    np.testing.assert_allclose(fn(x, np.random.default_rng(1)),
                               kernel(x, np.random.default_rng(1)), rtol=1e-12)
    saves.clear()
    assert graph_depth(fn, x, np.random.default_rng(2)) == 4
    assert bool(saves) == (kernel is noisier or backend == "numba")


def test_after_the_compiled_tier_took_over_no_tier_frame_is_left(monkeypatch, tmp_path):
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setattr(diskcache, "_loaded", {})  # kernels compiled by the workers
    fn = npdynamo.compile(noisy, backend="numba")
    x = np.linspace(0.0, 1.0, 500)
    warm(fn, x, np.random.default_rng(0))
    np.testing.assert_array_equal(fn(x, np.random.default_rng(1)),
                                  noisy(x, np.random.default_rng(1)))
    assert graph_depth(fn, x, np.random.default_rng(2)) == 4
