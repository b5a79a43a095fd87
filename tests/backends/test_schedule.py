"""The inter-operator scheduler: scheduled results are bitwise the serial ones, on both backends.

Each function is compiled twice, serial (``NPDYNAMO_SCHEDULE=never``) and scheduled (``always``:
every independent step on its own stream, not timed), with the tuner off, so the numba program
runs its serial kernels both ways; results and the arguments' state afterwards are compared bit
for bit, and with plain Python. A test hook pauses at random before each step, so the streams
interleave in many orders.
"""

from __future__ import annotations

import copy
import random
import threading
import time
import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from benchmarks.schedule import mlp_loss
from npdynamo.autograd import value_and_grad
from npdynamo.backends.inplace import may_alias
from npdynamo.backends.numba import numba_backend
from npdynamo.backends.scheduler import gil_held_fraction, runner, tuned_eager
from npdynamo.backends.scheduler.plan import Schedule, Step, assign_streams, dependencies
from npdynamo.capture.hooks import compiled_entries
from npdynamo.fx import Graph, GraphModule
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from tests.backends.compare import assert_close
from tests.backends.random_graphs import random_graphs
from tests.differential import assert_same_value, check_same, check_same_warnings

BACKENDS = ["eager", "numba"]


@pytest.fixture(autouse=True)
def _serial_kernels(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "never")


@pytest.fixture
def jitter(monkeypatch):
    """Random pauses (0-300 us) before every step of the scheduled forms made meanwhile."""
    rng = random.Random(7)
    monkeypatch.setattr(runner, "STEP_HOOK", lambda: time.sleep(rng.random() * 3e-4))




def run_both_forms(fn, args, backend, monkeypatch, calls=3):
    """Serial and scheduled forms of ``fn`` on copies of ``args``: same results and arguments
    after, bit for bit, on every call; returns the scheduled form's report."""
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "never")
    serial = npdynamo.compile(fn, backend=backend)
    serial_args = copy.deepcopy(args)
    want = [serial(*serial_args) for _ in range(calls)]
    npdynamo.reset()
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    scheduled = npdynamo.compile(fn, backend=backend)
    got_args = copy.deepcopy(args)
    got = [scheduled(*got_args) for _ in range(calls)]
    assert_same_value(want, got)
    assert_same_value(_state(serial_args), _state(got_args), "arguments after")
    (entry,) = compiled_entries(scheduled)
    report = entry.report
    schedule = report.schedule if backend == "numba" else report
    assert schedule.reruns == [0]  # every call completed scheduled
    return report


def check_plain(fn, args, backend):
    """The compiled function (default schedule mode) against plain Python: bitwise on the eager
    backend (one graph, no break), within the documented tolerances on numba."""
    if backend == "eager":
        check_same(fn, *args, backend=backend, graphs=1, breaks=0)
        return
    compiled = npdynamo.compile(fn, backend=backend)
    for _ in range(2):
        plain_args, got_args = copy.deepcopy(args), copy.deepcopy(args)
        assert_close(compiled(*got_args), fn(*plain_args))
        assert_close(got_args, plain_args)


def _state(value):
    """Generators as their states (comparable), the rest as is."""
    if isinstance(value, np.random.Generator):
        return value.bit_generator.state
    if isinstance(value, (list, tuple)):
        return type(value)(_state(v) for v in value)
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    return value


def scheduled_text(report) -> str:
    text = str(report)
    assert "stream 1:" in text, text
    assert "runs scheduled" in text or "runs as" in text, text
    return text


def branches(x1, w1, x2, w2):
    y1 = np.maximum(x1 @ w1, 0.0)
    y2 = np.maximum(x2 @ w2, 0.0)
    return y1 + y2, y1.sum(), np.tanh(y2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_independent_branches(backend, monkeypatch, jitter):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((16, 16)) for _ in range(4)]
    report = run_both_forms(branches, args, backend, monkeypatch)
    text = scheduled_text(report)
    assert "side by side:" in text and "matmul" in text
    check_plain(branches, args, backend)


