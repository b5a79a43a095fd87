"""Loop kernels against hand-written numba (issue 25): ``python -m benchmarks.loop_corpus``.

Per kernel of ``benchmarks/loop_kernels.py`` (medium size unless ``--size small``): the graphs
and graph breaks ``explain`` reports, the first compiled call on the eager backend (capture
included), and warm per-call times of plain NumPy, npdynamo eager, npdynamo numba and the
hand-written numba version, with npdynamo numba's speed as a fraction of the hand-written one
(``numba/hand``: 1.0 is as fast; the issue's target is a geometric mean of at least 0.8).

Each kernel runs in its own process under a time limit (``--timeout``, 180 s): a loop nest
that is unrolled or breaks per iteration can take minutes to capture or to compile on numba,
and one such kernel must not hold up the table. Timings come from a shared machine: rough
guides only, medians of a few samples.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import npdynamo  # noqa: E402
from benchmarks.common import fmt_time, measure  # noqa: E402
from benchmarks.loop_kernels import KERNELS  # noqa: E402

SEED = 25


def _kernel(name: str):
    for kernel in KERNELS:
        if kernel.name == name:
            return kernel
    raise SystemExit(f"no kernel {name!r}; the corpus has {[k.name for k in KERNELS]}")


def one(name: str, size: str) -> dict:
    """Figures of one kernel, measured in this process."""
    kernel = _kernel(name)
    args = kernel.make(size, np.random.default_rng(SEED))
    warnings.simplefilter("ignore")
    with contextlib.redirect_stdout(io.StringIO()):
        report = npdynamo.explain(kernel.plain)(*args)
    npdynamo.reset()
    eager = npdynamo.compile(kernel.plain, backend="eager")
    start = time.perf_counter()
    eager(*args)
    first = time.perf_counter() - start
    numba = npdynamo.compile(kernel.plain, backend="numba")
    kernel.numba(*args)  # compile the hand-written version outside the timing
    row = {"name": name, "graphs": report.graph_count, "breaks": report.graph_break_count,
           "first_eager": first}
    for label, fn in (("plain", kernel.plain), ("eager", eager), ("numba", numba),
                      ("hand", kernel.numba)):
        row[label] = measure(fn, *args, samples=5, min_sample_s=0.01)["median"]
    return row


def _run_child(name: str, size: str, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.loop_corpus", "--one", name, "--size", size]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {"name": name, "error": f"over {timeout:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"name": name, "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}


def _print(rows: list[dict], size: str) -> None:
    print(f"Loop-kernel corpus ({size} sizes; warm medians on a shared machine: rough guides)")
    print(f"  {'kernel':22s} {'graphs':>6s} {'breaks':>6s} {'1st eager':>10s} {'numpy':>9s} "
          f"{'eager':>9s} {'numba':>9s} {'hand':>9s} {'numba/hand':>10s} {'hand/numpy':>10s}")
    ratios = []
    for row in rows:
        if "error" in row:
            print(f"  {row['name']:22s} {row['error']}")
            continue
        ratio = row["hand"] / row["numba"]
        ratios.append(ratio)
        print(f"  {row['name']:22s} {row['graphs']:6d} {row['breaks']:6d} "
              f"{fmt_time(row['first_eager']):>10s} {fmt_time(row['plain']):>9s} "
              f"{fmt_time(row['eager']):>9s} {fmt_time(row['numba']):>9s} "
              f"{fmt_time(row['hand']):>9s} {ratio:9.3f}x {row['plain'] / row['hand']:9.1f}x")
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"  geometric mean of numba/hand over {len(ratios)} kernels: {geo:.3f}x "
              f"(target 0.8x)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "medium"), default="medium")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--one", help="measure one kernel in this process, print JSON")
    parser.add_argument("kernels", nargs="*", help="names of the kernels to run (default: all)")
    opts = parser.parse_args(argv)
    if opts.one:
        print(json.dumps(one(opts.one, opts.size)))
        return
    names = opts.kernels or [k.name for k in KERNELS]
    _print([_run_child(name, opts.size, opts.timeout) for name in names], opts.size)


if __name__ == "__main__":
    main()
