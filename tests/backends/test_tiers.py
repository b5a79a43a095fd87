"""The numba backend's tiers: eager from the first call, kernels compiled by worker processes.

Each test gets an empty kernel cache (a warm one needs no worker) and tiers on. Results are
compared with plain NumPy on both tiers; the process tests (exit, Ctrl-C, fork) run a script in
a subprocess and check that no worker process outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import tiers
from npdynamo.backends.numba import diskcache, front
from npdynamo.backends.numba.backend import numba_backend
from npdynamo.backends.numba.diskcache import KernelCacheWarning
from npdynamo.backends.numba.tiering import CompileWorkerWarning

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _tiered(monkeypatch, tmp_path):
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setattr(diskcache, "_loaded", {})  # this test's kernels come from its cache
    yield
    npdynamo.synchronize(timeout=120)


def step(a, b):
    c = np.exp(a) * b + 1.0
    return c.sum(axis=-1), np.tanh(c @ b.T) - 1.0


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.random((30, 20)), rng.random((30, 20))


def spied():
    """``step`` compiled on the numba backend, and the list of what the backend first ran."""
    made = []

    def backend(gm, example_inputs):
        compiled = numba_backend(gm, example_inputs)
        made.append(compiled.run)  # the ``Tiered`` while the kernels compile
        return compiled

    return npdynamo.compile(step, backend=backend), made


def check(fn, seed: int = 0) -> None:
    a, b = inputs(seed)
    got, want = fn(a.copy(), b.copy()), step(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12)


def test_eager_tier_first_then_the_loaded_kernels():
    fn, made = spied()
    before = diskcache.kernel_loads()
    check(fn)
    (tiered,) = made
    assert isinstance(tiered, tiers.Tiered)
    report = tiered.compiled.report
    assert "eager tier" in report.tier
    # the workers take seconds (numba's import alone): a zero timeout passes first
    assert npdynamo.synchronize(timeout=0.0) is False
    check(fn, 1)
    assert npdynamo.synchronize(timeout=120)
    assert report.kernels >= 2
    assert tiered.switched and tiers.pending() == 0
    check(fn, 2)
    after = diskcache.kernel_loads()
    # this process loaded the worker's machine code from the disk cache, compiled nothing
    assert after["from_disk"] > before["from_disk"]
    assert after["compiled"] == before["compiled"]
    assert "the compiled tier took over at call" in report.tier
    assert "tiers: the compiled tier took over" in str(report)
    assert not report.fell_back


def test_the_tuner_starts_from_the_eager_tiers_calls(monkeypatch):
    """After the switch the tuner does not time the eager graph again when its tier's calls
    showed it far behind (here: as if each took 1000 s): no call runs it, and the report says
    where its time came from. The time it gets is the tier's fastest call."""
    from dataclasses import replace

    from npdynamo.backends import tuning

    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "1")
    monkeypatch.setattr(npdynamo.config, "plain_while_compiling", False)
    offered, eager_runs = [], []
    real = tuning.fastest_of

    def spy(candidates, record, report=None, measured=None):
        def counted(*inputs, _run=candidates[0].run):
            eager_runs.append(1)
            return _run(*inputs)

        offered.append(dict(measured or {}))
        candidates = [replace(c, run=counted) if c.label == "eager" else c for c in candidates]
        return real(candidates, record, report=report, measured=measured)

    monkeypatch.setattr(tuning, "fastest_of", spy)
    fn, made = spied()
    for seed in range(3):  # the workers take seconds: these run on the eager tier
        check(fn, seed)
    (tiered,) = made
    assert tiered.eager_calls == tiered.eager_timed == 3
    assert 0 < tiered.eager_best() == tiered.eager_fastest
    tiered.eager_fastest = 1e3
    assert npdynamo.synchronize(timeout=120)
    assert offered == [{"eager": 1e3}]
    for seed in range(40):
        check(fn, seed)
    assert eager_runs == []
    report = tiered.compiled.report
    assert report.tuning.startswith("runs as numba"), report.tuning
    assert "eager 1000000.000 ms (its calls while compiling)" in report.tuning


def test_the_eager_tier_gives_no_time_before_two_calls():
    fn, made = spied()
    check(fn)
    assert made[0].eager_best() is None  # the first call pays for what runs for the first time


def test_the_switch_under_threads():
    fn, made = spied()
    check(fn)
    errors = []

    def calls(seed):
        try:
            for k in range(40):
                check(fn, seed * 100 + k)
                if k == 20 and seed == 0:
                    npdynamo.synchronize(timeout=120)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=calls, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert made[0].switched
    check(fn)