def shared_temporaries(x1, w1, x2, w2):
    t = x1 @ w1  # read by two ops that may run on different streams: never written into
    u = np.maximum(x2 @ w2, 0.0)  # x2 @ w2 read once: maximum may compute into its buffer
    a = np.tanh(t)
    b = t * 2.0
    return a, u + 1.0, b


def test_a_temporary_is_reused_only_where_one_op_reads_it(monkeypatch, jitter):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((16, 16)) for _ in range(4)]
    report = run_both_forms(shared_temporaries, args, "eager", monkeypatch, calls=5)
    source = report.source
    assert "out=matmul_1)" in source, source  # the maximum, into the product only it reads
    assert "out=matmul)" not in source, source  # tanh and the multiply both read t
    check_plain(shared_temporaries, args, "eager")


def views_and_updates(x, y, w, g):
    a = x[:, :3]  # a view of an input, read after the input is updated
    b = x.T * 2.0
    x[0] += 1.0
    c = a + 1.0
    w -= 0.1 * g  # updates of inputs, computed into them where the backend can
    y *= 2.0
    s = np.exp(-y).sum()
    return c, b, w.sum(), y + a.sum(), s


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_and_in_place_updates_keep_their_order(backend, monkeypatch, jitter):
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((5, 6)), rng.standard_normal(7), rng.standard_normal((4, 4)),
            rng.standard_normal((4, 4))]
    run_both_forms(views_and_updates, args, backend, monkeypatch)
    check_plain(views_and_updates, args, backend)


def draws(rng, x, y):
    a = rng.standard_normal(x.shape)
    b = np.tanh(y) * 3.0
    c = rng.uniform(size=y.shape)
    d = (x @ x.T).sum()
    e = rng.standard_normal(4)
    return a + x, b * c, d, e


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_draws_keep_program_order(backend, monkeypatch, jitter):
    args = [np.random.default_rng(5), np.ones((6, 3)), np.linspace(-1, 1, 9)]
    report = run_both_forms(draws, args, backend, monkeypatch, calls=4)
    scheduled_text(report)
    plain_args = copy.deepcopy(args)
    want = draws(*plain_args)
    npdynamo.reset()
    compiled = npdynamo.compile(draws, backend=backend)
    got_args = copy.deepcopy(args)
    assert_same_value(want, compiled(*got_args))
    assert_same_value(_state(plain_args), _state(got_args))


def adam(params, grads, ms, vs, t):
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    for k in params:
        ms[k] *= b1
        ms[k] += (1 - b1) * grads[k]
        vs[k] *= b2
        vs[k] += (1 - b2) * grads[k] * grads[k]
        params[k] -= lr * (ms[k] / (1 - b1**t)) / (np.sqrt(vs[k] / (1 - b2**t)) + eps)


