"""One compile worker process, and the payload it is sent: a graph compiled into the disk cache.

The caller's process pickles a job (``jobs.dumps``): the graph module, the example inputs, the
backend's knobs from ``npdynamo.config`` and which part of the graph's kernels to compile. The
worker (``main``, started by ``workers.py``) runs the numba backend on it exactly as the caller
would have (same passes, same kernel sources, so the same disk-cache keys), including the
warm-up run that makes numba compile each kernel and store its machine code next to the kernel
file. It answers with what the backend reported (a fallback and its reason, kernel counts) and
its job log (its process id, the kernels it compiled, when each phase ended: ``jobs.py`` puts it
in the graph's timeline); the kernels themselves travel through the disk cache, never through
the socket.

A worker sends ``("ready",)`` once it has imported numba and set up its compiler
(``_warm_compiler``), before it reads its first job; a job that comes during that set-up cuts
it short (the job's own first compile would pay the rest anyway).

A job the caller withdraws after sending it (its kernels turned out to be on disk, or it has
none) is followed by ``cancel`` (``workers.CANCEL``): a worker that finds it behind the job it
has just read answers ``("skipped",)`` instead of compiling (a worker starting reads its first
job only once numba is imported); one that finds it later, behind a job it has answered,
ignores it.

A graph split into parts (``part`` of ``parts``) compiles only the kernels whose index falls in
its part; the others are replaced by stand-ins that zero their outputs (types and shapes are
what the compile needs, not values), so two workers compile one graph's kernels side by side.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from typing import Any

from npdynamo import config


def compile_payload(payload: bytes, on_kernels: Any = None) -> dict:
    """Compile one job here (the worker's work; also callable in-process by tests)."""
    from npdynamo import progress
    from npdynamo.backends.numba import backend

    received, cpu = time.time(), time.process_time()
    gm, example_inputs, settings, part, parts = pickle.loads(payload)
    environ = settings.pop("environ", {})
    config.adopt_worker_environment(environ, NPDYNAMO_PROGRESS="0", NPDYNAMO_TIERED="0")
    for name, value in settings.items():
        setattr(config, name, value)
    config.tiered = False
    if on_kernels is not None:
        progress.kernels = _counting(on_kernels)
    start = time.perf_counter()
    log = [(received, "job received"), (time.time(), "job unpickled")]
    signatures: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = backend.compile_for_cache(gm, example_inputs, part, parts, log, signatures)
    report = fn.report
    # (CPU seconds as well: on a busy machine they say what the job cost, the wall clock not)
    log.append((time.time(), f"job done (cpu {time.process_time() - cpu:.2f} s)"))
    return {"fell_back": report.fell_back, "reason": report.reason,
            "kernels": report.kernels, "seconds": time.perf_counter() - start,
            "warnings": [str(w.message) for w in caught][:5],
            "pid": os.getpid(), "part": (part, parts), "log": log, "signatures": signatures,
            "compiled": [what.split()[1] for _, what in log if what.startswith("kernel ")]}


def _counting(send: Any) -> Any:
    done = total = 0

    def kernels(d: int, t: int) -> None:
        nonlocal done, total
        if d == 0:
            total += t
        else:
            done += 1
        send(done, total)

    return kernels


def main(fd: int, parent: int, started: float | None = None, niceness: int = 5,
         cancel: bytes = b"") -> None:
    """The worker's loop: receive a payload, compile it, answer; until the socket closes.
    ``started``: when the process started (``time.time()``), for the first job's log;
    ``niceness``: how much lower its priority is than the caller's (``workers.NICENESS``);
    ``cancel``: the message that withdraws the job just sent (``workers.CANCEL``)."""
    boot = [(started or time.time(), "worker started")]
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    _die_with(parent)
    # the caller's eager-tier calls come first: a compile takes the CPU time they leave
    with contextlib.suppress(OSError):
        os.nice(niceness)
    conn = Connection(fd)
    from npdynamo.backends.numba import backend  # noqa: F401 - numba loaded before the 1st job

    boot.append((time.time(), "numba imported"))
    cut = _warm_compiler(conn.poll)
    done = "compiler set-up cut short by a job" if cut else "compiler set up"
    boot.append((time.time(), f"{done} (cpu {time.process_time():.2f} s since start)"))
    conn.send(("ready",))

    def send_kernels(done: int, total: int) -> None:
        conn.send(("kernels", done, total))

    while True:
        try:
            payload = conn.recv_bytes()
            if payload == cancel:  # for a job answered already
                continue
            if conn.poll(0) and conn.recv_bytes() == cancel:  # withdrawn before it began
                conn.send(("skipped",))
                continue
        except (EOFError, OSError):
            return
        try:
            result = compile_payload(payload, send_kernels)
            result["log"][:0] = boot  # the worker's start, in its first job's log
            boot = []
            answer = ("done", result)
        except BaseException as exc:  # noqa: BLE001 - the caller decides what a failure means
            answer = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return


def _warm_compiler(job_waiting: Any = lambda: False) -> bool:
    """Compile a small kernel-like loop once, then the kernels' float64 ``exp``/``tanh``/``log``
    (``approx``), before any job: numba's first compile in a process sets up its target and
    typing tables, and each helper compiles once per process at the first kernel calling it
    (together seconds under load, against a fraction of a second for each kernel after them),
    which the first job would otherwise wait for, in every worker. Stops between steps when
    ``job_waiting()``: the job goes first (returns True then). Not cached: nothing of it reaches
    the kernel cache."""
    import math

    import numpy as np
    from numba import njit, types

    from npdynamo.backends.numba import approx

    @njit(error_model="numpy", nogil=True, cache=False)
    def warm(x, out):
        for i in range(x.shape[0]):
            out[i] = math.tanh(x[i]) * 0.5 + np.exp(x[i])

    steps = [lambda: warm(np.ones(2), np.empty(2))]
    steps += [lambda f=f: f.compile((types.float64,))
              for f in (approx.exp_f64, approx.tanh_f64, approx.log_f64)]
    for step in steps:
        if job_waiting():
            return True
        with contextlib.suppress(Exception):
            step()
    return False


def _die_with(parent: int) -> None:
    """Exit when the process that started this worker exits, whatever way it does."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
