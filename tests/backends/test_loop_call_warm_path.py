"""The warm path of a compiled loop program (``loop_program._fast_path``): once a call ran
compiled, a call whose arguments have the same types, dtypes, ranks and flags calls numba's
machine code for them directly, not numba's dispatcher (which resolves the argument types on
every call); any other argument goes the general way and stays exact. Differential: plain vs
compiled on copies of the same inputs."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import npdynamo as nd
from examples.solver_loop import heat_stencil
from npdynamo.backends.numba.loop_program import LoopCall
from tests.backends.compare import assert_close
from tests.capture import for_loop_programs as FL
from tests.differential import run_both

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")  # the loop program runs from the first call


class CountingDispatcher:
    """numba's dispatcher of a loop, counting the calls that go through it."""

    def __init__(self, jit) -> None:
        self.jit, self.calls = jit, 0

    def __call__(self, *args):
        self.calls += 1
        return self.jit(*args)

    def __getattr__(self, name):
        return getattr(self.jit, name)


def compiled_loop(fn, *args) -> tuple:
    """``fn`` compiled on numba and called once; its one LoopCall, with a counting dispatcher."""
    nd.reset()
    old = [o for o in gc.get_objects() if issubclass(type(o), LoopCall)]  # (held: ids stay theirs)
    before = {id(o) for o in old}
    compiled = nd.compile(fn, backend="numba")
    run = run_both(fn, compiled, args, {})
    assert_close(run.got, run.expected)
    # (a loop with other work around it runs as the whole graph's function, a ``GraphCall``:
    # the same warm path)
    calls = [o for o in gc.get_objects()
             if issubclass(type(o), LoopCall) and o.record.runs and id(o) not in before]
    assert len(calls) == 1, calls
    (call,) = calls
    call.jit = CountingDispatcher(call.jit)
    return compiled, call


@pytest.mark.parametrize("fn, make", [
    (heat_stencil, lambda: (np.sin(np.linspace(0.0, 3.0, 24)), 30)),
    (FL.jacobi_2d, lambda: (RNG.random((7, 8)), 25)),
    (FL.counters, lambda: (RNG.random(6), 30)),
], ids=["heat_stencil", "jacobi_2d", "counters"])
def test_a_warm_call_skips_numbas_dispatcher(fn, make):
    compiled, call = compiled_loop(fn, *make())
    assert call.run != call.__call__, "no warm path was made"
    runs = call.record.runs
    for _ in range(5):
        run = run_both(fn, compiled, make(), {})
        assert_close(run.got, run.expected)
        assert_close(run.comp_args, run.plain_args, "args after the call")
    assert call.jit.calls == 0
    assert call.record.runs == runs + 5


def loop_arguments(call, compiled, *args) -> tuple:
    """The arguments the program passes to the loop when ``compiled`` runs on ``args``."""
    seen, warm = [], call.run

    def spy(*loop_args):
        seen.append(loop_args)
        return warm(*loop_args)

    call.run = spy
    try:
        compiled(*args)
    finally:
        call.run = warm
    return seen[0]


def test_other_types_or_flags_go_the_general_way_and_stay_exact():
    u = np.sin(np.linspace(0.0, 3.0, 24))
    compiled, call = compiled_loop(heat_stencil, u.copy(), 30)
    lower, upper, body, (carried,), extra = loop_arguments(call, compiled, u.copy(), 30)
    strided = np.sin(np.linspace(0.0, 3.0, 48))[::2]  # another numba layout
    read_only = u.copy()
    read_only.flags.writeable = False                 # another numba type
    others = [(lower, upper, body, (strided,), extra),
              (lower, upper, body, (read_only,), extra),
              (lower, upper, body, (u.astype(np.float32),), extra),
              (np.int64(lower), upper, body, (u.copy(),), extra)]
    # through numba's dispatcher (which types them), except the read-only carried array: the
    # Python loop runs that call (``_runs_compiled``)
    for args, dispatched in zip(others, (1, 1, 2, 3)):
        assert_close(call.run(*args), call.impl(*args))
        assert call.jit.calls == dispatched
    runs = call.record.runs
    assert_close(call.run(lower, upper, body, (u.copy(),), extra),
                 call.impl(lower, upper, body, (u.copy(),), extra))
    assert (call.jit.calls, call.record.runs) == (3, runs + 1)


def test_a_raise_on_the_warm_path_is_pythons():
    compiled, call = compiled_loop(FL.past_the_end, np.zeros(30), 20)
    for T in (25, 31, 17):  # 31 > 30: NumPy's IndexError, the array as Python leaves it
        run = run_both(FL.past_the_end, compiled, (np.zeros(30), T), {})
        if T == 31:
            assert isinstance(run.exc, IndexError)
        else:
            assert_close(run.got, run.expected)
        assert_close(run.comp_args, run.plain_args, "args after the call")
    assert call.jit.calls == 0