def adam_state(seed=2):
    rng = np.random.default_rng(seed)
    shapes = {"w1": (20, 12), "b1": (12,), "w2": (12, 7), "b2": (7,), "w3": (30,), "s": (3, 3)}
    params = {k: rng.standard_normal(s) for k, s in shapes.items()}
    grads = {k: rng.standard_normal(s) for k, s in shapes.items()}
    zeros = lambda: {k: np.zeros(s) for k, s in shapes.items()}  # noqa: E731
    return [params, grads, zeros(), zeros(), 3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_adam_updates_of_six_arrays(backend, monkeypatch, jitter):
    report = run_both_forms(adam, adam_state(), backend, monkeypatch)
    scheduled_text(report)
    check_plain(adam, adam_state(), backend)


def mlp_step(params, x, y):
    loss, grads = value_and_grad(mlp_loss)(params, x, y)
    for k in params:
        params[k] -= 0.1 * grads[k]
    return loss


def mlp_params(seed, sizes=(10, 8, 4)):
    rng = np.random.default_rng(seed)
    return {"w1": rng.standard_normal(sizes[:2]), "b1": np.zeros(sizes[1]),
            "w2": rng.standard_normal(sizes[1:]), "b2": np.zeros(sizes[2])}


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_graph_of_an_mlp(backend, monkeypatch, jitter):
    rng = np.random.default_rng(3)
    args = [mlp_params(3), rng.standard_normal((6, 10)), rng.integers(0, 4, 6)]
    report = run_both_forms(mlp_step, args, backend, monkeypatch)
    scheduled_text(report)


def ensemble(models, x):
    return [np.tanh(x @ m["w1"] + m["b1"]) @ m["w2"] for m in models]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ensemble_of_four_models(backend, monkeypatch, jitter):
    rng = np.random.default_rng(4)
    args = [[mlp_params(i) for i in range(4)], rng.standard_normal((5, 10))]
    report = run_both_forms(ensemble, args, backend, monkeypatch)
    assert "stream 1:" in str(report)


def warns(x, y):
    a = np.log(x)  # divide by zero at 0
    b = np.sqrt(y) * 2.0  # invalid value for negatives
    return a + 1.0, b


def test_warnings_are_the_serial_ones_in_the_serial_order(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    x, y = np.array([0.0, 1.0, 2.0]), np.array([-1.0, 4.0, 9.0])
    # values, and the warnings in their order
    compiled = check_same_warnings(warns, x, y, graphs=1, breaks=0)
    with np.errstate(all="raise"), pytest.raises(FloatingPointError, match="divide by zero"):
        compiled(x, y)
    with np.errstate(all="ignore"):
        assert_same_value(warns(x, y), compiled(x, y))
    (entry,) = compiled_entries(compiled)
    assert "runs scheduled" in str(entry.report)
    # the two calls that warned were rerun serially; under errstate(raise) the serial form ran
    # at once, and under all="ignore" the streams ran as they were
    assert entry.report.reruns == [2]


def test_calls_from_two_threads_at_once(monkeypatch):
    """One scheduled call at a time: the other runs serially, and both are right."""
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    compiled = npdynamo.compile(branches)
    rng = np.random.default_rng(8)
    inputs = [[rng.standard_normal((40, 40)) for _ in range(4)] for _ in range(2)]
    wants = [branches(*a) for a in inputs]
    errors = []

    def work(k):
        try:
            for _ in range(30):
                assert_same_value(wants[k], compiled(*inputs[k]))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_the_tuner_times_serial_and_scheduled_and_says_which_it_kept(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "auto")
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((160, 160)) for _ in range(4)]
    compiled = npdynamo.compile(branches)
    want = branches(*args)
    for _ in range(40):
        assert_same_value(want, compiled(*args))
    (entry,) = compiled_entries(compiled)
    text = str(entry.report)
    assert "stream 0:" in text and "runs as " in text
    assert "serial" in text and "scheduled" in text  # both were timed


def test_case_a_on_numba_with_one_thread_offers_its_scheduled_form_to_the_tuner(monkeypatch):
    """benchmarks/schedule.py's case (a) on numba, BLAS and numba on one thread: the tuner times
    the scheduled form beside the serial ones (which it keeps is the machine's to say)."""
    from threadpoolctl import threadpool_limits

    from benchmarks import schedule

    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "auto")
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    rng = np.random.default_rng(15)
    args = [rng.standard_normal((256, 256)) for _ in range(4)]
    compiled = npdynamo.compile(schedule.branches, backend="numba")
    with threadpool_limits(1, user_api="blas"):
        for _ in range(80):
            got = compiled(*args)
    assert_close(got, schedule.branches(*args))
    (graph,) = npdynamo.inspect(compiled).graphs
    assert "numba scheduled" in graph.report.tuning and "runs as" in graph.report.tuning, (
        graph.report.tuning)
    assert "side by side: matmul | matmul_1" in str(graph.report)


