"""What numba compiles cost (``make bench``): seconds per kernel and per op, and parallel compiles.

Each row runs in a fresh process with an empty kernel cache (``NPDYNAMO_CACHE_DIR``):

* **Expression size.** A generated function of N steps (one to three elementwise ops each, a
  long expression over two arrays, in a pseudo-random order) on the numba
  backend, blocking compile: ops, kernels, distinct kernels, the backend's compile seconds,
  seconds per distinct kernel and per op. ``--cap N`` raises ``fusion.MAX_GROUP_NODES`` (ops
  per kernel at most, 64) so that one kernel holds more: numba/LLVM's time per op grows with a
  kernel's length, which is why long expressions are cut into groups of at most that many ops.
* **Repeated structure.** The same layer five times with other float constants: five kernels,
  one distinct (the constants are kernel parameters), one numba compile.
* **Parallel compilation.** A graph of ``KERNELS`` distinct kernels (matrix products between
  them) on the tiered backend with 1 and 2 compile workers, the rows interleaved over
  ``--rounds``: seconds from the first call until the compiled tier serves calls
  (``npdynamo.synchronize()``), in two settings:

  - *cold process*: the first call comes right after ``compile()``; its graph's capture starts
    the workers, so the seconds include each worker's start (Python, npdynamo and numba
    imported, numba's compiler set up: the same for one worker and two, and two starting at
    once share the cores with the caller's own start) besides the graph's compile;
  - *warm pool*: the first call comes once the workers have started and set up numba's
    compiler (``workers.pool().warm()``) and the caller has imported its numba side
    (``front.prestart``), as for any graph but a program's first: the seconds are the
    graph's compile (its kernels in the workers, then loaded by the caller), and the caller's
    build of the program, which overlaps the workers. (The caller's import of numba, a
    program's one-time cost, fell in these seconds before: beside two workers on two cores it
    took a core from one of them for 0.1-0.2 s, a cost one worker never paid.)

  Issue 24 asks that "a graph of >= 4 kernels compiles >= 1.6x faster" with two workers (on a
  quiet machine with two free cores): that is the warm-pool row. The cold-process row says
  what a program's first graph sees; its fixed costs (seconds) do not shrink with workers.
  ``--timeline`` prints where each run's seconds went (``NumbaReport.timeline``).

    python -m benchmarks.compile_cost [--ops 16,32,64] [--cap N] [--workers 1,2]
                                      [--skip-parallel] [--rounds R] [--timeline]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Distinct kernels of the parallel-compilation graph.
KERNELS = 6

_OPS = ("a * {c} + b", "np.tanh(a)", "a - b * {c}", "np.exp(-a * a)", "np.sqrt(np.abs(a) + {c})",
        "np.maximum(a, b) * {c}", "np.sin(a) + b", "a / (1.0 + b * b)")

CHILD = r"""
import json, sys, time
import numpy as np
workers, cap, warm = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "warm"
import npdynamo
from npdynamo.backends.numba import fusion, workers as pool
if workers:
    npdynamo.config.compile_workers = workers
if cap:
    fusion.MAX_GROUP_NODES = cap
ns = {"np": np}
exec(sys.stdin.read(), ns)
fn, args = ns["fn"], ns["args"]
compiled = npdynamo.compile(fn, backend="numba")
if warm:  # until every worker has numba's compiler set up, and the caller its numba side
    from npdynamo.backends.numba import front
    front.prestart()  # (else the first graph's capture starts them)
    deadline = time.monotonic() + 300
    while (pool.pool().warm() < workers or not front.numba_side_imported()) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
start = time.perf_counter()
compiled(*args)
first = time.perf_counter() - start
npdynamo.synchronize()
ready = time.perf_counter() - start
report = npdynamo.inspect(compiled).graphs[0].report
row = {"first_s": first, "ready_s": ready, "kernels": report.kernels,
       "distinct": report.distinct, "compile_s": report.compile_time_s,
       "ops": sum(len(g) for g in report.groups), "fell_back": report.fell_back,
       "timeline": report.timeline}
