"""The cores the compile workers hold: BLAS leaves them to the workers, and a prestarted pool.

While the numba backend's compile workers start or compile (``workers.Pool.cores_held``, read
through ``own_work.cores_held``), a call that runs meanwhile on the eager tier or as plain Python
(``tiers.beside_workers``) runs BLAS on as many threads fewer, and gets BLAS's own count back
after; off the main thread nothing changes (OpenBLAS raises its count only from there).
``front.prestart`` starts the workers and imports the numba side in the caller once one is
ready (``benchmarks/compile_cost.py``'s warm pool).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from npdynamo.backends import own_work, tiers
from npdynamo.backends.scheduler import threads

ROOT = Path(__file__).resolve().parents[2]


class FakeBlas:
    """A BLAS library's thread count, as threadpoolctl's controllers show it."""

    def __init__(self, count: int) -> None:
        self.count = count

    def get_num_threads(self) -> int:
        return self.count

    def set_num_threads(self, n: int) -> None:
        self.count = n


@pytest.fixture
def blas(monkeypatch):
    fake = FakeBlas(4)
    monkeypatch.setattr(threads.BLAS, "_controllers", [fake])
    held(monkeypatch, 0)
    return fake


def held(monkeypatch, cores: int) -> None:
    """This process's background work holds ``cores`` now (and nothing else is counted)."""
    monkeypatch.setattr(own_work, "_probes", [lambda: cores])


@pytest.mark.parametrize("taken,during", [(0, 4), (1, 3), (2, 2), (3, 1), (6, 1)])
def test_a_call_beside_busy_workers_leaves_them_their_cores(blas, monkeypatch, taken, during):
    held(monkeypatch, taken)
    seen = []
    assert tiers.beside_workers(lambda x: seen.append(blas.count) or x + 1, (1,)) == 2
    assert seen == [during]
    assert blas.count == 4  # its own count back after


def test_the_count_comes_back_when_the_call_raises(blas, monkeypatch):
    held(monkeypatch, 1)

    def fails():
        assert blas.count == 3
        raise ValueError("the user's error")

    with pytest.raises(ValueError, match="the user's error"):
        tiers.beside_workers(fails, ())
    assert blas.count == 4


def test_off_the_main_thread_blas_keeps_its_threads(blas, monkeypatch):
    held(monkeypatch, 1)
    seen = []
    thread = threading.Thread(target=tiers.beside_workers,
                              args=(lambda: seen.append(blas.count), ()))
    thread.start()
    thread.join()
    assert seen == [4]


class Job:
    def __init__(self) -> None:
        self.ended = False

    def done(self) -> bool:
        return self.ended

    def wait(self, timeout=None) -> bool:
        return self.ended


def test_the_eager_tier_and_plain_python_leave_the_cores_until_the_switch(blas, monkeypatch):
    held(monkeypatch, 1)
    seen = []
    job = Job()
    tier = tiers.Tiered(lambda x: seen.append(("eager", blas.count)) or (x,), job,
                        lambda _: (lambda x: seen.append(("compiled", blas.count)) or (x,)))
    waiting = tiers.WhileCompiling(tier, tier, lambda x: seen.append(("plain", blas.count)) or x,
                                   lambda run: None)
    for _ in range(4):  # two of each, alternating
        waiting(1.0)
    job.ended = True
    waiting(1.0)
    assert seen == [("eager", 3), ("plain", 3), ("eager", 3), ("plain", 3), ("compiled", 4)]
    assert blas.count == 4


POOL = """
import time
from npdynamo.backends.numba import front, workers

workers.pool()
print("IDLE", workers.pool().cores_held(), front.numba_side_imported(), flush=True)
front.prestart()
print("STARTING", workers.pool().cores_held(), flush=True)
deadline = time.monotonic() + 240
while (workers.pool().warm() < 2 or not front.numba_side_imported()) and \\
        time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.2)
print("WARM", workers.pool().warm(), workers.pool().cores_held(), front.numba_side_imported(),
      flush=True)
"""


def test_prestart_counts_the_starting_workers_and_imports_the_numba_side(tmp_path):
    env = dict(os.environ, NPDYNAMO_TIERED="1", NPDYNAMO_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT), NPDYNAMO_PROGRESS="0")
    code = "import npdynamo; npdynamo.config.compile_workers = 2\n" + textwrap.dedent(POOL)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "IDLE 0 False", lines
    assert lines[1] == "STARTING 2", lines  # two workers importing numba hold two cores
    assert lines[2] == "WARM 2 0 True", lines  # ready and idle: none held; numba side here


def test_a_real_blas_gets_its_count_back(monkeypatch):
    if not threads.BLAS.controllers() or threads.BLAS.count() < 2:
        pytest.skip("no BLAS with a thread pool found (threadpoolctl)")
    before = threads.BLAS.count()
    a = np.ones((64, 64))
    held(monkeypatch, 0)
    saved = threads.BLAS.leave_taken()
    assert saved == []  # no worker holds a core
    held(monkeypatch, 1)
    result = tiers.beside_workers(lambda: (threads.BLAS.count(), a @ a), ())
    assert result[0] == before - 1
    assert threads.BLAS.count() == before