def test_a_worker_killed_mid_compile(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "compile_workers", 1)
    fn, made = spied()
    check(fn)
    for _ in range(1200):  # sent at once, before this process builds the program
        if made[0].job.jobs is not None:
            break
        time.sleep(0.05)
    (job,) = made[0].job.jobs.jobs
    for _ in range(1200):
        if job.worker_pid is not None or job.done():
            break
        time.sleep(0.05)
    finished_first = job.done()  # a kernel already on disk: the worker can beat the kill
    os.kill(job.worker_pid, signal.SIGKILL)
    if finished_first:  # nothing was lost: no warning, and the compiled tier takes over
        assert npdynamo.synchronize(timeout=120)
    else:
        with pytest.warns(CompileWorkerWarning, match="died"):
            assert npdynamo.synchronize(timeout=120)
    check(fn, 3)
    assert made[0].switched and not made[0].compiled.report.fell_back


def test_an_error_in_a_worker(monkeypatch):
    from npdynamo.backends.numba import jobs

    monkeypatch.setattr(jobs, "dumps", lambda *args: b"not a pickle")
    fn, made = spied()
    check(fn)
    with pytest.warns(CompileWorkerWarning, match="UnpicklingError"):
        assert npdynamo.synchronize(timeout=120)
    check(fn, 4)  # compiled in this process instead
    assert made[0].switched and not made[0].compiled.report.fell_back


def test_a_damaged_cache_file_written_by_a_worker(monkeypatch, tmp_path):
    from npdynamo.backends.numba import workers

    damaged = []
    finish = workers.CompileJob._finish

    def damage_then_finish(job, status, result):
        # the worker's files are garbage by the time its job ends (before this process,
        # which loads a part's kernels as soon as it ends, can read them)
        if status == workers.DONE:
            for f in (tmp_path / "cache" / "kernels" / "__pycache__").glob("*.nbc"):
                f.write_bytes(b"garbage")
                damaged.append(f)
        finish(job, status, result)

    monkeypatch.setattr(workers.CompileJob, "_finish", damage_then_finish)
    fn, made = spied()
    with pytest.warns(KernelCacheWarning, match="unreadable"):
        check(fn)
        assert npdynamo.synchronize(timeout=120)
    assert damaged
    check(fn, 5)
    assert made[0].switched and not made[0].compiled.report.fell_back


def test_the_pool_runs_jobs_of_different_graphs():
    @npdynamo.compile(backend="numba")
    def other(x):
        return np.sin(x) * 2.0 + x

    fn, _ = spied()
    check(fn)
    x = np.linspace(0.0, 1.0, 50)
    np.testing.assert_allclose(other(x), np.sin(x) * 2.0 + x, rtol=1e-6)
    assert tiers.pending() == 2
    assert npdynamo.synchronize(timeout=120)
    np.testing.assert_allclose(other(x + 1), np.sin(x + 1) * 2.0 + x + 1, rtol=1e-6)


def test_the_switch_interval_is_short_while_a_graph_prepares_and_put_back_after(monkeypatch):
    # (a caller's NumPy calls give the GIL up inside each large operation: at the default 5 ms
    # each one waited that long to get it back from the preparing thread)
    seen = []
    send = front.jobs.send

    def spying(*args):
        seen.append(sys.getswitchinterval())
        return send(*args)

    monkeypatch.setattr(front.jobs, "send", spying)
    before = sys.getswitchinterval()
    fn, _ = spied()
    check(fn)
    assert npdynamo.synchronize(timeout=120)
    assert seen == [front.SWITCH_INTERVAL_S] and front.SWITCH_INTERVAL_S < before
    assert sys.getswitchinterval() == before and front._working == 0


def test_a_switch_interval_set_meanwhile_is_kept():
    before = sys.getswitchinterval()
    try:
        front._switching_often(True)
        front._switching_often(True)  # a second graph prepares
        assert sys.getswitchinterval() == front.SWITCH_INTERVAL_S
        front._switching_often(False)
        assert sys.getswitchinterval() == front.SWITCH_INTERVAL_S  # one still works
        sys.setswitchinterval(0.002)  # the user's own choice
        front._switching_often(False)
        assert sys.getswitchinterval() == 0.002
        front._switching_often(True)
        front._switch_back_in_child()  # (a fork: the thread stayed in the parent)
        assert sys.getswitchinterval() == 0.002 and front._working == 0
    finally:
        sys.setswitchinterval(before)


def test_tiers_off_compile_at_the_first_call(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "tiered", False)
    fn, made = spied()
    check(fn)
    assert not isinstance(made[0], tiers.Tiered)
    assert tiers.pending() == 0


def test_no_tier_where_no_worker_can_run(monkeypatch):
    from npdynamo.backends.numba import workers

    assert workers.available() is (os.name == "posix")
    monkeypatch.setattr(workers, "available", lambda: False)  # as on a system that is not POSIX
    fn, made = spied()
    check(fn)
    assert not isinstance(made[0], tiers.Tiered)


