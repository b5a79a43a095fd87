"""How much of a call holds the GIL: a counting thread measures it.

A compiled step that releases the GIL while its kernels and BLAS calls run lets other Python
threads (a data loader's) run meanwhile. ``gil_held_fraction(fn, *args)`` measures that. It
times ``fn`` alone first (``s`` per call). Then a Python thread counts in a loop, once alone (its
rate with the GIL free) and once while ``fn`` runs ``n`` times on the calling thread over ``T``
seconds. The counter advances only while it holds the GIL, so its count gives the time ``C`` it
held it, and ``fn`` held it for the rest: the fraction is ``(T - C) / (n s)``. (Not ``1 - C / T``:
where both want the GIL they take turns, which stretches ``T``, not the step's own GIL time.)
The switch interval is lowered while measuring, so a thread waiting for the GIL gets it within
microseconds of its release. The counter needs a core of its own: on a busy machine it loses
time to other processes too, so read the result as an upper bound.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable


def _counting(seconds: float, busy: Callable[[], None] | None) -> tuple[float, int, float]:
    """(counts, calls of ``busy``, elapsed seconds) of a counting thread over ``seconds``
    while ``busy`` runs in a loop on this thread (or this thread sleeps)."""
    stop = threading.Event()
    counts = [0]
    started = threading.Event()

    def counter() -> None:
        n = 0
        started.set()
        while not stop.is_set():
            for _ in range(100):
                n += 1
        counts[0] = n

    thread = threading.Thread(target=counter, daemon=True)
    thread.start()
    started.wait()
    calls = 0
    start = time.perf_counter()
    end = start + seconds
    if busy is None:
        time.sleep(seconds)
    else:
        while time.perf_counter() < end:
            busy()
            calls += 1
    stop.set()
    elapsed = time.perf_counter() - start
    thread.join()
    return counts[0], calls, elapsed


def gil_held_fraction(fn: Callable, *args, seconds: float = 0.5, rounds: int = 3,
                      switch_interval: float = 2e-5) -> float:
    """The fraction (0 to 1) of ``fn(*args)``'s run time during which it holds the GIL.

    ``seconds`` per measurement, in ``rounds`` rounds of the three (alone, counter idle,
    counter beside ``fn``) so that a drift of the machine's load touches each alike; the
    medians of the per-round values are used."""
    fn(*args)  # warm
    window = seconds / rounds
    alone, idle_rates, held = [], [], []
    old = sys.getswitchinterval()
    try:
        for _ in range(rounds):
            calls, start = 0, time.perf_counter()
            while time.perf_counter() - start < window:
                fn(*args)
                calls += 1
            alone.append((time.perf_counter() - start) / calls)
            sys.setswitchinterval(switch_interval)
            idle_counts, _, idle_time = _counting(window, None)
            idle_rates.append(idle_counts / idle_time)
            counts, calls, elapsed = _counting(window, lambda: fn(*args))
            sys.setswitchinterval(old)
            held.append((elapsed - counts / idle_rates[-1]) / (calls * alone[-1]))
    finally:
        sys.setswitchinterval(old)
    return min(1.0, max(0.0, statistics.median(held)))
