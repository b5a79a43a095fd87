"""Plain Python while the compiled tier compiles (``tiers.WhileCompiling``).

A frame whose graph waits for its compiled tier runs either its eager tier or the frame as
plain Python, whichever its first calls measured faster, then the compiled tier after the
switch. The decision is forced here (``tiers.EAGER_BELOW``: 0 makes plain Python win, infinity the
eager tier), and the compile is a job the test ends (``Job``), so nothing depends on timing.
Each call must run exactly once on one of the paths: the functions count their runs through a
side effect (a global list), and results and arguments' states are compared with plain Python.
One test runs the real numba backend end to end.
"""

from __future__ import annotations

import copy
import math
import threading

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import tiers
from npdynamo.backends.numba import diskcache
from npdynamo.capture.hooks.cache import cache_of
from npdynamo.fx import GraphModule
from tests.differential import assert_same_value

LOG: list[int] = []


class Job:
    """A compile the test ends itself (``finish``)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def done(self) -> bool:
        return self.event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.event.wait(timeout)

    def finish(self) -> None:
        self.event.set()


class Backend:
    """A backend whose graphs wait on ``job``: ``eager`` and ``compiled`` count the calls each
    tier ran."""

    def __init__(self) -> None:
        self.job = Job()
        self.eager = 0
        self.compiled = 0
        self.made: list[tiers.Tiered] = []

    def __call__(self, gm: GraphModule, example_inputs: list):
        def eager(*inputs):
            self.eager += 1
            return gm.forward(*inputs)

        def compiled(*inputs):
            self.compiled += 1
            return gm.forward(*inputs)

        tiered = tiers.Tiered(eager, self.job, lambda job: compiled)
        self.made.append(tiered)
        return tiered.compiled


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "plain_while_compiling", True)
    LOG.clear()
    yield
    LOG.clear()


def stencil(u, steps):
    """A loop graph writing its argument in place, and a side effect counting its runs."""
    LOG.append(steps)
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u.sum(), u[::7] * 2


def with_break(u, k):
    """A graph, a graph break (``npdynamo.graph_break()``), a graph."""
    LOG.append(k)
    v = np.cumsum(u) * k
    npdynamo.graph_break()
    u += v[::-1]
    return v.max(), u.min()


def start(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(40)


def same_call(compiled, fn, *args, close: bool = False) -> None:
    """One call of ``compiled`` against ``fn`` in plain Python, on copies of ``args``: the
    result, every argument's state after, and one run each (``LOG`` grows by one per call).
    ``close``: within the numba backend's tolerance (its compiled tier), else bit for bit."""
    before = len(LOG)
    want_args = copy.deepcopy(args)
    want = fn(*want_args)
    got_args = copy.deepcopy(args)
    got = compiled(*got_args)
    assert len(LOG) == before + 2, "a call ran twice, or not at all"
    if close:
        for w, g in zip([*want, *want_args], [*got, *got_args]):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        return
    assert_same_value(want, got)
    assert_same_value(want_args, got_args, "arguments")


def gate_of(compiled):
    """What the frame's cache runs for its one entry (the gate while waiting)."""
    ((_check, run),) = cache_of(compiled).pairs
    return run


def test_plain_python_runs_the_waiting_calls_once_slower(monkeypatch):
    monkeypatch.setattr(tiers, "EAGER_BELOW", 0.0)  # any eager time is "slower"
    backend = Backend()
    fn = npdynamo.compile(stencil, backend=backend)
    for seed in range(8):
        same_call(fn, stencil, start(seed), 30)
    (tiered,) = backend.made
    # the first calls alternate (eager, plain, eager, plain): then plain Python only
    assert backend.eager == tiers.SAMPLES
    assert tiered.eager_calls == tiers.SAMPLES and tiered.plain_calls == 8 - tiers.SAMPLES
    assert isinstance(gate_of(fn), tiers.WhileCompiling)
    assert "plain Python runs its calls while compiling" in tiered.serving()
    backend.job.finish()
    for seed in range(3):
        same_call(fn, stencil, start(seed), 30)
    # the switch came at the next call boundary; the entry's own runner is back in the cache
    assert tiered.switched and backend.compiled == 3
    assert backend.eager == tiers.SAMPLES
    assert not isinstance(gate_of(fn), tiers.WhileCompiling)