def test_no_writable_cache_the_switch_compiles_in_this_process(monkeypatch, tmp_path):
    from npdynamo.backends.numba import jobs

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "a-file"))  # cannot be a folder
    submitted = []
    monkeypatch.setattr(jobs, "submit", lambda payloads: submitted.append(payloads))
    fn, made = spied()
    check(fn)
    assert isinstance(made[0], tiers.Tiered)  # the first call on the eager tier
    assert npdynamo.synchronize(timeout=120)
    check(fn, seed=1)  # compiled here, by the switch
    assert submitted == [] and tiers.pending() == 0
    (graph,) = npdynamo.inspect(fn).graphs
    assert "took over" in graph.report.tier, graph.report.tier


# -- processes: nothing outlives the caller -----------------------------------------------------
SCRIPT = """
import os, sys, time
import numpy as np
import npdynamo
from npdynamo.backends.numba import workers

@npdynamo.compile(backend="numba")
def step(a, b):
    c = np.exp(a) * b + 1.0
    return c.sum(axis=-1), np.tanh(c @ b.T) - 1.0

a, b = np.ones((30, 20)), np.ones((30, 20))
want = [w.copy() for w in (np.exp(a) * b + 1.0,)]
step(a, b)
for _ in range(600):
    if workers.pool().pids():
        break
    time.sleep(0.05)
print("PIDS", *workers.pool().pids(), flush=True)
"""


