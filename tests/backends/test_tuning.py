"""The tuner: each compiled graph runs as the fastest of its candidates, chosen on warm calls."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import own_work, tuning
from npdynamo.backends.numba.backend import TUNING_PENDING
from tests.backends.compare import assert_close


@pytest.fixture(autouse=True)
def _no_background_work(monkeypatch):
    """These tests' races are not disturbed by this process's compile workers (another test's
    graphs may still compile in them): the tests that want a busy process say so."""
    monkeypatch.setattr(own_work, "_probes", [])


class FakeClock:
    """Each candidate's run advances the clock by that candidate's cost."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def costing(clock: FakeClock, label: str, cost: float, runs: list):
    def run(x):
        runs.append(label)
        clock.now += cost
        return (x + 1,)

    return tuning.Candidate(label, run)


def test_every_candidate_runs_once_untimed_then_timed_and_the_fastest_stays():
    clock, runs, decided = FakeClock(), [], []
    candidates = [costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs),
                  costing(clock, "c", 2.0, runs)]
    fn = tuning.fastest_of(candidates, decided.append, clock)
    # a (3x the best) is dropped after the first timed round: it cannot win
    order = ["c", "b", "a"] + ["a", "a", "b", "b", "c", "c"] + ["b", "b", "c", "c"] * (
        tuning.TIMED_ROUNDS - 1)
    for i in range(len(order) + 5):
        assert fn(i) == (i + 1,)  # every call returns its own candidate's result
    assert runs[:len(order)] == order  # each timed call right after a warm one
    assert runs[len(order):] == ["b"] * 5
    assert len(decided) == 1 and decided[0].startswith("runs as b")


def test_tuning_calls_count_the_trial_calls_and_stop_once_chosen():
    """Benchmarks warm a function up until its calls stop running tuning steps."""
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs)],
                           decided.append, clock)
    before = tuning.tuning_calls()
    while not decided:
        fn(0)
    trials = tuning.tuning_calls() - before
    assert trials == len(runs)
    for _ in range(5):
        fn(0)
    assert tuning.tuning_calls() - before == trials


def test_a_candidate_whose_first_call_after_another_is_slow_is_timed_warm():
    """A parallel kernel's first call after a long NumPy call wakes its threads: the timed call
    is the second in a row."""
    clock, decided = FakeClock(), []
    last = {"label": None}

    def make(label, cost, cold_cost):
        def run(x):
            clock.now += cost if last["label"] == label else cold_cost
            last["label"] = label
            return (x,)

        return tuning.Candidate(label, run)

    fn = tuning.fastest_of([make("parallel", 1.0, 5.0), make("serial", 2.0, 2.0)],
                           decided.append, clock)
    for i in range(2 * (1 + 2 * tuning.TIMED_ROUNDS)):
        fn(i)
    assert decided[0].startswith("runs as parallel")


def test_the_first_untimed_round_does_not_count():
    clock, runs, decided = FakeClock(), [], []
    slow_start = {"n": 0}

    def warming(x):  # expensive the first time only (a kernel loading, a pool starting)
        slow_start["n"] += 1
        clock.now += 100.0 if slow_start["n"] == 1 else 0.5
        return (x,)

    fn = tuning.fastest_of(
        [tuning.Candidate("warming", warming), costing(clock, "steady", 1.0, runs)],
        decided.append, clock)
    for i in range(2 * (1 + 2 * tuning.TIMED_ROUNDS)):
        fn(i)
    assert decided[0].startswith("runs as warming")


def test_activate_switches_the_program_before_each_run():
    state, seen = {"mode": None}, []

    def run(x):
        seen.append(state["mode"])
        return (x,)

    def activate(mode):
        return lambda: state.update(mode=mode)

    fn = tuning.fastest_of([tuning.Candidate("p", run, activate("parallel")),
                            tuning.Candidate("s", run, activate("serial"))], lambda text: None)
    for i in range(2 * (1 + 2 * tuning.TIMED_ROUNDS)):
        fn(i)
    assert seen == ["serial", "parallel"] + ["parallel"] * 2 + ["serial"] * 2 \
        + ["parallel"] * 2 + ["serial"] * 2
    fn(0)
    assert seen[-1] == state["mode"]  # the winner stays activated