def test_the_eager_tier_keeps_the_waiting_calls_when_faster(monkeypatch):
    monkeypatch.setattr(tiers, "EAGER_BELOW", math.inf)
    backend = Backend()
    fn = npdynamo.compile(stencil, backend=backend)
    for seed in range(7):
        same_call(fn, stencil, start(seed), 30)
    (tiered,) = backend.made
    assert tiered.plain_calls == tiers.SAMPLES  # the measured plain calls only
    assert backend.eager == 7 - tiers.SAMPLES
    assert tiered.serving() == "the eager tier runs its calls"
    assert npdynamo.synchronize(timeout=0.0) is False
    backend.job.finish()
    assert npdynamo.synchronize(timeout=10)  # switches the graph now, before its next call
    same_call(fn, stencil, start(9), 30)
    assert backend.compiled == 1 and backend.eager == 7 - tiers.SAMPLES


def test_switched_off_the_eager_tier_runs_every_waiting_call(monkeypatch):
    monkeypatch.setattr(tiers, "EAGER_BELOW", 0.0)
    monkeypatch.setattr(npdynamo.config, "plain_while_compiling", False)
    backend = Backend()
    fn = npdynamo.compile(stencil, backend=backend)
    for seed in range(5):
        same_call(fn, stencil, start(seed), 30)
    assert backend.eager == 5 and backend.made[0].plain_calls == 0
    assert not isinstance(gate_of(fn), tiers.WhileCompiling)
    backend.job.finish()


def test_a_broken_frame_runs_whole_in_plain_python(monkeypatch):
    monkeypatch.setattr(tiers, "EAGER_BELOW", 0.0)
    backend = Backend()
    fn = npdynamo.compile(with_break, backend=backend)
    for seed in range(6):
        same_call(fn, with_break, start(seed), 3.0)
    prefix = backend.made[0]  # the graph before the break: the frame's entry waits on it
    assert prefix.plain_calls == 6 - tiers.SAMPLES
    # the resume function's graph ran only on the calls the eager side took
    assert backend.eager == 2 * tiers.SAMPLES
    backend.job.finish()
    assert npdynamo.synchronize(timeout=10)
    for seed in range(2):
        same_call(fn, with_break, start(seed), 3.0)
    assert backend.compiled == 4 and backend.eager == 2 * tiers.SAMPLES


#: the clock ``WhileCompiling`` reads in ``test_the_choice_is_checked_again``, and what a call of
#: each side advances it by (seconds)
CLOCK = {"now": 0.0, "eager": 0.0, "plain": 0.0}


def costly(u):
    LOG.append(0)
    return u * 2.0


class ClockedBackend(Backend):
    def __call__(self, gm: GraphModule, example_inputs: list):
        def eager(*inputs):
            self.eager += 1
            CLOCK["now"] += CLOCK["eager"]
            return gm.forward(*inputs)

        tiered = tiers.Tiered(eager, self.job, lambda job: gm.forward)
        self.made.append(tiered)
        return tiered.compiled