def _run(tail: str, tmp_path, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, NPDYNAMO_TIERED="1", NPDYNAMO_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT), NPDYNAMO_PROGRESS="0")
    # (-X faulthandler: a child that hangs is sent SIGABRT and prints every thread's stack)
    return subprocess.Popen([sys.executable, "-X", "faulthandler", "-c",
                             SCRIPT + textwrap.dedent(tail)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _pids(line: str) -> list[int]:
    assert line.startswith("PIDS"), line
    pids = [int(p) for p in line.split()[1:]]
    assert pids
    return pids


def _communicate(proc: subprocess.Popen, timeout: float) -> str:
    """The child's stderr once it has exited; if it has not after ``timeout``, the test fails
    with the stacks of all its threads (one such hang at exit, under a load of 17, stop 38)."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        pytest.fail(f"still running {timeout} s later; its threads:\n{proc.communicate()[1]}")


def _gone(pids: list[int]) -> bool:
    for _ in range(200):  # they are killed at once; reaping may take a moment
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_interpreter_exit_with_compiles_pending(tmp_path):
    proc = _run("", tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert _gone(_pids(out.splitlines()[0]))


def test_ctrl_c_with_compiles_pending(tmp_path):
    # A job started in the background by a non-interactive shell (as CI runs the suite) ignores
    # SIGINT, and a Python started with SIGINT ignored keeps ignoring it: the child sets
    # Python's own handler, as a terminal's Python has it
    proc = _run("import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                "print('SLEEP', flush=True); time.sleep(120)", tmp_path,
                start_new_session=True)
    pids = _pids(proc.stdout.readline())
    assert proc.stdout.readline().startswith("SLEEP")
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    err = _communicate(proc, 120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert _gone(pids)


EXIT_DURING_A_STEP = """
import threading, time
from npdynamo.backends.numba import front

def step():  # a preparing thread's import, build or load: inside numba, the guard held
    with front.numba_step():
        print("STEP", flush=True)
        time.sleep(1.0)
        print("STEP DONE", flush=True)
    try:
        with front.numba_step():  # the exit has begun: no step begins
            print("ANOTHER STEP", flush=True)
    except front.Exiting:
        print("REFUSED", flush=True)

threading.Thread(target=step, daemon=True).start()
time.sleep(0.2)
raise KeyboardInterrupt
"""


def test_the_exit_waits_for_a_preparing_step_and_lets_none_begin(tmp_path):
    """A preparing thread is a daemon: the interpreter's exit (here a Ctrl-C's) lets it end
    the numba step it is in (``front._at_exit``), where finalization would have stopped it
    inside numba, then holds the guard so that it begins none."""
    proc = subprocess.run([sys.executable, "-c", EXIT_DURING_A_STEP], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr
    # the next step waits on the guard the exit holds, or finds the exit begun: never runs
    assert proc.stdout.split()[:3] == ["STEP", "STEP", "DONE"], proc.stdout
    assert "ANOTHER" not in proc.stdout, proc.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)")
def test_workers_run_python_c_at_a_lower_priority_and_die_with_a_killed_parent(tmp_path):
    proc = _run("print('SLEEP', flush=True); time.sleep(120)", tmp_path)
    pids = _pids(proc.stdout.readline())
    assert proc.stdout.readline().startswith("SLEEP")
    for pid in pids:  # a plain subprocess: the user's script is never imported in a worker
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[1] == b"-c"
        for _ in range(1200):  # the worker lowers its priority as it starts
            if os.getpriority(os.PRIO_PROCESS, pid) - os.getpriority(os.PRIO_PROCESS, proc.pid) \
                    == 5:
                break
            time.sleep(0.05)
        assert os.getpriority(os.PRIO_PROCESS, pid) - os.getpriority(os.PRIO_PROCESS,
                                                                     proc.pid) == 5
    proc.kill()  # SIGKILL: no atexit, no cleanup in the parent
    proc.communicate(timeout=60)
    assert _gone(pids)


def test_fork_after_the_pool_started(tmp_path):
    proc = _run("""
        pid = os.fork()
        if pid == 0:
            got = step(a, b)
            ok = npdynamo.synchronize(timeout=120)
            got = step(a, b)
            print("CHILD", ok, np.allclose(got[0], want[0].sum(axis=-1)), flush=True)
            print("CHILDPIDS", *workers.pool().pids(), flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        ok = npdynamo.synchronize(timeout=120)
        print("PARENT", os.waitstatus_to_exitcode(status), ok, flush=True)
    """, tmp_path)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    pids = _pids(lines[0])
    assert "CHILD True True" in lines
    assert "PARENT 0 True" in lines
    child_pids = next(line for line in lines if line.startswith("CHILDPIDS")).split()[1:]
    assert not set(map(int, child_pids)) & set(pids)  # the child's workers are its own
    assert _gone(pids + [int(p) for p in child_pids])


EARLY = """
import sys, time
import numpy as np
import npdynamo
from npdynamo.backends.numba import workers

npdynamo.config.compile_workers = 2
started = []
serve = workers.Pool._serve

def counted(pool):  # the pool's thread of each worker it starts
    started.append(1)
    return serve(pool)

workers.Pool._serve = counted

@npdynamo.compile(backend="numba")
def same(x):
    return x  # no graph: nothing for a worker to compile

@npdynamo.compile(backend="numba")
def step(a, b):
    c = np.exp(a) * b + 1.0
    return c.sum(axis=-1), np.tanh(c @ b.T) - 1.0

for _ in range(50):
    same(np.ones(3))
time.sleep(0.5)  # (a worker started in the background would have shown by now)
print("NOGRAPH", len(started), len(workers.pool().pids()), "numba" in sys.modules, flush=True)
print("GRAPHS", len(npdynamo.inspect(same).graphs), flush=True)
step(np.ones((30, 20)), np.ones((30, 20)))
for _ in range(1200):  # started in the background: they come up while the caller goes on
    if len(workers.pool().pids()) == 2:
        break
    time.sleep(0.05)
print("PIDS", *workers.pool().pids(), flush=True)
print("STARTED", len(started), flush=True)
"""


def test_workers_start_with_the_first_graph_never_for_a_function_without_one(tmp_path):
    env = dict(os.environ, NPDYNAMO_TIERED="1", NPDYNAMO_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT), NPDYNAMO_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-c", EARLY], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # 50 calls of a function with no graph: no worker, not even numba imported
    assert lines[0] == "NOGRAPH 0 0 False", lines
    assert lines[1] == "GRAPHS 0", lines
    pids = _pids(lines[2])
    assert len(pids) == 2, lines  # the graph's two parts, one worker each
    assert lines[3] == "STARTED 2", lines
    assert _gone(pids)  # and they die at exit


def _counting_pool(monkeypatch) -> dict[str, int]:
    """Count the pool's ``submit`` and ``prestart`` calls (both still run)."""
    from npdynamo.backends.numba import workers

    counts = {"submit": 0, "prestart": 0}
    for name in counts:
        real = getattr(workers.Pool, name)

        def counted(self, *args, _name=name, _real=real):
            counts[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(workers.Pool, name, counted)
    return counts


def identity(x):
    return x


def test_a_function_with_no_graph_never_asks_the_pool(monkeypatch):
    counts = _counting_pool(monkeypatch)
    same = npdynamo.compile(identity, backend="numba")
    x = np.ones(3)
    for _ in range(30):
        assert same(x) is x
    assert npdynamo.inspect(same).graphs == []
    assert counts == {"submit": 0, "prestart": 0}
    fn = npdynamo.compile(step, backend="numba")  # a graph: its parts go to the pool
    check(fn)
    assert npdynamo.synchronize(timeout=120)  # (the preparing thread submits them)
    assert counts["submit"] >= 1 and counts["prestart"] == 0


def test_no_worker_with_tiers_off(monkeypatch):
    counts = _counting_pool(monkeypatch)
    monkeypatch.setattr(npdynamo.config, "tiered", False)
    check(npdynamo.compile(step, backend="numba"))
    check(npdynamo.compile(step, backend="eager"))
    assert counts == {"submit": 0, "prestart": 0}