def softplus_sum(x, y):
    return np.log1p(np.exp(x * y)).sum() + (x - y).max()


def test_tuned_graph_matches_python_on_every_call_and_explain_shows_the_choice():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(300_000), rng.standard_normal(300_000)  # parallel-sized
    compiled = npdynamo.compile(softplus_sum, backend="numba")
    want = softplus_sum(x, y)
    # through the tuning (with its extra rounds when two candidates come close) and past it
    for _ in range(3 * (1 + 2 * (tuning.TIMED_ROUNDS + tuning.EXTRA_ROUNDS)) + 2):
        assert_close(compiled(x, y), want)
    report = npdynamo.explain(softplus_sum, backend="numba")(x, y).backend_reports[0]
    assert report.tuning == TUNING_PENDING  # explain's own capture: no warm call yet
    (entry,) = npdynamo.capture.hooks.compiled_entries(compiled)
    text = str(entry.report)
    assert "runs as " in text and "numba parallel" in text and "numba serial" in text


def test_tuning_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    compiled = npdynamo.compile(softplus_sum, backend="numba")
    x = np.linspace(0.0, 1.0, 50)
    assert_close(compiled(x, x), softplus_sum(x, x))
    (entry,) = npdynamo.capture.hooks.compiled_entries(compiled)
    assert "NPDYNAMO_NUMBA_TUNE=0" in entry.report.tuning


def test_microsecond_calls_get_more_rounds_before_the_choice():
    clock, decided = FakeClock(), []
    calls = {"n": 0}

    def preempted_early(x):  # the fastest, but its first timed calls lost the core
        calls["n"] += 1
        clock.now += 5e-6 if calls["n"] <= 1 + 2 * tuning.TIMED_ROUNDS else 1e-6
        return (x,)

    runs: list = []
    fn = tuning.fastest_of(
        [tuning.Candidate("fast", preempted_early), costing(clock, "steady", 2e-6, runs)],
        decided.append, clock)
    per_candidate = 1 + 2 * (tuning.TIMED_ROUNDS + tuning.EXTRA_ROUNDS)
    for i in range(2 * per_candidate):
        fn(i)
    assert len(runs) == per_candidate and len(decided) == 1  # "steady": 2x fast, not dropped
    assert decided[0].startswith("runs as fast")


def test_the_winner_is_handed_to_who_calls_it_by_name():
    clock, runs, decided = FakeClock(), [], []
    candidates = [costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs)]
    fn = tuning.fastest_of(candidates, decided.append, clock)
    handed = []
    fn.on_retarget(handed.append)
    for i in range(2 * (1 + 2 * tuning.TIMED_ROUNDS)):
        fn(i)
    assert handed == [candidates[1].run]


def test_an_entry_calls_the_chosen_program_directly_once_tuned():
    from npdynamo.capture.hooks import compiled_entries

    def chain(x):
        return (x * 2.0 + 1.0) * x - 3.0

    x = np.linspace(0.0, 1.0, 10)
    compiled = npdynamo.compile(chain, backend="numba")
    for _ in range(40):  # past the tuning rounds
        assert_close(compiled(x), chain(x))
    (entry,) = compiled_entries(compiled)
    callees = [v for k, v in entry.run.__globals__.items() if k.startswith("COMPILED")]
    # the winner, no longer the tuner's timing function
    assert callees == [entry.compiled.run] and callees[0].__name__ != "call"
    assert_close(compiled(x), chain(x))


