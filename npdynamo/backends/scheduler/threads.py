"""The scheduler's threads: its worker pool, and BLAS's own pool while streams run side by side.

Streams after the first run on a small pool of daemon threads shared by every scheduled graph,
one thread per extra stream at most (``workers``). OpenBLAS has a pool of its own: two matmuls
side by side, each with every core, fight over the cores, so a scheduled call limits BLAS to one
thread while it runs and puts the count back after (``BlasThreads``: ``threadpoolctl``, the
``threads`` extra, finds the BLAS libraries NumPy loaded; setting the count is one C call, about
a microsecond; without threadpoolctl BLAS keeps its pool). The limit is
process-wide for that time: a BLAS call on another thread meanwhile runs on one thread too.
Whether the scheduled form wins with it is measured by the tuner, never assumed.

This process's background work holds cores too: the numba backend's compile workers (other
processes) while they start and compile, a thread importing numba (``own_work.cores_held``); a
call that runs meanwhile (the eager tier, plain Python while compiling: ``tiers``) leaves BLAS
as many threads fewer (``leave_taken``, one at least),
so none of its BLAS calls waits for a thread whose core a worker holds (on two cores, two
OpenBLAS threads beside one busy worker made a 2.2 ms ``np.dot`` take 8-16 ms).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from npdynamo import config
from npdynamo.backends import own_work


#: Streams at most: this machine's cores (``NPDYNAMO_SCHEDULE_STREAMS`` overrides, >= 2).
def stream_count() -> int:
    value = config.environment("NPDYNAMO_SCHEDULE_STREAMS").strip()
    if value.isdigit() and int(value) >= 2:
        return int(value)
    return max(2, min(os.cpu_count() or 2, 4))


_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()
#: One scheduled call at a time in the process: the workers never wait behind another call's
#: streams (which could wait for them: a deadlock). A call that finds it taken runs serially.
busy = threading.Lock()


def workers(count: int) -> ThreadPoolExecutor:
    """The shared pool, with at least ``count`` threads."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < count:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="npdynamo-stream")
            _pool_size = count
            if old is not None:
                old.shutdown(wait=False)
        return _pool


class BlasThreads:
    """Reads and limits the thread count of the BLAS libraries NumPy loaded (threadpoolctl)."""

    def __init__(self) -> None:
        self._controllers: list | None = None

    def controllers(self) -> list:
        if self._controllers is None:
            try:
                import numpy  # noqa: F401  (BLAS is loaded with NumPy)
                from threadpoolctl import ThreadpoolController
            except ImportError:  # (the ``threads`` extra): BLAS keeps its pool
                self._controllers = []
            else:
                found = ThreadpoolController().select(user_api="blas").lib_controllers
                self._controllers = [c for c in found if hasattr(c, "set_num_threads")]
        return self._controllers

    def count(self) -> int:
        """BLAS threads now (the largest over the libraries; 1 when none is found)."""
        return max((c.get_num_threads() or 1 for c in self.controllers()), default=1)

    def limit_to_one(self) -> list[tuple[object, int]]:
        """Limit every BLAS library to one thread; returns what ``restore`` needs."""
        saved = []
        for c in self.controllers():
            n = c.get_num_threads()
            if n and n > 1:
                c.set_num_threads(1)
                saved.append((c, n))
        return saved

    def leave_taken(self) -> list[tuple[object, int]]:
        """For one call: BLAS on as many threads fewer as this process's background work holds
        cores (``own_work.cores_held``; one at least); returns what ``restore`` needs. Nothing
        changes off the main thread: OpenBLAS lowers its count from any thread but raises it
        again only from the main one (0.3.31)."""
        if threading.current_thread() is not threading.main_thread():
            return []
        taken = own_work.cores_held()
        if taken <= 0:
            return []
        saved = []
        for c in self.controllers():
            n = c.get_num_threads()
            if n and n > 1 and max(1, n - taken) < n:
                c.set_num_threads(max(1, n - taken))
                saved.append((c, n))
        return saved

    @staticmethod
    def restore(saved: list[tuple[object, int]]) -> None:
        for c, n in saved:
            c.set_num_threads(n)


BLAS = BlasThreads()
