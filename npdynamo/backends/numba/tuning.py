"""Each compiled graph checks, on its first warm calls, which way of running it is fastest here.

The last step of the numba backend. Whether a graph is fastest as fused kernels with parallel
loops, as serial kernels, or as plain NumPy calls (the eager graph) depends on this machine, its
load and the sizes: a parallel kernel whose thread loses its core waits for it, so with one core
kept busy by another process the parallel version can be many times slower than the serial one,
and a graph of a few tiny ops may run faster as NumPy calls than through a program. The graph is
functional, so running the same call through either candidate is safe: every candidate returns
what the eager backend returns (numba's within floating-point tolerance).

So the callable returned to the entry runs each warm call through ONE candidate, in turn: a first
round per candidate that is not counted (it may load a kernel or start numba's thread pool), then
``TIMED_ROUNDS`` timed rounds (``EXTRA_ROUNDS`` more when every call took microseconds); the
candidate with the smallest best time runs every later call,
through one closure variable (no timing, no lookup). The choice and the times go to the graph's
report (``explain``) and to the ``npdynamo.tuning`` log. ``NPDYNAMO_NUMBA_TUNE=0`` turns it off:
the numba program then always runs as the thread policy decided.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from npdynamo.logs import get_logger

#: Timed rounds per candidate after the uncounted first one.
TIMED_ROUNDS = 2
#: A graph whose candidates all ran faster than this (seconds) gets ``EXTRA_ROUNDS`` more timed
#: rounds before the choice: one preemption decides a 2-round choice between microsecond calls on
#: a busy machine, and more rounds of such calls cost next to nothing.
FAST_CALL_S = 1e-4
EXTRA_ROUNDS = 6


@dataclass
class Candidate:
    """One way of running a graph: ``activate()`` then ``run(*inputs)``."""

    label: str
    run: Callable[..., tuple]
    activate: Callable[[], None] = lambda: None


def tuning_enabled() -> bool:
    return os.environ.get("NPDYNAMO_NUMBA_TUNE", "1").strip().lower() not in (
        "0", "false", "off", "no", "never")


def fastest_of(
    candidates: list[Candidate],
    record: Callable[[str], None],
    clock: Callable[[], float] = time.perf_counter,
) -> Callable[..., tuple]:
    """A callable that times ``candidates`` on its first warm calls, then runs the fastest.

    ``record(text)`` receives the decision (candidate times and the one chosen)."""
    if len(candidates) == 1:
        candidates[0].activate()
        return candidates[0].run
    schedule = [c for _ in range(1 + TIMED_ROUNDS) for c in candidates]
    best: dict[str, float] = {}
    step = 0
    chosen: Callable[..., tuple] | None = None
    extended = False

    def decide() -> Callable[..., tuple]:
        winner = min(candidates, key=lambda c: best[c.label])
        winner.activate()
        times = ", ".join(f"{c.label} {best[c.label] * 1e3:.3f} ms" for c in candidates)
        text = f"runs as {winner.label} (best warm call: {times})"
        record(text)
        get_logger("tuning").info("graph %s", text)
        for redirect in call.npdynamo_redirects:
            redirect(winner.run)
        return winner.run

    def call(*inputs):
        nonlocal step, chosen, extended
        if chosen is not None:
            return chosen(*inputs)
        if step >= len(schedule):  # another thread finished the schedule meanwhile
            return schedule[-1].run(*inputs)
        candidate = schedule[step]
        timed = step >= len(candidates)
        step += 1
        candidate.activate()
        start = clock()
        result = candidate.run(*inputs)
        if timed:
            elapsed = clock() - start
            best[candidate.label] = min(best.get(candidate.label, elapsed), elapsed)
            if step == len(schedule):
                if not extended and max(best.values()) < FAST_CALL_S:
                    extended = True
                    schedule.extend(c for _ in range(EXTRA_ROUNDS) for c in candidates)
                else:
                    chosen = decide()
        return result

    #: who calls this through a name they can rebind (an entry's generated code): told the
    #: winner once it is chosen, so later calls skip this function's frame
    call.npdynamo_redirects = []
    return call
