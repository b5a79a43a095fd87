"""NumPy kernels nobody on this project wrote, plain and compiled: correctness, graphs and
breaks, and warm speed against NumPy (``make bench``); then numba's own examples against their
hand-written numba versions (``numba_examples.py``).

The folder is the public numpy-benchmarks collection (read at run time, never copied here; see
``../shared/external/README.md``). Each kernel file carries ``#setup: <statements>`` and
``#run: <call>``. For each kernel a subprocess (with a time limit, so a hang or crash is one
row) runs the setup, calls the kernel plainly and compiled on the eager and numba backends on
copies of the same inputs, compares results and argument states (bitwise on eager, within
``rtol=1e-6`` on numba), counts graphs and breaks with ``npdynamo.explain``, and times warm
calls against plain NumPy: each compiled function is first called until its tuner has chosen
(no call runs a tuning step any more), then NumPy and each backend are timed in turns, best of
at least 5 turns and 0.3 s each, inputs copied outside the timed call. One table
follows, then the totals: kernels correct per backend, the share captured as one graph with no
break, the geometric-mean speed-up per backend, and the reason of every remaining break.

    python benchmarks/external.py [DIR] [--backends eager,numba] [--no-time] [--only a,b]
                                  [--suite all|numpy-benchmarks|numba-examples]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

#: ``../shared/external/numpy-benchmarks`` next to the repository (absent in a user's clone).
DEFAULT_FOLDER = Path(__file__).resolve().parents[1].parent / "shared/external/numpy-benchmarks"

CHILD = r"""
import copy, json, os, sys, time, traceback, warnings
import numpy as np
import npdynamo
from benchmarks.common import numpy_benchmark_kernel
from npdynamo.backends.tuning import tuning_calls

path, backends, timing = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "1"

def fresh():
    return numpy_benchmark_kernel(path)

def same(a, b, exact):
    if isinstance(a, (tuple, list)):
        pairs = zip(a, b)
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y, exact) for x, y in pairs)
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a2, b2 = np.asarray(a), np.asarray(b)
        if a2.shape != b2.shape or a2.dtype != b2.dtype or type(a) is not type(b):
            return False
        if exact or a2.dtype.kind not in "fc":
            return bool(np.array_equal(a2, b2, equal_nan=a2.dtype.kind in "fc"))
        return bool(np.allclose(a2, b2, rtol=1e-6, atol=1e-9, equal_nan=True))
    if isinstance(a, float) and not exact:
        return type(a) is type(b) and bool(np.isclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))
    return type(a) is type(b) and (a == b or (a != a and b != b))

def settle(fn, args):
    # warm calls until the tuner has chosen: the numba tier's kernels loaded (after the first
    # call) and a call that ran no tuning step (tuning_calls), at least two calls
    for k in range(200):
        before = tuning_calls()
        fn(*copy.deepcopy(args))
        if k == 0:
            npdynamo.synchronize()  # warm calls are the numba tier's compiled ones
        elif tuning_calls() == before:
            return

def interleaved(fns, args):
    # the best warm time of each function, timed in turns (A, B, A, B, ...: a drift of this
    # shared machine hits all alike) for at least 5 turns and 0.3 s each, at most 3 s each;
    # inputs copied outside the timed call
    best = dict.fromkeys(fns, float("inf"))
    start, turns = time.perf_counter(), 0
    while True:
        for label, fn in fns.items():
            fresh_args = copy.deepcopy(args)
            t0 = time.perf_counter()
            fn(*fresh_args)
            best[label] = min(best[label], time.perf_counter() - t0)
        turns += 1
        spent = time.perf_counter() - start
        if (turns >= 5 and spent > 0.3 * len(fns)) or spent > 3.0 * len(fns):
            return best

row = {"kernel": os.path.splitext(os.path.basename(path))[0]}
try:
    fn, args = fresh()
    row["kernel"] = fn.__name__
    expected_args = copy.deepcopy(args)
    expected = fn(*expected_args)
    explained, explain_args = fresh()
    report = npdynamo.explain(explained)(*explain_args)
    row["graphs"], row["breaks"] = report.graph_count, report.graph_break_count
    row["reasons"] = sorted({f"line {r.lineno}: {r.reason}" for r in report.break_reasons})
    row["python"] = [f"ran in Python: {frame}" for frame in report.python_frames]
    timed = {"numpy": fn}
    for backend in backends:
        plain, got_args = fresh()
        compiled = npdynamo.compile(plain, backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(*got_args)
            exact = backend == "eager"
            row[backend] = same(expected, got, exact) and all(
                same(a, b, exact) for a, b in zip(expected_args, got_args))
            if timing:
                settle(compiled, args)
        timed[backend] = compiled
    if timing:
        settle(fn, args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            best = interleaved(timed, args)
        row.update({label + "_s": t for label, t in best.items()})
except BaseException as exc:  # one row per kernel, whatever happens
    row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
print("ROW" + json.dumps(row))
"""


def run_kernel(path: Path, backends: list[str], timing: bool, timeout: float) -> dict:
    """One kernel in its own process: the row the child prints."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), ",".join(backends), "1" if timing else "0"],
            capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "NPDYNAMO_PROGRESS": "0",
                 "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve()
                                                                  .parents[1]),
                                                             os.environ.get("PYTHONPATH")]))},
        )
    except subprocess.TimeoutExpired:
        return {"kernel": path.stem, "error": f"timeout after {timeout:.0f} s"}
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW")]
    if not rows:
        return {"kernel": path.stem, "error": f"exit {proc.returncode}: {proc.stderr[-200:]}"}
    return json.loads(rows[-1][3:])


