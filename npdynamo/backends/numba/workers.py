"""The compile worker pool: numba compiles in other processes, off the caller's thread.

numba's compiler holds the GIL for most of its work, so a compile in a thread of the caller's
process would stall the caller's calls as much as a compile in its own thread. The tiered
numba backend (``tiers.py``) therefore hands a graph to a worker *process*
(``compile_worker.py``), which compiles its kernels into the kernel disk cache; the caller's
process then loads them from there (``diskcache``: a load, not a compile).

The pool starts its workers lazily, one per job waiting, up to ``max_workers()`` (one per core
the process may use, bounded by the memory available: a worker holding numba and LLVM takes
about ``WORKER_MEMORY`` bytes). A worker with nothing to do for ``KEEP_WARM_S`` seconds stops.
The tiers submit a graph's parts as soon as it is captured (``front``), so a process whose
compiled functions never capture a graph starts no worker. ``prestart`` starts them all ahead
of any job (a benchmark's warm pool): a worker takes seconds to import numba and to set up its
compiler (``compile_worker``); each says when it is ready (``warm()`` counts them). A job can
be taken back (``withdraw``: its graph needs it no more, because its kernels are on disk or it
has none): it ends at once, so nobody waits for it. A worker that has taken it but not begun
it (a worker starting reads its first job only once numba is imported, a second or so) skips
it; one that has begun finishes it and its answer is dropped (the cache's writes are atomic).
Each worker is a plain ``subprocess`` started with ``python -c`` (not ``multiprocessing``,
whose ``spawn``/``forkserver`` run the user's ``__main__`` script again in the child), speaking
pickled messages over a socket pair, and served by one daemon thread of this process.

No worker outlives its caller: workers are killed at interpreter exit (``atexit``, after the
last call: pending compiles are abandoned, the cache's atomic writes leave no half file), they
ignore Ctrl-C (the caller gets the ``KeyboardInterrupt``; its exit kills them), and they stop
by themselves when their parent dies (Linux's parent-death signal, else a watch on the parent
pid). A forked child of the caller forgets its parent's workers (they are not its children) and
fails the jobs it inherited with ``FORKED`` (its tiers submit them again to workers of its own).
A worker that dies fails its job with ``DIED``; any error inside the worker fails it with
``FAILED``; what the tier makes of that is ``tiers.py``'s business.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection

from npdynamo import config
from npdynamo.backends import own_work
from npdynamo.logs import get_logger

#: How much lower a worker's scheduling priority is than its caller's: at 5 (a third of the
#: weight) two workers on two cores leave the caller a whole core; at 10 (a tenth) a machine
#: busy with other processes starved a 10 s compile into 4 minutes.
NICENESS = 5
#: The message that withdraws the job just sent to a worker (a job's payload is never empty);
#: it reaches the worker as an argument of its ``main``, as ``NICENESS`` does.
CANCEL = b""
#: Seconds a worker waits for a job before it stops.
KEEP_WARM_S = 30.0
#: Memory one worker takes once numba has compiled a few kernels (bytes; measured about 300 MB).
WORKER_MEMORY = 600 * 2**20

DONE, FAILED, DIED, FORKED, CLOSED = "done", "failed", "died", "forked", "closed"
#: a job taken back before any worker started it (its graph needed it no more)
WITHDRAWN = "withdrawn"


class CompileJob:
    """One payload handed to a worker: ``done()``, ``wait()``, then ``status`` and ``result``."""

    def __init__(self, payload: bytes, label: str) -> None:
        self.payload = payload
        self.label = label
        self.status = ""  # DONE, FAILED, DIED, FORKED, CLOSED or WITHDRAWN once finished
        self.result: object = None  # the worker's answer (DONE) or the error's text
        self.kernels = (0, 0)  # kernels compiled, kernels to compile (the worker's progress)
        self.submitted = time.perf_counter()
        self.finished_at: float | None = None
        self.worker_pid: int | None = None
        #: set once the worker running the job has imported numba (or the job has ended)
        self.worker_ready = threading.Event()
        self._event = threading.Event()
        self._callbacks: list = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def then(self, callback: Callable[[CompileJob], None]) -> None:
        """Call ``callback(self)`` once the job has finished (at once if it has): in the thread
        that finishes it, so it must be quick."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def _finish(self, status: str, result: object) -> None:
        with self._lock:  # (the first finish counts: a worker's death races the shutdown)
            if self._event.is_set():
                return
            self.status, self.result = status, result
            self.finished_at = time.perf_counter()
            self._event.set()
            self.worker_ready.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


def max_workers() -> int:
    """Workers at most: ``config.compile_workers``, else one per usable core, bounded by the
    memory available (at least one)."""
    if config.compile_workers:
        return max(1, int(config.compile_workers))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, _available_memory() // WORKER_MEMORY))


def _available_memory() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 2**62  # unknown: the cores decide


