"""One graph's independent kernels compile side by side: the tiered numba backend sends them
at capture in parts, one compile worker each (``jobs.send``, ``backend.kernel_shares``), and
loads each part's kernels as it ends. The workers' job logs show who compiled what."""

from __future__ import annotations

import time

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import tiers
from npdynamo.backends.numba import diskcache
from npdynamo.backends.numba.backend import kernel_shares, loop_records, numba_backend


@pytest.fixture(autouse=True)
def _tiered(monkeypatch, tmp_path):
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(npdynamo.config, "tiered", True)
    monkeypatch.setattr(npdynamo.config, "compile_workers", 2)
    monkeypatch.setattr(diskcache, "_loaded", {})  # this test's kernels come from its cache
    yield
    npdynamo.synchronize(timeout=300)


def four_kernels(a, w):
    # matmuls between the elementwise steps: four kernels, each of other ops (none shared)
    b = np.tanh(a * 0.5) @ w
    c = np.exp(-b * b) @ w
    d = np.sqrt(np.abs(c) + 1.0) @ w
    return np.sin(d) * np.cos(d) + 2.0 * d


def test_one_graphs_kernels_compile_in_two_workers_at_once():
    made = []

    def backend(gm, example_inputs):
        compiled = numba_backend(gm, example_inputs)
        made.append(compiled.run)  # the ``Tiered`` while the kernels compile
        return compiled

    fn = npdynamo.compile(four_kernels, backend=backend)
    rng = np.random.default_rng(0)
    a, w = rng.random((20, 20)), rng.random((20, 20)) / 20
    np.testing.assert_allclose(fn(a, w), four_kernels(a, w), rtol=1e-9)
    (tiered,) = made
    assert isinstance(tiered, tiers.Tiered)
    assert tiered.job.prepared.wait(300)
    jobs = tiered.job.jobs.jobs
    assert len(jobs) == 2  # two parts of two kernels
    before = diskcache.kernel_loads()
    assert npdynamo.synchronize(timeout=300)
    assert all(job.status == "done" for job in jobs)
    assert len({job.worker_pid for job in jobs}) == 2  # each part on a worker of its own
    assert sum(job.kernels[1] for job in jobs) == tiered.compiled.report.kernels == 4
    np.testing.assert_allclose(fn(a + 1, w), four_kernels(a + 1, w), rtol=1e-9)
    assert tiered.switched
    assert diskcache.kernel_loads()["compiled"] == before["compiled"]  # all loaded from disk


def test_a_groups_serial_and_parallel_versions_share_a_part():
    names = ["_kernel0_parallel", "_kernel0", "_kernel1_parallel", "_kernel1", "_kernel2",
             "_kernel3_parallel", "_kernel3"]
    share = kernel_shares(names, 2)
    assert share == {"_kernel0_parallel": 0, "_kernel0": 0, "_kernel1_parallel": 1,
                     "_kernel1": 1, "_kernel2": 0, "_kernel3_parallel": 1, "_kernel3": 1}
    assert set(kernel_shares(names, 3).values()) == {0, 1, 2}


def _tiered_run(fn, *args):
    """``fn`` compiled on the tiered numba backend, run once; its ``Tiered`` and result."""
    made = []

    def backend(gm, example_inputs):
        compiled = numba_backend(gm, example_inputs)
        made.append(compiled.run)
        return compiled

    compiled = npdynamo.compile(fn, backend=backend)
    got = compiled(*args)
    (tiered,) = made
    assert isinstance(tiered, tiers.Tiered)
    return compiled, tiered, got


def test_the_job_logs_show_each_worker_compiled_its_own_kernels():
    rng = np.random.default_rng(1)
    a, w = rng.random((20, 20)), rng.random((20, 20)) / 20
    fn, tiered, _ = _tiered_run(four_kernels, a, w)
    assert npdynamo.synchronize(timeout=300)
    jobs = tiered.job.jobs.jobs
    answers = [job.result for job in jobs]
    assert [job.status for job in jobs] == ["done", "done"]
    assert sorted(answer["part"] for answer in answers) == [(0, 2), (1, 2)]
    assert len({answer["pid"] for answer in answers}) == 2  # both workers had work
    compiled = [set(answer["compiled"]) for answer in answers]
    assert all(compiled) and not compiled[0] & compiled[1]  # separate kernels, none twice
    names = tiered.compiled.report.kernels
    assert len(compiled[0] | compiled[1]) == names == 4
    for answer in answers:  # each compiled kernel is reported with what it was compiled for
        assert set(answer["signatures"]) == set(answer["compiled"])
        events = [what for _, what in answer["log"]]
        done = next(e for e in events if e.startswith("job done (cpu "))
        assert events.index("job received") < events.index("program built (4 kernels)") < \
            events.index(done)
    np.testing.assert_allclose(fn(a - 1, w), four_kernels(a - 1, w), rtol=1e-9)