def test_the_machine_check_times_both_branches_alone_and_side_by_side():
    """benchmarks/schedule.py's machine check (docs/scheduling.md, "Case (a) on numba"): each
    branch runs on its own thread side by side and both run on this one otherwise, and every
    figure it prints comes from both branches (no timing asserted: only that it measured)."""
    import threading

    from benchmarks import schedule

    rng = np.random.default_rng(5)
    a = [rng.standard_normal((64, 64)) for _ in range(2)]
    seen = []

    def branch(i):
        seen.append((i, threading.get_ident()))
        a[i] @ a[i]

    _, cpu_alone = schedule._branch_turns(branch, 2, side_by_side=False)
    assert seen == [(0, threading.get_ident())] * 2 + [(1, threading.get_ident())] * 2
    seen.clear()
    _, cpu_side = schedule._branch_turns(branch, 2, side_by_side=True)
    threads = {i: {t for j, t in seen if j == i} for i in (0, 1)}
    assert sorted(i for i, _ in seen) == [0, 0, 1, 1]
    assert all(len(t) == 1 and threading.get_ident() not in t for t in threads.values())
    assert threads[0] != threads[1]
    assert all(t > 0 for t in (*cpu_alone, *cpu_side))
    check = schedule.machine_check(turns=2, reps=1)
    assert check["turns"][0] <= check["ratio"] <= check["turns"][1]
    assert check["cpu_alone"] > 0 and check["cpu_side"] > 0


@pytest.mark.parametrize("schedule,tune,decision", [
    ("never", "1", None),  # not even planned: no schedule in the report
    ("always", "1", "runs scheduled (NPDYNAMO_SCHEDULE=always: not timed)"),
    ("auto", "0", "runs serially (tuning is off: NPDYNAMO_NUMBA_TUNE=0)"),
])
def test_the_knobs_docs_scheduling_lists(schedule, tune, decision, monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", schedule)
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", tune)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((160, 160)) for _ in range(4)]
    compiled = npdynamo.compile(branches)
    assert_same_value(branches(*args), compiled(*args))
    (entry,) = compiled_entries(compiled)
    if decision is None:
        assert entry.report is None
    else:
        assert entry.report.decision == decision


def test_blas_has_one_thread_while_the_streams_run_and_its_pool_back_after(monkeypatch):
    from npdynamo.backends.scheduler import threads

    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    events, real_limit, real_restore = [], threads.BLAS.limit_to_one, threads.BLAS.restore
    monkeypatch.setattr(threads.BLAS, "limit_to_one",
                        lambda: events.append("limit") or real_limit())
    monkeypatch.setattr(threads.BLAS, "restore",
                        lambda saved: events.append(("restore", len(saved))) or real_restore(saved))
    before = threads.BLAS.count()
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((64, 64)) for _ in range(4)]
    compiled = npdynamo.compile(branches)
    assert_same_value(branches(*args), compiled(*args))
    assert [e if e == "limit" else e[0] for e in events] == ["limit", "restore"]
    assert threads.BLAS.count() == before


def test_the_stream_count_is_the_cores_from_2_to_4_unless_set(monkeypatch):
    from npdynamo.backends.scheduler import threads

    monkeypatch.delenv("NPDYNAMO_SCHEDULE_STREAMS", raising=False)
    for cores, streams in ((1, 2), (2, 2), (3, 3), (8, 4), (None, 2)):
        monkeypatch.setattr(threads.os, "cpu_count", lambda cores=cores: cores)
        assert threads.stream_count() == streams
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 8)
    monkeypatch.setenv("NPDYNAMO_SCHEDULE_STREAMS", "6")
    assert threads.stream_count() == 6
    monkeypatch.setenv("NPDYNAMO_SCHEDULE_STREAMS", "1")  # fewer than 2: ignored
    assert threads.stream_count() == 4


def test_a_graph_with_nothing_to_run_side_by_side_is_left_serial(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "auto")

    def chain(x):
        return np.tanh(np.exp(x) + 1.0).sum()

    compiled = npdynamo.compile(chain)
    x = np.linspace(0, 1, 50)
    assert_same_value(chain(x), compiled(x))
    (entry,) = compiled_entries(compiled)
    assert entry.report is None