def test_close_candidates_get_more_rounds_and_slow_losers_are_dropped():
    clock, decided, runs = FakeClock(), [], []
    calls = {"n": 0}

    def settling(x):  # 1.1 ms while the cache is cold (its first calls), then 0.6 ms
        calls["n"] += 1
        clock.now += 1.1e-3 if calls["n"] <= 1 + 2 * tuning.TIMED_ROUNDS else 0.6e-3
        runs.append("settling")
        return (x,)

    fn = tuning.fastest_of([tuning.Candidate("settling", settling),
                            costing(clock, "steady", 1.0e-3, runs),
                            costing(clock, "numpy", 12e-3, runs)], decided.append, clock)
    for i in range(60):
        fn(i)
    assert decided[0].startswith("runs as settling")
    assert runs.count("numpy") == 3  # untimed, then one timed round: 12x slower, dropped


def complex_filter(E, w, steps):
    """A loop over complex values: its body's kernels run inside the compiled loop, against
    the eager graph's loop, which writes ``out`` in place."""
    out = np.zeros(steps, dtype=np.complex128)
    for i in range(steps):
        est = np.sum(E[i:i + 4] * np.conj(w))
        out[i] = (1.0 - abs(est) ** 2) * est
        w += 1e-3 * np.conj(out[i]) * E[i:i + 4]
    return out, w


def test_a_graph_whose_only_kernels_are_in_its_loops_is_tuned_against_eager():
    rng = np.random.default_rng(2)
    E = rng.standard_normal(300) + 1j * rng.standard_normal(300)
    w = np.zeros(4, dtype=np.complex128)
    w[1] = 1.0
    compiled = npdynamo.compile(complex_filter, backend="numba")
    for _ in range(2 * (1 + 2 * (tuning.TIMED_ROUNDS + tuning.EXTRA_ROUNDS)) + 2):
        got, want = compiled(E, w.copy(), 200), complex_filter(E, w.copy(), 200)
        assert_close(got, want, rtol=1e-9)
    (entry,) = npdynamo.capture.hooks.compiled_entries(compiled)
    text = entry.report.tuning
    assert text.startswith("runs as ") and "eager" in text and "numba" in text


def costing_calls(clock: FakeClock, label: str, costs, runs: list):
    """A single-threaded candidate whose n-th call (from 1) costs ``costs(n)``."""
    def run(x):
        runs.append(label)
        clock.now += costs(runs.count(label))
        return (x + 1,)

    return tuning.Candidate(label, run)


def side_by_side(clock: FakeClock, label: str, costs, runs: list):
    """A candidate on several threads (as the scheduler marks its form): its n-th call costs
    ``costs(n)``."""
    return tuning.Candidate(label, costing_calls(clock, label, costs, runs).run,
                            side_by_side=True)


def test_the_scheduler_marks_its_form_as_side_by_side(monkeypatch):
    from npdynamo import ops
    from npdynamo.backends import scheduler
    from npdynamo.backends.inplace import may_alias
    from npdynamo.fx import Graph
    from npdynamo.ops.meta import ArrayMeta

    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "auto")
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    offered = []
    monkeypatch.setattr(tuning, "fastest_of",
                        lambda candidates, record, report=None, measured=None:
                        offered.extend(candidates))
    g = Graph()
    xs = []
    for name in ("a", "b"):
        p = g.placeholder(name)
        p.meta["val"] = ArrayMeta((256, 256), np.dtype(np.float64))
        xs.append(p)
    products = [g.call_function(ops.matmul, (x, x)) for x in xs]
    for node in products:
        node.meta["val"] = ArrayMeta((256, 256), np.dtype(np.float64))
    g.output(tuple(products))
    scheduler.tuned_eager(g, lambda a, b: (a @ a, b @ b), may_alias(g))
    assert [(c.label, c.side_by_side) for c in offered] == [("serial", False), ("scheduled", True)]