class _Worker:
    """One worker process and our end of its socket."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        code = (f"import sys, time; started = time.time(); "
                f"sys.path[:0] = {[p for p in sys.path if p]!r}; "
                "from npdynamo.backends.numba.compile_worker import main; "
                f"main({theirs.fileno()}, {os.getpid()}, started, {NICENESS}, {CANCEL!r})")
        env = dict(os.environ, NPDYNAMO_PROGRESS="0", NPDYNAMO_TIERED="0")
        quiet = not config.verbose
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code], pass_fds=(theirs.fileno(),), env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL if quiet else None, close_fds=True)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.warm = False  # it said it is ready (numba imported, its compiler set up)
        #: the job whose payload went to the worker and whose answer has not come back; sends
        #: to the worker (a payload, a cancel) hold ``lock``
        self.sent: CompileJob | None = None
        self.lock = threading.Lock()

    def cancel(self, job: CompileJob) -> None:
        """Tell the worker to skip ``job`` (ended already) if it has not begun it
        (``compile_worker.main``). Never waits: while the payload is still going out (a
        worker starting reads it only once numba is imported, and a large one fills the
        socket's buffer before), ``Pool._run`` sends the cancel once it is out."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            if self.sent is job:
                with contextlib.suppress(OSError):
                    self.conn.send_bytes(CANCEL)
        finally:
            self.lock.release()

    def stop(self, kill: bool = False) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if kill:
            with contextlib.suppress(OSError):
                self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                self.process.kill()
            self.process.wait()


class Pool:
    """The process's compile workers and the jobs waiting for them (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()
        self.closing = False

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[CompileJob] = deque()
        self._workers: list[_Worker] = []
        self._running: dict[int, CompileJob] = {}  # worker id -> its job
        self._idle = 0
        self._starting = 0

    def submit(self, payload: bytes, label: str) -> CompileJob:
        """Queue ``payload`` for the next free worker (one is started if none is free)."""
        job = CompileJob(payload, label)
        with self._cond:
            if self.closing:
                job._finish(CLOSED, "the interpreter is exiting")
                return job
            self._queue.append(job)
            self._replace_locked()
            self._cond.notify()
        return job

    def withdraw(self, job: CompileJob) -> bool:
        """Take ``job`` back (it ends ``WITHDRAWN`` now); False if it had ended already. A
        worker that has it skips it unless it has begun it (module docstring)."""
        with self._cond:
            taken = None
            if job in self._queue:
                self._queue.remove(job)
            else:
                taken = next((w for w in self._workers if self._running.get(id(w)) is job),
                             None)
                if taken is None:
                    return False
        job._finish(WITHDRAWN, None)
        if taken is not None:
            taken.cancel(job)
        return True

    def warm(self) -> int:
        """Workers that have set up their compiler and wait for jobs, or have run one."""
        with self._cond:
            return sum(w.warm for w in self._workers)

    def _replace_locked(self) -> None:
        """Start a worker if more jobs wait than workers are free (the lock held)."""
        if self._idle + self._starting < len(self._queue) and \
                len(self._workers) + self._starting < max_workers():
            self._starting += 1
            threading.Thread(target=self._serve, name="npdynamo-compile-worker",
                             daemon=True).start()

    def prestart(self) -> None:
        """Start workers up to ``max_workers()`` now, to wait warm for the jobs to come."""
        with self._cond:
            while not self.closing and len(self._workers) + self._starting < max_workers():
                self._starting += 1
                threading.Thread(target=self._serve, name="npdynamo-compile-worker",
                                 daemon=True).start()

    def cores_held(self) -> int:
        """Workers starting (importing numba, setting up its compiler) or at a job: each holds
        a core (``own_work``: the calls made meanwhile leave them those, the tuner times again
        what it timed meanwhile). A job waiting has a worker starting for it, or waits for busy
        ones."""
        with self._cond:
            if self.closing:
                return 0
            return max(0, len(self._workers) + self._starting - self._idle)

    def pids(self) -> list[int]:
        """The process ids of the running workers (tests use them)."""
        with self._cond:
            return [w.process.pid for w in self._workers]

    def _serve(self) -> None:
        try:
            worker = _Worker()
        except Exception as exc:  # noqa: BLE001 - no worker: the jobs waiting fail
            with self._cond:
                self._starting -= 1
                failed = list(self._queue) if not self._workers else []
                self._queue.clear() if failed else None
            for job in failed:
                job._finish(FAILED, f"no worker process could be started: {exc}")
            return
        with self._cond:
            self._starting -= 1
            self._workers.append(worker)
        log = get_logger("tiers")
        log.debug("compile worker %d started", worker.process.pid)
        self._await_ready(worker)
        while True:
            with self._cond:
                self._idle += 1
                deadline = time.monotonic() + KEEP_WARM_S
                while not self._queue and not self.closing:
                    left = deadline - time.monotonic()
                    if left <= 0 or worker not in self._workers:
                        break
                    self._cond.wait(left)
                self._idle -= 1
                if not self._queue or self.closing or worker not in self._workers:
                    if worker in self._workers:
                        self._workers.remove(worker)
                    break
                if worker.process.poll() is not None:  # died while idle: not this job's doing
                    self._workers.remove(worker)
                    self._cond.notify()
                    self._replace_locked()
                    break
                job = self._queue.popleft()
                self._running[id(worker)] = job
            job.worker_pid = worker.process.pid
            try:
                alive = self._run(worker, job)
            except BaseException as exc:  # a bug here must not leave the job waiting forever
                job._finish(FAILED, f"the compile pool failed: {type(exc).__name__}: {exc}")
                alive = False
            if not alive:
                with self._cond:
                    if worker in self._workers:
                        self._workers.remove(worker)
                break
        log.debug("compile worker %d stopped", worker.process.pid)
        worker.stop(kill=self.closing)

    def _await_ready(self, worker: _Worker) -> None:
        """Wait for the worker's ``ready`` (it has set up numba's compiler), or until a job waits:
        then the job is sent at once and the worker cuts its warm-up short (``_run`` reads the
        ``ready`` then). A worker that died starting is found out as one dying idle is."""
        while True:
            try:
                if worker.conn.poll(0.05):
                    worker.conn.recv()  # ("ready",): the first thing a worker sends
                    worker.warm = True
                    return
            except (EOFError, OSError):
                return
            with self._cond:
                if self._queue or self.closing or worker not in self._workers:
                    return

    def _run(self, worker: _Worker, job: CompileJob) -> bool:
        """Run ``job`` on ``worker``; False when the worker is gone."""
        try:
            with worker.lock:
                if job.done():  # withdrawn before it went out
                    with self._cond:
                        self._running.pop(id(worker), None)
                    return True
                if worker.warm:
                    job.worker_ready.set()
                worker.conn.send_bytes(job.payload)
                worker.sent = job
                if job.done():  # withdrawn while it went out (``_Worker.cancel``)
                    worker.conn.send_bytes(CANCEL)
            while True:
                kind, *rest = worker.conn.recv()
                if kind == "ready":  # (the job came before the worker was ready)
                    worker.warm = True
                    job.worker_ready.set()
                    continue
                if kind == "kernels":
                    job.kernels = tuple(rest)
                    continue
                with worker.lock:
                    worker.sent = None
                with self._cond:
                    self._running.pop(id(worker), None)
                if kind == "skipped":  # withdrawn: it ended then
                    return True
                job._finish(DONE if kind == "done" else FAILED, rest[0])
                return True
        except (EOFError, OSError) as exc:
            with self._cond:
                self._running.pop(id(worker), None)
                if worker in self._workers:
                    self._workers.remove(worker)
            code = worker.process.poll()
            if self.closing:
                job._finish(CLOSED, "the interpreter is exiting")
            elif job.status != FORKED:
                job._finish(DIED, f"the compile worker {worker.process.pid} died "
                                  f"({'exit code ' + str(code) if code is not None else exc})")
            return False

    def shutdown(self) -> None:
        """Kill every worker and fail what waits (at interpreter exit)."""
        with self._cond:
            self.closing = True
            workers, self._workers = list(self._workers), []
            jobs = list(self._queue) + list(self._running.values())
            self._queue.clear()
            self._cond.notify_all()
        for worker in workers:
            worker.stop(kill=True)
        for job in jobs:
            job._finish(CLOSED, "the interpreter is exiting")

    def _before_fork(self) -> None:
        self._cond.acquire()

    def _after_fork_parent(self) -> None:
        self._cond.release()

    def _after_fork_child(self) -> None:
        # the workers are the parent's children: forget them (closing our copies of their
        # sockets), and fail the jobs in flight here; the tiers submit them again
        jobs = list(self._queue) + list(self._running.values())
        for worker in self._workers:
            with contextlib.suppress(OSError):
                worker.conn.close()
        self._reset()
        for job in jobs:
            # (their waiters and callbacks were threads of the parent, and may have held the
            # locks as it forked)
            job._event, job._callbacks = threading.Event(), []
            job._lock, job.worker_ready = threading.Lock(), threading.Event()
            job._finish(FORKED, "the process forked while its kernels compiled")


_pool: Pool | None = None
_pool_lock = threading.Lock()


def pool() -> Pool:
    """The process's pool (made on first use; killed at interpreter exit)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                made = Pool()
                own_work.register(made.cores_held)
                atexit.register(made.shutdown)
                os.register_at_fork(before=made._before_fork,
                                    after_in_parent=made._after_fork_parent,
                                    after_in_child=made._after_fork_child)
                _pool = made
    return _pool


def available() -> bool:
    """Whether this platform can run compile workers (a POSIX system)."""
    return os.name == "posix"