def test_the_choice_is_checked_again(monkeypatch):
    """The first calls choose the eager tier (a fifth faster); later it is a third slower: the
    check 8 calls after the choice runs plain Python once, against the eager tier's best of the
    calls just before and after it, and plain Python takes the calls after. The next check
    comes 16 calls later."""
    monkeypatch.setattr(tiers, "time", type("Clock", (), {"perf_counter": staticmethod(
        lambda: CLOCK["now"])}))
    CLOCK.update(now=0.0, eager=0.040, plain=0.050)
    backend = ClockedBackend()
    fn = npdynamo.compile(costly, backend=backend)
    same_call(fn, costly, np.ones(3))  # captures; the eager tier runs it
    gate = gate_of(fn)
    plain = gate.plain

    def clocked(*args):
        CLOCK["now"] += CLOCK["plain"]
        return plain(*args)

    gate.plain = clocked
    for _ in range(2 * tiers.SAMPLES - 1):
        same_call(fn, costly, np.ones(3))
    (tiered,) = backend.made
    assert gate.plain_wins is False and tiered.measured == pytest.approx((0.040, 0.050))
    CLOCK["eager"] = 0.066
    for k in range(1, tiers.RECHECK):  # eager only, the last one timed
        same_call(fn, costly, np.ones(3))
        assert gate.plain_wins is False and tiered.plain_calls == tiers.SAMPLES, k
    same_call(fn, costly, np.ones(3))  # the check: plain Python, 0.050 against 0.066
    assert tiered.plain_calls == tiers.SAMPLES + 1 and gate.plain_wins is False
    same_call(fn, costly, np.ones(3))  # the eager tier again, then the decision
    assert tiered.plain_calls == tiers.SAMPLES + 1
    assert gate.plain_wins is True and tiered.plain_serving
    assert tiered.measured == pytest.approx((0.066, 0.050))
    assert "plain Python runs its calls" in tiered.serving()
    eager = backend.eager
    for _ in range(2 * tiers.RECHECK - 2):
        same_call(fn, costly, np.ones(3))
    # a load on plain Python's call before the check, gone by the call after it: the eager
    # tier's 0.060 is not a tenth under plain Python's best of the two (0.050)
    CLOCK.update(plain=0.080)
    same_call(fn, costly, np.ones(3))
    assert backend.eager == eager  # plain Python only, until the next check
    CLOCK.update(eager=0.060, plain=0.050)
    same_call(fn, costly, np.ones(3))
    assert backend.eager == eager + 1
    same_call(fn, costly, np.ones(3))
    assert gate.plain_wins is True and tiered.measured == pytest.approx((0.060, 0.050))
    backend.job.finish()


@pytest.mark.parametrize("slower", [0.0, math.inf])
def test_the_switch_under_threads(monkeypatch, slower):
    monkeypatch.setattr(tiers, "EAGER_BELOW", slower)
    backend = Backend()
    fn = npdynamo.compile(stencil, backend=backend)
    same_call(fn, stencil, start(), 30)  # captured before the threads start
    errors: list[BaseException] = []
    calls = 60

    def caller(seed: int) -> None:
        try:
            for k in range(calls):
                u = start(seed + k)
                want = stencil(u.copy(), 12)
                got = fn(u, 12)
                assert_same_value(want, got)
                if seed == 0 and k == calls // 2:
                    backend.job.finish()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    LOG.clear()
    threads = [threading.Thread(target=caller, args=(100 * i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    (tiered,) = backend.made
    assert tiered.switched
    # every call ran exactly once (each thread's reference run is the other half of LOG)
    assert len(LOG) == 2 * 4 * calls
    assert backend.compiled > 0


def test_numba_end_to_end(monkeypatch, tmp_path):
    """The real backend: plain Python while numba's workers compile, then the kernels."""
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setattr(diskcache, "_loaded", {})
    monkeypatch.setattr(tiers, "EAGER_BELOW", 0.0)
    made = []

    def backend(gm, example_inputs):
        from npdynamo.backends.numba.backend import numba_backend

        compiled = numba_backend(gm, example_inputs)
        made.append(compiled.run)
        return compiled

    fn = npdynamo.compile(stencil, backend=backend)
    try:
        for seed in range(4):  # the workers take seconds: these all run before the switch
            same_call(fn, stencil, start(seed), 25)
        (tiered,) = made
        assert isinstance(tiered, tiers.Tiered)
    finally:
        assert npdynamo.synchronize(timeout=180)
    assert tiered.plain_calls == 4 - tiers.SAMPLES
    for seed in range(2):
        same_call(fn, stencil, start(seed), 25, close=True)
    report = tiered.compiled.report
    assert "in plain Python while compiling" in report.tier, report.tier
    assert not isinstance(gate_of(fn), tiers.WhileCompiling)