def test_numba_report_shows_the_schedule(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    rng = np.random.default_rng(10)
    args = [rng.standard_normal((8, 8)) for _ in range(4)]
    compiled = npdynamo.compile(branches, backend="numba")
    assert_close(compiled(*args), branches(*args))
    (entry,) = compiled_entries(compiled)
    text = str(entry.report)
    assert "numba backend, scheduled form: 2 streams" in text, text
    assert "runs scheduled" in text


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@settings(max_examples=40, **SETTINGS)
@given(random_graphs(max_steps=12))
def test_random_graphs_scheduled_are_bitwise_serial_on_both_backends(case):
    """Elementwise chains and reductions taking any earlier value (so with independent parts),
    on nan/inf/-0.0 and integer extremes, under ``all="ignore"`` (no step raises: the streams
    really run) with random pauses before each step."""
    rng = random.Random(11)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "STEP_HOOK", lambda: time.sleep(rng.random() * 1e-4))
        mp.setenv("NPDYNAMO_NUMBA_TUNE", "0")
        mp.setenv("NPDYNAMO_NUMBA_PARALLEL", "never")
        gm = GraphModule(case.graph)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = gm.forward(*copy.deepcopy(case.inputs))
            mp.setenv("NPDYNAMO_SCHEDULE", "always")
            eager_run = tuned_eager(case.graph, gm.forward, may_alias(case.graph))
            numba_run = numba_backend(gm, copy.deepcopy(case.inputs))
            mp.setenv("NPDYNAMO_SCHEDULE", "never")
            numba_serial = numba_backend(gm, copy.deepcopy(case.inputs))
            for _ in range(2):
                assert_same_value(want, eager_run(*copy.deepcopy(case.inputs)))
                assert_same_value(numba_serial(*copy.deepcopy(case.inputs)),
                                  numba_run(*copy.deepcopy(case.inputs)))
        for run in (eager_run, numba_run):
            report = run.report
            schedule = getattr(report, "schedule", report)
            if schedule is not None and getattr(schedule, "run", None) is not None:
                assert schedule.reruns == [0]


def _step(index, uses=(), defines=None, **kw):
    node = Node(Graph(), f"v{index}", "call_function", None, (), {})
    return Step(index, f"s{index}", [], (node,) if defines is None else defines, tuple(uses),
                **kw)


def test_dependencies_order_writes_after_readers_of_shared_memory_and_raising_steps():
    graph = Graph()
    x = graph.placeholder("x", ArrayMeta((3,), np.dtype("float64")))
    view = Node(graph, "view", "call_function", None, (x,), {})
    read_view = _step(0, uses=(view,), may_raise=False)
    raises = _step(1, may_raise=True)
    draw_a = _step(2, impure=True, may_raise=False)
    independent = _step(3, may_raise=False)
    draw_b = _step(4, impure=True, may_raise=False)
    write_x = _step(5, uses=(), writes=(x,), may_raise=False)
    steps = [read_view, raises, draw_a, independent, draw_b, write_x]
    aliases = {x: frozenset({x}), view: frozenset({x})}
    preds = dependencies(steps, aliases)
    assert preds[3] == set()  # nothing orders an independent step
    assert preds[4] == {2}  # draws keep their program order
    assert preds[5] == {0, 1}  # after the view's reader and the step that may raise
    schedule = assign_streams(steps, preds, 2, handover=0.0)
    assert len(schedule.streams) == 2
    for members in schedule.streams:
        assert members == sorted(members)  # program order inside a stream: no deadlock


def test_gil_held_fraction_of_a_call_that_releases_the_gil_is_small():
    """(Only what holds on a busy machine too: a call that sleeps lets the counter run all
    along; a Python loop's fraction is a fraction.)"""
    def python_loop():
        total = 0
        for i in range(20_000):
            total += i
        return total

    assert gil_held_fraction(time.sleep, 0.002, seconds=0.2) < 0.5
    assert 0.0 <= gil_held_fraction(python_loop, seconds=0.1) <= 1.0


class _Interrupt(BaseException):
    """Stands for KeyboardInterrupt or SystemExit (not an ``Exception``)."""


def test_an_interrupt_in_a_stream_is_raised_not_rerun(monkeypatch):
    def interrupt():
        raise _Interrupt

    monkeypatch.setattr(runner, "STEP_HOOK", interrupt)
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    rng = np.random.default_rng(12)
    args = [rng.standard_normal((4, 4)) for _ in range(4)]
    compiled = npdynamo.compile(branches)
    with pytest.raises(_Interrupt):
        compiled(*args)


