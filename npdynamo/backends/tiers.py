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

While the job runs, a frame's entry whose graph waits here may run the frame as plain Python
instead (``WhileCompiling``, put in front of the entry by the frame cache): the eager tier of a
loop graph can cost a few times what Python costs per call, and the waiting calls should never
be much worse than Python. Its first calls alternate the two (each call runs exactly one of
them, so no side effect happens twice) and time them; if the eager tier was slower, plain
Python runs every call until the switch, when the entry's own runner takes its place again.

The calls that run while compiling (``beside_workers``) leave BLAS's threads to the cores the
compile workers hold.

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
from npdynamo.backends.scheduler.threads import BLAS

_pending: weakref.WeakSet = weakref.WeakSet()
_pending_lock = threading.Lock()


class Tiered:
    """One graph's tiers (see the module docstring): the backend returns ``compiled``, which
    runs this (the eager tier, then the switch) until it retargets to the compiled tier."""

    def __init__(self, eager: Callable[..., tuple], job: Any,
                 finish: Callable[[Any], Compiled | Callable[..., tuple] | None],
                 report: BackendReport | None = None) -> None:
        self._run = self._eager = eager
        self.job = job
        self._finish = finish
        self._lock = threading.Lock()
        self.switched = False
        self.eager_calls = 0  # calls the eager tier ran (reports say when the switch came)
        self.plain_calls = 0  # calls that ran plain Python meanwhile (``WhileCompiling``)
        #: what ``WhileCompiling`` measured last: (eager seconds, plain seconds), the best of
        #: each, and whether plain Python runs the waiting calls since
        self.measured: tuple[float, float] | None = None
        self.plain_serving = False
        #: the eager tier's calls that returned, and the fastest of them (seconds): the tuner
        #: starts from it at the switch (``eager_best``) instead of timing the eager graph again
        self.eager_timed = 0
        self.eager_fastest = float("inf")
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
        if self.switched:
            return self._run(*inputs)
        self.eager_calls += 1
        start = time.perf_counter()
        result = beside_workers(self._eager, inputs)
        took = time.perf_counter() - start
        self.eager_timed += 1
        self.eager_fastest = min(self.eager_fastest, took)
        return result

    def eager_best(self) -> float | None:
        """The eager tier's fastest call, once it ran ``SAMPLES`` calls (the first of them
        pays for what runs for the first time), else None."""
        return self.eager_fastest if self.eager_timed >= SAMPLES else None

    def serving(self) -> str:
        """What runs the graph's calls now, as the progress line says it."""
        if self.switched:
            return "the compiled tier runs its calls"
        if self.measured is not None and self.plain_serving:
            return (f"plain Python runs its calls while compiling (the eager tier took "
                    f"{self.measured[0] / max(self.measured[1], 1e-9):.2f}x its time)")
        return "the eager tier runs its calls"

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


def waiting(compiled: Compiled | None) -> Tiered | None:
    """The tiers of a graph still running its eager tier (``compiled`` is what the backend
    returned, as the entry binds it), else None."""
    run = None if compiled is None else compiled.run
    return run if isinstance(run, Tiered) and not run.switched else None


#: calls of each kind ``WhileCompiling`` times before it decides (the best of each counts: the
#: first call of either pays for what runs for the first time)
SAMPLES = 2
#: the eager tier runs the waiting calls only when its best time is under this fraction of plain
#: Python's: a tie goes to plain Python, the reference (0: plain Python always, infinity: the
#: eager tier always)
EAGER_BELOW = 0.9
#: After deciding, the side not taken runs one call again ``RECHECK`` calls later, then twice as
#: many calls later, and so on, while the two measured within ``CLOSE`` times each other. The first
#: calls are timed while the compile workers start up (importing numba on every core) and this
#: process imports numba in a thread (taking the GIL from the calls), loads that change within a
#: second: a decision from then can be wrong for the calls after (cma_pt's eager tier measured
#: 10% faster, then ran 30% slower than plain Python the 96 calls after).
RECHECK = 8
CLOSE = 1.5


class WhileCompiling:
    """An entry's runner while its graph waits for the compiled tier (module docstring).

    ``run`` is the entry's runner (the eager tier, then the switch), ``plain`` the frame run as
    plain Python (the same arguments, the same result and effects: the reference), ``rebind``
    puts ``run`` back in this one's place once the job has ended, so calls after the switch do
    not pass through here. A call that raises is not timed."""

    def __init__(self, tier: Tiered, run: Callable[..., Any], plain: Callable[..., Any],
                 rebind: Callable[[Callable[..., Any]], None]) -> None:
        self.tier, self.run, self.plain, self.rebind = tier, run, plain, rebind
        self.eager_times: list[float] = []
        self.plain_times: list[float] = []
        #: None while measuring, then whether plain Python runs the waiting calls
        self.plain_wins: bool | None = None
        self.calls = 0  # calls since the decision
        self.next_check = 0  # the call (since the decision) the other side runs again; 0: never
        self.gap = RECHECK

    def __call__(self, *args: Any) -> Any:
        tier = self.tier
        if tier.switched or tier.job.done():  # the next call through ``run`` switches
            self.rebind(self.run)
            return self.run(*args)
        if self.plain_wins is None:
            return self._timed(len(self.plain_times) < len(self.eager_times), args)
        self.calls += 1
        if self.next_check and abs(self.calls - self.next_check) <= 1:
            # the check times the other side, the calls either side of it the side taken
            at = self.calls - self.next_check
            return self._timed(self.plain_wins != (at == 0), args, decide=at == 1)
        if self.plain_wins:
            tier.plain_calls += 1
            return beside_workers(self.plain, args)
        return self.run(*args)

    def _timed(self, plain: bool, args: tuple, decide: bool = False) -> Any:
        start = time.perf_counter()
        if plain:
            self.tier.plain_calls += 1
            result = beside_workers(self.plain, args)
        else:
            result = self.run(*args)
        took = time.perf_counter() - start
        (self.plain_times if plain else self.eager_times).append(took)
        if decide or (self.plain_wins is None and len(self.plain_times) >= SAMPLES):
            self._decide()
        return result

    def _decide(self) -> None:
        """Decide on the best of each side's last ``SAMPLES`` times, and when to check again.
        At a check: the other side's one new time against the best of the side taken just
        before and just after it (a load that ended or began at the check touches both)."""
        eager, python = min(self.eager_times[-SAMPLES:]), min(self.plain_times[-SAMPLES:])
        if self.next_check:
            eager, python = (self.eager_times[-1], python) if self.plain_wins else \
                (eager, self.plain_times[-1])
        self.tier.measured = (eager, python)
        self.plain_wins = self.tier.plain_serving = eager >= EAGER_BELOW * python
        if self.next_check:
            self.gap *= 2
        close = max(eager, python) < CLOSE * min(eager, python)
        self.next_check = self.calls + self.gap if close else 0


def beside_workers(run: Callable[..., Any], args: tuple) -> Any:
    """``run(*args)`` with BLAS leaving the cores the compile workers hold
    (``own_work.cores_held``): OpenBLAS's threads on a core a worker holds made each BLAS call
    wait for it. A thread count changes only the order of BLAS's sums (the backend's tolerance
    covers it)."""
    saved = BLAS.leave_taken()
    try:
        return run(*args)
    finally:
        BLAS.restore(saved)


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