def test_the_graph_goes_to_the_workers_before_numba_is_imported_here(monkeypatch):
    from npdynamo.backends.numba import front

    # as in a program's first graph (another test may have imported the numba side here)
    monkeypatch.setattr(front, "numba_side_imported", lambda: False)
    rng = np.random.default_rng(2)
    a, w = rng.random((20, 20)), rng.random((20, 20)) / 20
    fn, tiered, got = _tiered_run(four_kernels, a, w)
    np.testing.assert_allclose(got, four_kernels(a, w), rtol=1e-9)
    assert npdynamo.synchronize(timeout=300)
    timeline = tiered.compiled.report.timeline
    mine = [what for _, where, what in timeline if where == "caller"]
    # (this process imports numba once a worker has: its import would slow the calls meanwhile)
    assert mine[:5] == ["captured", "sent to the compile workers (2 parts)",
                        "a compile worker has imported numba", "numba imported",
                        "program built (4 kernels)"]
    ready = next(t for t, where, what in timeline if what == "a compile worker has imported numba")
    imports = [t for t, where, what in timeline  # (a worker's first job logs its start)
               if where.startswith("worker") and what == "numba imported"]
    assert all(t <= ready for t in imports[:1])
    assert mine[-1] == "switched to the compiled tier"
    # each part's kernels were loaded here before the switch, so it loaded none itself
    assert {"kernels of part 1/2 loaded", "kernels of part 2/2 loaded"} <= set(mine)
    workers_seen = {where for _, where, _ in timeline if where.startswith("worker")}
    assert len(workers_seen) == 2
    times = [t for t, _, _ in timeline]
    assert times == sorted(times)
    before = diskcache.kernel_loads()
    np.testing.assert_allclose(fn(a + 2, w), four_kernels(a + 2, w), rtol=1e-9)
    assert diskcache.kernel_loads() == before  # nothing compiled or loaded at the switch