def test_explain_shows_the_streams_and_what_runs_side_by_side(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    rng = np.random.default_rng(13)
    args = [rng.standard_normal((8, 8)) for _ in range(4)]
    for backend in BACKENDS:
        report = npdynamo.explain(branches, backend=backend)(*args)
        short = str(report)
        assert "Schedule of graph 1: 2 streams" in short, short
        assert "side by side: matmul | matmul_1" in short
        assert "stream 1: matmul_1" in report.verbose()


def test_explain_on_numba_with_tiers_on_reports_the_compiled_graph_and_its_schedule(monkeypatch):
    """With tiers on (a user's default), explain still shows the kernels, the schedule and the
    tuner's line, not the eager tier that runs while kernels compile in the background."""
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    rng = np.random.default_rng(14)
    args = [rng.standard_normal((8, 8)) for _ in range(4)]
    report = npdynamo.explain(branches, backend="numba")(*args)
    full = report.verbose()
    assert "eager tier" not in full and "0 kernel(s)" not in full, full
    assert "side by side: matmul | matmul_1" in str(report)
    assert "runs scheduled" in full
    assert npdynamo.config.tiered is True  # put back


def test_ops_in_a_users_errstate_block_stay_serial(monkeypatch):
    """Their own error state (here: underflow warns) is the serial form's to apply."""
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")

    def blocks(x, y):
        with np.errstate(under="warn"):
            a = x * 1e-300
        return a * 1e-300, np.exp(y)

    check_same_warnings(blocks, np.full(3, 1e-10), np.linspace(0, 1, 3), calls=1, graphs=1,
                        breaks=0)


@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 8.0]),
                          st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0]), st.integers(0, 2)),
                max_size=12))
@settings(max_examples=300, deadline=None)
def test_side_by_side_pairs_are_every_overlapping_pair_in_step_order(runs):
    """The sweep in ``Schedule.side_by_side`` finds what comparing all pairs finds."""
    schedule = Schedule.__new__(Schedule)
    schedule.steps = [types.SimpleNamespace(label=f"s{i}") for i in range(len(runs))]
    schedule.start = [start for start, _, _ in runs]
    schedule.finish = [start + cost for start, cost, _ in runs]
    schedule.stream_of = [stream for _, _, stream in runs]
    expected = [
        (f"s{a}", f"s{b}")
        for a in range(len(runs)) for b in range(a + 1, len(runs))
        if schedule.stream_of[a] != schedule.stream_of[b]
        and schedule.start[a] < schedule.finish[b] and schedule.start[b] < schedule.finish[a]
    ]
    assert schedule.side_by_side() == expected


def test_case_a_on_numba_runs_both_maximums_in_one_kernel_after_the_hand_over(monkeypatch):
    """docs/scheduling.md: fusion joins the two branches' ``maximum`` into one kernel, so the
    scheduled form runs the matmuls side by side and that kernel on stream 0 after them; its
    results are the serial form's, bit for bit."""
    from benchmarks import schedule

    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    monkeypatch.setenv("NPDYNAMO_NUMBA_PARALLEL", "never")
    rng = np.random.default_rng(28)
    args = [rng.standard_normal((96, 96)) for _ in range(4)]
    compiled = npdynamo.compile(schedule.branches, backend="numba")
    for _ in range(3):
        got = compiled(*args)
        npdynamo.synchronize()
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "never")
    serial = npdynamo.compile(schedule._copy(schedule.branches, "serial"), backend="numba")
    serial(*args)
    npdynamo.synchronize()
    assert_same_value(serial(*args), got)
    (graph,) = npdynamo.inspect(compiled).graphs
    text = str(graph.report)
    assert "runs scheduled" in text, text
    for line in ("stream 0: matmul, kernel0(maximum, maximum)", "stream 1: matmul_1",
                 "side by side: matmul | matmul_1"):
        assert line in text, text