def _speedup(row: dict, backend: str) -> float | None:
    if row.get(backend) and row.get("numpy_s") and row.get(backend + "_s"):
        return row["numpy_s"] / row[backend + "_s"]
    return None


def table(rows: list[dict], backends: list[str]) -> str:
    """The per-kernel table and the totals, as printed."""
    head = f"{'kernel':28s}" + "".join(f" {b:>6s}" for b in backends) + "  graphs breaks"
    head += "   numpy" + "".join(f" {b + ' x':>9s}" for b in backends)
    lines = [head, "-" * len(head)]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['kernel']:28s} ERROR {row['error']}")
            continue
        ok = "".join(f" {'ok' if row.get(b) else 'WRONG':>6s}" for b in backends)
        line = f"{row['kernel']:28s}{ok}  {row['graphs']:6d} {row['breaks']:6d}"
        if "numpy_s" in row:
            line += f" {row['numpy_s'] * 1e3:6.2f}ms"
            for b in backends:
                s = _speedup(row, b)
                line += f" {s:9.2f}" if s is not None else f" {'-':>9s}"
        lines.append(line)
    n = len(rows)
    # no break, no frame left to Python (a capture that failed inside runs the whole frame
    # plainly: 0 graphs, 0 breaks) and at most one graph (none: the whole function was captured
    # and its work is dead, e.g. a kernel that returns nothing)
    one_graph = sum(1 for r in rows if "graphs" in r and r["graphs"] <= 1 and r["breaks"] == 0
                    and not r.get("python"))
    lines.append("-" * len(head))
    for b in backends:
        correct = sum(1 for r in rows if r.get(b))
        speedups = [s for s in (_speedup(r, b) for r in rows) if s]
        mean = (math.exp(sum(map(math.log, speedups)) / len(speedups))
                if speedups else float("nan"))
        timed = (f"geometric-mean speed-up over NumPy x{mean:.2f} ({len(speedups)} timed)"
                 if speedups else "not timed")
        lines.append(f"{b}: {correct}/{n} kernels correct; {timed}")
    lines.append(f"captured as one graph with no break: {one_graph}/{n} "
                 f"({100.0 * one_graph / max(n, 1):.0f}%)")
    broken = [r for r in rows if r.get("reasons") or r.get("python")]
    if broken:
        lines.append("remaining breaks:")
        for r in broken:
            for reason in r.get("reasons", []) + r.get("python", []):
                lines.append(f"  {r['kernel']}: {reason}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", default=DEFAULT_FOLDER)
    parser.add_argument("--backends", default="eager,numba")
    parser.add_argument("--no-time", action="store_true", help="skip the warm timings")
    parser.add_argument("--only", default="", help="comma-separated kernel file stems")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--suite", default="all",
                        choices=["all", "numpy-benchmarks", "numba-examples"])
    opts = parser.parse_args([] if argv is None else argv)
    if opts.suite != "numba-examples":
        _numpy_benchmarks(opts)
    if opts.suite != "numpy-benchmarks":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
        from benchmarks import numba_examples

        print()
        only = ["--only", opts.only] if opts.only and opts.suite == "numba-examples" else []
        numba_examples.main((["--no-time"] if opts.no_time else []) + only)


def _numpy_benchmarks(opts: argparse.Namespace) -> None:
    print("== external NumPy kernels (numpy-benchmarks), plain vs compiled")
    if not opts.folder.is_dir():
        print(f"skipped: {opts.folder} is not there (it sits next to the project's own "
              "checkout; pass the folder as an argument)")
        return
    files = sorted(p for p in opts.folder.glob("*.py") if "#run:" in p.read_text())
    if opts.only:
        files = [p for p in files if p.stem in set(opts.only.split(","))]
    backends = opts.backends.split(",")
    rows = []
    for path in files:
        start = time.perf_counter()
        rows.append(run_kernel(path, backends, not opts.no_time, opts.timeout))
        print(f"  {path.stem} done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(table(rows, backends))


if __name__ == "__main__":
    main(sys.argv[1:])
