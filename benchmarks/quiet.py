"""Waiting for a quiet machine: timings on a shared 2-core VM mean little while others run.

``wait_until_quiet`` samples ``/proc/stat`` and this process's own CPU time and returns once
the rest of the machine used less than ``limit`` cores over a short window (or after
``timeout`` seconds); ``foreign_load`` measures that load over a block of code, so each table row
can say how busy the machine was while it was measured.
"""

from __future__ import annotations

import os
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_and_self() -> tuple[float, float] | None:
    try:
        with open("/proc/stat") as f:
            fields = [float(v) for v in f.readline().split()[1:]]
        busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0.0)
        own = os.times()
        return busy / _TICK, own.user + own.system + own.children_user + own.children_system
    except OSError:
        return None


class foreign_load:
    """Context manager: ``.cores`` is the CPU others used per second of wall time inside it."""

    def __enter__(self) -> foreign_load:
        self._start = _busy_and_self()
        self._t = time.perf_counter()
        self.cores = float("nan")
        return self

    def __exit__(self, *exc) -> None:
        end = _busy_and_self()
        elapsed = time.perf_counter() - self._t
        if self._start is not None and end is not None and elapsed > 0:
            busy = end[0] - self._start[0]
            own = end[1] - self._start[1]
            self.cores = max(0.0, (busy - own) / elapsed)


def wait_until_quiet(limit: float = 0.3, window: float = 0.5, timeout: float = 20.0) -> float:
    """Wait until others use < ``limit`` cores; returns the last load seen."""
    deadline = time.perf_counter() + timeout
    while True:
        with foreign_load() as load:
            time.sleep(window)
        if load.cores < limit or time.perf_counter() > deadline:
            return load.cores
