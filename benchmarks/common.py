"""Timing helpers shared by the benchmarks: calibrated repeats, medians, min/max."""

from __future__ import annotations

import statistics
import timeit


def measure(fn, *args, samples: int = 15, min_sample_s: float = 0.02) -> dict:
    """Per-call seconds of ``fn(*args)``: median, min and max over ``samples`` samples."""
    for _ in range(3):
        fn(*args)
    timer = timeit.Timer(lambda: fn(*args))
    number = 1
    while timer.timeit(number) < min_sample_s:
        number *= 2
    times = [timer.timeit(number) / number for _ in range(samples)]
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:8.1f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    return f"{seconds * 1e3:8.2f} ms"