#: (serial's n-th call cost, the side-by-side form's, calls, the form kept, a phrase of the why)
SIDE_BY_SIDE_CASES = {
    # the scheduled form takes 0.6 of serial's time, but its first timed call (its 3rd) lost
    # the second core and took 3x serial: one such call must not decide
    "lost its core once, kept": (lambda n: 1.0, lambda n: 3.0 if n == 3 else 0.6, 60,
                                 "scheduled", ""),
    # serial's two first timed calls (its 3rd and 5th) lost the core and took 3.0: the
    # schedule (1.7) leads then, and more rounds must show it loses
    "in the lead, timed again": (lambda n: 3.0 if n in (3, 5) else 1.0, lambda n: 1.7, 60,
                                 "serial", ""),
    "barely faster, dropped": (lambda n: 1.0, lambda n: 0.98, 40, "serial",
                               "scheduled was less than 5% faster"),
    # the schedule's first timed call (its 3rd) was fast, every other call 1.7x serial: it
    # wins on its best call, then its next calls' median sends the graph back to serial
    "won on one fast call, dropped on probation": (
        lambda n: 1.0, lambda n: 0.5 if n == 3 else 1.7, 80, "serial", "median over its next"),
}


def test_a_side_by_side_form_left_alone_in_the_race_is_kept():
    """Serial (its timed call lost the core: 100x) is dropped after the first timed round; the
    scheduled form, never dropped, is then the only one left and runs every later call."""
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of(
        [costing_calls(clock, "serial", lambda n: 100.0 if n == 3 else 1.0, runs),
         side_by_side(clock, "scheduled", lambda n: 0.8, runs)], decided.append, clock)
    for i in range(10):
        assert fn(i) == (i + 1,)
    assert decided and decided[0].startswith("runs as scheduled"), decided
    assert runs[-3:] == ["scheduled"] * 3


@pytest.mark.parametrize("case", SIDE_BY_SIDE_CASES)
def test_a_side_by_side_form_is_kept_only_when_it_stays_faster(case):
    serial, scheduled, calls, kept, why = SIDE_BY_SIDE_CASES[case]
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of(
        [costing_calls(clock, "serial", serial, runs),
         side_by_side(clock, "scheduled", scheduled, runs)], decided.append, clock)
    for i in range(calls):
        fn(i)
    assert decided and decided[0].startswith(f"runs as {kept}"), decided
    assert why in decided[0]
    assert runs[-5:] == [kept] * 5


def holding_gil(clock: FakeClock, label: str, costs, runs: list):
    """A candidate that holds the GIL between its operations (the eager graph): its n-th call
    costs ``costs(n)``."""
    return tuning.Candidate(label, costing_calls(clock, label, costs, runs).run, holds_gil=True)


#: (the eager graph's n-th call cost, the numba program's, the form kept, a phrase of the why)
GIL_CASES = {
    # 3% apart: within the noise of a few calls, the program that releases the GIL stays
    "eager barely faster": (lambda n: 0.97, lambda n: 1.0, "numba", "holds the GIL"),
    # clearly faster: the eager graph stays
    "eager clearly faster": (lambda n: 0.9, lambda n: 1.0, "eager", ""),
    # microsecond calls: the fastest stays (the GIL is held about as long around the call)
    "microsecond calls": (lambda n: 0.97e-5, lambda n: 1e-5, "eager", ""),
    # the program is faster: the rule changes nothing
    "numba faster": (lambda n: 1.2, lambda n: 1.0, "numba", ""),
    # the program's first timed call (its 3rd) was preempted (3x): it is not dropped on that
    # one call, and its later calls show it is as fast
    "numba preempted once": (lambda n: 0.97, lambda n: 3.0 if n == 3 else 1.0, "numba",
                             "holds the GIL"),
    # both of the program's first timed calls (its 3rd and 5th) were slowed (2x): the eager
    # graph leads while holding the GIL, so more rounds are timed, where the program's usual
    # cost shows
    "numba slowed twice": (lambda n: 1.1, lambda n: 2.0 if n in (3, 5) else 1.0, "numba", ""),
}


