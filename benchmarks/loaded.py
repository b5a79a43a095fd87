"""Never slower than NumPy, also on a busy machine: the numba backend quiet and with one core
taken by another process, side by side.

For each workload, NumPy and the numba backend are timed on a quiet machine, then again while a
child process spins on one core (the machine has two). Each condition compiles afresh, so the
graph's tuning (``backends/tuning.py``: numba parallel, numba serial or the eager graph,
whichever is fastest on the first warm calls) decides under that condition; the "untuned"
column is the default parallel program with tuning off (``NPDYNAMO_NUMBA_TUNE=0``), what a
parallel kernel whose thread loses its core costs without it. Ratios are NumPy time / compiled
time (> 1: faster than NumPy).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import numpy as np

import npdynamo
from benchmarks import workloads
from benchmarks.common import fmt_time, measure
from benchmarks.quiet import wait_until_quiet

RNG = np.random.default_rng(0)

CASES = [
    ("GELU 1e6 float32", workloads.gelu,
     lambda: (RNG.standard_normal(1_000_000).astype(np.float32),)),
    ("row softmax 4096x1024 float32", workloads.softmax,
     lambda: (RNG.standard_normal((4096, 1024)).astype(np.float32),)),
    ("layernorm 4096x1024 float32", workloads.layernorm,
     lambda: (RNG.standard_normal((4096, 1024)).astype(np.float32),
              RNG.standard_normal(1024).astype(np.float32),
              RNG.standard_normal(1024).astype(np.float32))),
    ("3-D diffusion stencil 128x128x64 float64", workloads.diffusion_3d,
     lambda: (RNG.standard_normal((128, 128, 64)), 0.025)),
]


@contextlib.contextmanager
def one_core_busy():
    """A child process spinning on one core for the duration of the block."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


@contextlib.contextmanager
def tuning(enabled: bool):
    saved = os.environ.get("NPDYNAMO_NUMBA_TUNE")
    os.environ["NPDYNAMO_NUMBA_TUNE"] = "1" if enabled else "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["NPDYNAMO_NUMBA_TUNE"]
        else:
            os.environ["NPDYNAMO_NUMBA_TUNE"] = saved


def _compiled_time(fn, args, tuned: bool) -> float:
    npdynamo.reset()
    with tuning(tuned):
        compiled = npdynamo.compile(fn, backend="numba")
        compiled(*args)  # compile; the tuner then decides on the warm calls measure makes
        for _ in range(40):
            compiled(*args)
    return measure(compiled, *args, samples=9)["median"]


def _row(fn, args) -> dict:
    numpy_s = measure(fn, *args, samples=9)["median"]
    return {"numpy": numpy_s, "tuned": _compiled_time(fn, args, True),
            "untuned": _compiled_time(fn, args, False)}


def main() -> None:
    print("\nnumba backend on a quiet and on a loaded machine (one core spinning); "
          "NumPy time / compiled time")
    print(f"{'workload':42} {'NumPy quiet':>12} {'tuned':>7} {'untuned':>8}   "
          f"{'NumPy loaded':>12} {'tuned':>7} {'untuned':>8}")
    for name, fn, make in CASES:
        args = make()
        wait_until_quiet()
        quiet = _row(fn, args)
        with one_core_busy():
            loaded = _row(fn, args)
        print(f"{name:42} {fmt_time(quiet['numpy'])} "
              f"{quiet['numpy'] / quiet['tuned']:6.2f}x {quiet['numpy'] / quiet['untuned']:7.2f}x"
              f"   {fmt_time(loaded['numpy'])} {loaded['numpy'] / loaded['tuned']:6.2f}x "
              f"{loaded['numpy'] / loaded['untuned']:7.2f}x")


if __name__ == "__main__":  # python -m benchmarks.loaded
    main()