print("ROW" + json.dumps(row))
"""


def expression(n_ops: int) -> str:
    """Source of ``fn(a, b)``: ``n_ops`` steps of the eight kinds in a fixed pseudo-random order
    (no period: the pieces of a long expression cut into kernels are not alike)."""
    order = random.Random(n_ops)
    lines = ["def fn(a, b):"]
    for k in range(n_ops):
        op = order.choice(_OPS).format(c=repr(0.5 + k / (8.0 * n_ops)))
        lines.append(f"    a = {op}")
    lines += ["    return a", "args = (np.linspace(0.1, 1.0, 4096), np.linspace(1.0, 2.0, 4096))"]
    return "\n".join(lines) + "\n"


def layers(count: int = 5) -> str:
    """``count`` layers of one structure with other constants, matrix products between them."""
    lines = ["def fn(x, w):"]
    for k in range(count):
        lines.append(f"    x = np.tanh(x @ w * {0.5 / (k + 1)!r} + {0.1 * k!r})")
    lines += ["    return x", "rng = np.random.default_rng(0)",
              "args = (rng.random((64, 64)), rng.random((64, 64)) / 64)"]
    return "\n".join(lines) + "\n"


def distinct_kernels(count: int = KERNELS) -> str:
    """``count`` kernels of different ops, a matrix product between each two."""
    lines = ["def fn(x, w):"]
    for k in range(count):
        a, b = _OPS[k % len(_OPS)], _OPS[(k + 3) % len(_OPS)]
        lines.append(f"    a, b = x, x * {k + 2}")
        lines.append(f"    a = {a.format(c='0.5')}")
        lines.append(f"    a = {b.format(c='1.5')}")
        lines.append("    x = a @ w")
    lines += ["    return x", "rng = np.random.default_rng(0)",
              "args = (rng.random((64, 64)), rng.random((64, 64)) / 64)"]
    return "\n".join(lines) + "\n"


def run(source: str, *, tiered: bool, workers: int = 0, cap: int = 0, warm: bool = False,
        timeout: float = 600.0) -> dict:
    """One row: ``source`` (defining ``fn`` and ``args``) in a fresh process, empty cache."""
    with tempfile.TemporaryDirectory(prefix="npdynamo-compile-cost-") as cache:
        env = {**os.environ, "NPDYNAMO_CACHE_DIR": cache, "NPDYNAMO_PROGRESS": "0",
               "NPDYNAMO_TIERED": "1" if tiered else "0", "NPDYNAMO_NUMBA_TUNE": "0",
               "PYTHONPATH": os.pathsep.join(filter(None, [
                   str(ROOT), os.environ.get("PYTHONPATH")]))}
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(workers), str(cap),
                                   "warm" if warm else "cold"],
                                  input=source, capture_output=True, text=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
    rows = [line for line in proc.stdout.splitlines() if line.startswith("ROW")]
    if not rows:
        return {"error": f"exit {proc.returncode}: {proc.stderr[-300:]}"}
    return json.loads(rows[-1][3:])


def _line(label: str, row: dict) -> str:
    if "error" in row:
        return f"{label:28s} ERROR {row['error']}"
    per_kernel = row["compile_s"] / max(row["distinct"], 1)
    per_op = row["compile_s"] / max(row["ops"], 1)
    return (f"{label:28s} {row['ops']:5d} {row['kernels']:7d} {row['distinct']:8d} "
            f"{row['compile_s']:9.2f}s {per_kernel:9.2f}s {per_op * 1e3:8.1f}ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="16,32,64", help="expression sizes (steps)")
    parser.add_argument("--cap", type=int, default=0,
                        help="ops per kernel at most (default: fusion.MAX_GROUP_NODES)")
    parser.add_argument("--workers", default="1,2", help="compile workers to compare")
    parser.add_argument("--skip-parallel", action="store_true")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of the parallel rows, interleaved (medians)")
    parser.add_argument("--timeline", action="store_true",
                        help="print where each parallel run's seconds went")
    opts = parser.parse_args([] if argv is None else argv)
    print("== numba compile cost (fresh process, empty kernel cache; blocking compile)")
    head = (f"{'graph':28s} {'ops':>5s} {'kernels':>7s} {'distinct':>8s} {'compile':>10s} "
            f"{'per kernel':>10s} {'per op':>10s}")
    print(head)
    print("-" * len(head))
    for n in (int(x) for x in opts.ops.split(",") if x):
        label = f"expression, {n} steps" + (f" (cap {opts.cap})" if opts.cap else "")
        print(_line(label, run(expression(n), tiered=False, cap=opts.cap)), flush=True)
    print(_line("5 layers, other constants", run(layers(), tiered=False)), flush=True)
    if opts.skip_parallel:
        return
    print(f"== parallel compilation: {KERNELS} distinct kernels, tiered, seconds until the "
          "compiled tier serves calls")
    # the configurations interleaved, round by round (the order alternating), so a drift of a
    # shared machine slows them alike; medians over the rounds
    counts = [int(x) for x in opts.workers.split(",") if x]
    configs = [(setting, w) for setting in ("cold", "warm") for w in counts]
    ready: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for r in range(opts.rounds):
        for setting, w in configs if r % 2 == 0 else configs[::-1]:
            row = run(distinct_kernels(), tiered=True, workers=w, warm=setting == "warm")
            label = f"{w} worker(s), {'warm pool' if setting == 'warm' else 'cold process'}"
            if "error" in row:
                print(f"  {label}: ERROR {row['error']}")
                continue
            ready[setting, w].append(row["ready_s"])
            print(f"  {label}: {row['ready_s']:6.2f} s ({row['kernels']} kernels, "
                  f"{row['distinct']} distinct)", flush=True)
            if opts.timeline:
                for t, where, what in row["timeline"]:
                    print(f"      {t:6.2f} s  {where:26s} {what}")
    median = {c: statistics.median(v) for c, v in ready.items() if v}
    for setting in ("cold", "warm"):
        if (setting, 1) not in median:
            continue
        for w in counts:
            if w != 1 and (setting, w) in median:
                bar = ("issue 24: >= 1.6x with 2, on a quiet machine" if setting == "warm"
                       else "fixed costs included: no bar")
                print(f"  {setting}: 1 worker {median[setting, 1]:.2f} s, {w} workers "
                      f"{median[setting, w]:.2f} s: speed-up "
                      f"{median[setting, 1] / median[setting, w]:.2f}x (medians of "
                      f"{len(ready[setting, w])} rounds; {bar})")


if __name__ == "__main__":
    main(sys.argv[1:])