@pytest.mark.parametrize("case", GIL_CASES)
def test_a_form_holding_the_gil_must_win_by_the_gil_margin(case):
    eager, numba, kept, why = GIL_CASES[case]
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([holding_gil(clock, "eager", eager, runs),
                            costing_calls(clock, "numba", numba, runs)], decided.append, clock)
    for i in range(60):
        assert fn(i) == (i + 1,)
    assert decided and decided[0].startswith(f"runs as {kept}"), decided
    assert why in decided[0]
    assert runs[-5:] == [kept] * 5


def test_a_form_holding_the_gil_far_slower_is_still_dropped_at_once():
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([holding_gil(clock, "eager", lambda n: 12.0, runs),
                            costing_calls(clock, "numba", lambda n: 1.0, runs)],
                           decided.append, clock)
    for i in range(40):
        fn(i)
    assert decided[0].startswith("runs as numba")
    assert runs.count("eager") == 3  # untimed, then one timed round


def test_the_numba_backend_marks_its_eager_candidate_as_holding_the_gil(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    offered = []
    real = tuning.fastest_of

    def spy(candidates, record, report=None, measured=None):
        offered.extend(candidates)
        return real(candidates, record, report=report, measured=measured)

    monkeypatch.setattr(tuning, "fastest_of", spy)
    compiled = npdynamo.compile(softplus_sum, backend="numba")
    x, y = np.linspace(-3, 3, 5000), np.linspace(0, 1, 5000)
    assert_close(compiled(x, y), softplus_sum(x, y), rtol=1e-12)
    assert offered and {c.label: c.holds_gil for c in offered}["eager"] is True
    assert not any(c.holds_gil for c in offered if c.label != "eager")


def test_only_the_fastest_form_releasing_the_gil_stays_beside_the_eager_leader():
    """numba parallel (lost its cores: 10x) is dropped after one timed round; numba serial,
    whose first timed call was slowed 3x, stays against the eager graph and is kept."""
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of(
        [holding_gil(clock, "eager", lambda n: 1.0, runs),
         costing_calls(clock, "numba parallel", lambda n: 10.0, runs),
         costing_calls(clock, "numba serial", lambda n: 3.0 if n == 3 else 1.05, runs)],
        decided.append, clock)
    for i in range(60):
        fn(i)
    assert runs.count("numba parallel") == 3  # untimed, then one timed round
    assert decided[0].startswith("runs as numba serial") and "holds the GIL" in decided[0]


# -- a candidate measured before the tuning (the eager tier's calls while compiling) -------------
def test_a_measured_candidate_far_behind_is_not_run_again():
    """The eager graph timed on its tier at 12 (the kernels take 1): the tuner never runs it
    again, and says where its time came from."""
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([holding_gil(clock, "eager", lambda n: 12.0, runs),
                            costing_calls(clock, "numba", lambda n: 1.0, runs)],
                           decided.append, clock, measured={"eager": 12.0})
    for i in range(20):
        assert fn(i) == (i + 1,)
    assert "eager" not in runs
    assert runs[:3] == ["numba"] * 3  # its untimed first call, then one timed round
    assert decided[0].startswith("runs as numba")
    assert "eager 12000.000 ms (its calls while compiling)" in decided[0]
    before = tuning.tuning_calls()
    fn(0)
    assert tuning.tuning_calls() == before  # chosen: no more tuning calls


def test_a_measured_candidate_that_might_win_is_timed_with_the_others():
    """Measured at 1.5 beside the compile (slowed), the eager graph might still beat the
    kernels' 1.0: it joins the rounds, and its own calls (0.5) show it is faster."""
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([holding_gil(clock, "eager", lambda n: 0.5, runs),
                            costing_calls(clock, "numba", lambda n: 1.0, runs)],
                           decided.append, clock, measured={"eager": 1.5})
    for i in range(40):
        assert fn(i) == (i + 1,)
    assert decided[0].startswith("runs as eager"), decided
    assert "while compiling" not in decided[0]
    assert runs[:4] == ["numba", "numba", "numba", "eager"]  # eager's untimed call follows
    assert runs[-5:] == ["eager"] * 5


def test_measured_times_for_every_candidate_are_not_trusted_alone():
    clock, runs, decided = FakeClock(), [], []
    fn = tuning.fastest_of([costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs)],
                           decided.append, clock, measured={"a": 0.1, "b": 5.0})
    for i in range(20):
        fn(i)
    assert decided[0].startswith("runs as b")
    assert {"a", "b"} <= set(runs)


