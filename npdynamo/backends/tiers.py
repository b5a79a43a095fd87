"""Tiered execution: a graph runs on its eager tier until its compiled tier is ready.

A backend whose compile takes long (numba) returns a ``Tiered`` callable instead of blocking
the first call: every call runs the eager tier (the graph's NumPy calls, as the eager backend
runs them) while a background job compiles. At a call boundary after the job has finished, the
first caller to get there *switches*: it runs the backend's ``finish`` (for numba: load the
kernels the worker left in the disk cache, tune) and from then on every call runs what that
returned. Other threads calling meanwhile keep running the eager tier; no call ever waits for a
compile, and no call runs half on one tier. Once switched, the graph's ``Compiled`` (what the
backend returned) retargets to the compiled callable, as the tuner does, so the entry calling
it skips the eager tier's check from then on.

``synchronize()`` waits for every pending job and switches its graph (benchmarks and tests:
after it, calls run compiled). The module knows nothing of numba: the backend hands over the
job (anything with ``done()``/``wait()``) and ``finish``.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from npdynamo.backends.report import BackendReport, Compiled, as_compiled

_pending: weakref.WeakSet = weakref.WeakSet()
_pending_lock = threading.Lock()


class Tiered:
    """One graph's tiers (see the module docstring): the backend returns ``compiled``, which
    runs this (the eager tier, then the switch) until it retargets to the compiled tier."""

    def __init__(self, eager: Callable[..., tuple], job: Any,
                 finish: Callable[[Any], Compiled | Callable[..., tuple] | None],
                 report: BackendReport | None = None) -> None:
        self._run = eager
        self.job = job
        self._finish = finish
        self._lock = threading.Lock()
        self.switched = False
        self.eager_calls = 0  # calls the eager tier ran (reports say when the switch came)
        self.started = time.perf_counter()
        #: what the backend returns: this, until the compiled tier takes over
        self.compiled = Compiled(self, report)
        with _pending_lock:
            _pending.add(self)

    def __call__(self, *inputs: Any) -> tuple:
        if not self.switched and self.job.done() and self._lock.acquire(blocking=False):
            try:
                self._switch()
            finally:
                self._lock.release()
        if not self.switched:
            self.eager_calls += 1
        return self._run(*inputs)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the job and switch now; False if ``timeout`` passed first."""
        while not self.switched:
            if not self.job.wait(timeout):
                return False
            with self._lock:
                if not self.switched:
                    self._switch()
        return True

    def _switch(self) -> None:
        finished = self._finish(self.job)
        if finished is None:  # the backend resubmitted the job (``self.job`` is the new one)
            return
        compiled = as_compiled(finished)
        self._run = compiled.run
        self.switched = True
        with _pending_lock:
            _pending.discard(self)
        self.compiled.retarget(compiled.run)
        compiled.on_retarget(self.compiled.retarget)  # the tuner's choice, once made


def synchronize(timeout: float | None = None) -> bool:
    """Wait until every graph compiling in the background has switched to its compiled tier.

    Returns False if ``timeout`` (seconds, for all of them) passed first. Calls made after it
    returns True run the compiled tier (numba's kernels, or the eager graph where the backend
    fell back)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _pending_lock:
            waiting = list(_pending)
        if not waiting:
            return True
        for tiered in waiting:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not tiered.settle(left):
                return False


def pending() -> int:
    """Graphs still running on their eager tier."""
    with _pending_lock:
        return len(_pending)