def stencil(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_a_loop_program_is_loaded_before_the_switch():
    """The loop program a worker compiled is loaded with the kernels, off the calls' thread:
    the switch neither compiles nor loads it (it took 0.27 s of the caller's wave call)."""
    u = np.random.default_rng(3).random(50)
    fn, tiered, got = _tiered_run(stencil, u.copy(), 20)
    np.testing.assert_allclose(got, stencil(u.copy(), 20), rtol=1e-12)
    assert tiered.job.wait(300)  # the job ended and its answer was loaded: no switch yet
    (record,) = loop_records(tiered.compiled.report)
    assert not tiered.switched and record.dispatcher.overloads
    mine = [what for _, what in tiered.job.events]
    assert "kernels of part 1/1 loaded" in mine
    loaded = dict(record.dispatcher.overloads)
    np.testing.assert_allclose(fn(u.copy(), 20), stencil(u.copy(), 20), rtol=1e-12)
    assert tiered.switched and record.compiled and record.runs >= 1
    assert dict(record.dispatcher.overloads) == loaded  # nothing compiled at the switch


def one_kernel(x):
    return np.cos(x) * 3.0 + x


def test_a_part_with_no_kernel_compiles_nothing():
    x = np.linspace(0.0, 1.0, 64)
    fn, tiered, got = _tiered_run(one_kernel, x)
    np.testing.assert_allclose(got, one_kernel(x), rtol=1e-12)
    assert npdynamo.synchronize(timeout=300)
    jobs = tiered.job.jobs.jobs
    assert len(jobs) == 2  # sent before the kernels were known
    # the second part was withdrawn (a worker that had taken it skipped it), unless a warm
    # worker had already built the program and compiled nothing
    second = jobs[1]
    assert second.status == "withdrawn" or (second.status == "done" and
                                            second.result["compiled"] == [])
    assert jobs[0].status == "done" and len(jobs[0].result["compiled"]) == 1
    np.testing.assert_allclose(fn(x + 1), one_kernel(x + 1), rtol=1e-12)


def test_kernels_on_disk_withdraw_the_jobs():
    x = np.linspace(0.0, 1.0, 64)
    _tiered_run(one_kernel, x)
    assert npdynamo.synchronize(timeout=300)

    def same_kernel(y):  # another function, the same kernel source: on disk now
        return np.cos(y) * 3.0 + y

    fn, tiered, got = _tiered_run(same_kernel, x)
    assert npdynamo.synchronize(timeout=300)
    events = [what for _, where, what in tiered.compiled.report.timeline if where == "caller"]
    assert "jobs withdrawn: kernels on disk" in events
    # numba imported here by the first graph: the second builds without waiting for a worker
    assert "a compile worker has imported numba" not in events
    np.testing.assert_allclose(fn(x + 1), one_kernel(x + 1), rtol=1e-12)


def zeros_only(x):
    return np.zeros(x.shape[0], dtype=bool)  # no kernel (check_mask's graph before its loop)


def test_a_graph_with_nothing_to_compile_waits_for_no_worker():
    x = np.linspace(0.0, 1.0, 64)
    fn, tiered, got = _tiered_run(zeros_only, x)
    assert tiered.job.prepared.wait(300)
    # withdrawn once the build found no kernel, taken by a worker or not: nobody waits for
    # them (a warm worker may have finished one first: it compiled nothing)
    assert tiered.job.done()
    assert {job.status for job in tiered.job.jobs.jobs} <= {"withdrawn", "done"}
    assert all(job.result["compiled"] == [] for job in tiered.job.jobs.jobs
               if job.status == "done")
    assert not fn(x).any() and tiered.switched


def test_a_job_a_starting_worker_has_taken_is_withdrawn_at_once_and_skipped(tmp_path):
    """A worker starting reads its job only once numba is imported: a job withdrawn meanwhile
    ends at once, and the worker skips it (it compiles nothing); its next job runs as usual."""
    from npdynamo.backends.numba import jobs, workers

    graphs = []

    def grab(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    x = np.linspace(0.0, 1.0, 64)
    npdynamo.compile(one_kernel, backend=grab)(x)
    payload = jobs.dumps(*graphs[0])
    cache = tmp_path / "cache" / "kernels"
    pool = workers.Pool()  # a pool of its own: its one worker starts with the job
    try:
        job = pool.submit(payload, "one_kernel")
        for _ in range(1200):
            if pool._running:  # taken by the worker as it starts, numba not imported there yet
                break
            time.sleep(0.05)
        assert pool._running and not job.done()
        assert pool.withdraw(job)
        assert job.status == "withdrawn"  # at once
        for _ in range(6000):  # the worker reads the job, skips it and is free again
            if not pool._running:
                break
            time.sleep(0.05)
        assert not pool._running
        assert not list(cache.rglob("*.nbc"))  # nothing compiled
        again = pool.submit(payload, "one_kernel")
        assert again.wait(300) and again.status == "done", again.result
        assert again.result["compiled"] and list(cache.rglob("*.nbc"))
        assert len(pool.pids()) == 1  # the same worker
    finally:
        pool.shutdown()


def test_workers_say_when_they_are_ready():
    from npdynamo.backends.numba import workers

    pool = workers.pool()
    pool.prestart()
    for _ in range(6000):
        if pool.warm() >= 2:
            break
        time.sleep(0.05)
    assert pool.warm() == len(pool.pids()) == 2


def test_the_workers_compiler_set_up_stops_when_a_job_waits():
    from numba import types

    from npdynamo.backends.numba import approx
    from npdynamo.backends.numba.compile_worker import _warm_compiler

    asked = []
    assert _warm_compiler(lambda: asked.append(1) or True) is True
    assert asked == [1]  # nothing compiled: the job goes first
    assert _warm_compiler() is False
    for helper in (approx.exp_f64, approx.tanh_f64, approx.log_f64):
        assert (types.float64,) in helper.signatures


def test_a_job_calls_back_once_when_it_ends():
    from npdynamo.backends.numba import workers

    job = workers.CompileJob(b"", "a graph")
    seen = []
    job.then(seen.append)
    assert seen == []
    job._finish(workers.DONE, {"compiled": []})
    job._finish(workers.DIED, "too late: the first end counts")
    job.then(seen.append)  # ended already: called at once
    assert seen == [job, job] and job.status == workers.DONE