class Busy:
    """This process's background work as the tuner sees it, switched by the test; while it runs,
    every call costs ``slowdown`` times as much (the worker took the call's core)."""

    def __init__(self, slowdown: float = 1.0) -> None:
        self.on, self.slowdown = True, slowdown

    def __call__(self) -> bool:
        return self.on


def slowed(clock: FakeClock, label: str, cost: float, busy: Busy, runs: list):
    def run(x):
        runs.append(label)
        clock.now += cost * (busy.slowdown if busy.on else 1.0)
        return (x + 1,)

    return tuning.Candidate(label, run)


def test_a_choice_timed_while_compile_workers_ran_is_raced_again_once_they_are_idle():
    """eager (1.0) against numba (0.8): numba's calls lost their core to a worker importing numba
    (x3) while the race ran, so eager won; once the workers are idle the race runs again and
    numba stays (before: eager was kept for good)."""
    clock, runs, decided, busy = FakeClock(), [], [], Busy()
    numba_busy = Busy(slowdown=3.0)
    fn = tuning.fastest_of([slowed(clock, "eager", 1.0, busy, runs),
                            slowed(clock, "numba", 0.8, numba_busy, runs)],
                           decided.append, clock, busy=busy)
    while not decided:
        fn(0)
    assert decided[0].startswith("runs as eager") and "compile work ran" in decided[0]
    for i in range(3):  # still busy: the provisional choice runs
        assert fn(i) == (i + 1,)
    assert runs[-3:] == ["eager"] * 3
    busy.on = numba_busy.on = False
    for i in range(40):
        assert fn(i) == (i + 1,)
    assert len(decided) == 2 and decided[1].startswith("runs as numba"), decided
    assert "timed again once" in decided[1]
    assert runs[-5:] == ["numba"] * 5


def test_a_choice_timed_on_a_quiet_process_is_not_raced_again():
    clock, runs, decided, busy = FakeClock(), [], [], Busy()
    busy.on = False
    fn = tuning.fastest_of([costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs)],
                           decided.append, clock, busy=busy)
    for i in range(30):
        fn(i)
    before = tuning.tuning_calls()
    busy.on = True  # work that starts after the choice changes nothing
    for i in range(30):
        fn(i)
    assert decided == [decided[0]] and decided[0].startswith("runs as b")
    assert "compile work" not in decided[0]
    assert tuning.tuning_calls() == before


def test_the_race_runs_again_only_once():
    """Busy again during the second race (another graph compiling): its choice stands."""
    clock, runs, decided = FakeClock(), [], []
    calls = {"n": 0}

    def busy() -> bool:
        calls["n"] += 1
        return calls["n"] % 2 == 0

    fn = tuning.fastest_of([costing(clock, "a", 3.0, runs), costing(clock, "b", 1.0, runs)],
                           decided.append, clock, busy=busy)
    for i in range(200):
        fn(i)
    assert len(decided) == 2 and "timed again once" in decided[1], decided
    assert runs[-5:] == ["b"] * 5


def test_the_compile_pool_holds_a_core_per_worker_starting_or_at_a_job():
    from npdynamo.backends.numba import workers

    pool = workers.Pool()
    assert pool.cores_held() == 0
    pool._starting = 1
    assert pool.cores_held() == 1
    pool._workers = [object(), object()]  # one of them idle, waiting for a job
    pool._idle = 1
    assert pool.cores_held() == 2
    pool.closing = True
    assert pool.cores_held() == 0
