"""Run a folder of NumPy kernels written by others, plain and compiled, and compare.

Each kernel file carries two comment lines, ``#setup: <statements>`` and ``#run: <call>`` (the
convention of the public numpy-benchmarks collection). For every kernel and backend this script
runs the setup, calls the kernel plainly and compiled on copies of the same inputs, and prints
whether results and argument states agree (bitwise on ``eager``, ``allclose`` on ``numba``), how
many graphs and breaks ``explain`` counts, the first call's time and, with ``--time``, the warm
speed-up over plain NumPy. Each kernel runs in its own subprocess with a time limit, so a hang or
crash is one row, not the end of the run.

    python benchmarks/external_suite.py DIR [--backends eager,numba] [--time] [--only a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import ast, copy, json, sys, time, traceback, warnings
import numpy as np
import npdynamo

path, backend, timing = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
source = open(path).read()
setup = run = None
for line in source.splitlines():
    if line.startswith("#setup:"):
        setup = line.split(":", 1)[1].strip()
    elif line.startswith("#run:"):
        run = line.split(":", 1)[1].strip()
call = ast.parse(run, mode="eval").body
name = call.func.id

def fresh():
    ns = {"__name__": "kernel"}
    exec(compile(source, path, "exec"), ns)
    exec(setup, ns)
    args = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            args.extend(eval(compile(ast.Expression(a.value), "<run>", "eval"), ns))
        else:
            args.append(eval(compile(ast.Expression(a), "<run>", "eval"), ns))
    return ns, args

def same(a, b, exact):
    if isinstance(a, (tuple, list)):
        pairs = zip(a, b)
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y, exact) for x, y in pairs)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or isinstance(a, np.generic):
        a2, b2 = np.asarray(a), np.asarray(b)
        if a2.shape != b2.shape or a2.dtype != b2.dtype or type(a) is not type(b):
            return False
        if exact or a2.dtype.kind not in "fc":
            return bool(np.array_equal(a2, b2, equal_nan=a2.dtype.kind in "fc"))
        return bool(np.allclose(a2, b2, rtol=1e-6, atol=1e-9, equal_nan=True))
    if isinstance(a, float) and not exact:
        return type(a) is type(b) and bool(np.isclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))
    return type(a) is type(b) and (a == b or (a != a and b != b))

row = {"kernel": name}
try:
    ns, args = fresh()
    expected_args = copy.deepcopy(args)
    t0 = time.perf_counter()
    expected = ns[name](*expected_args)
    row["plain_s"] = time.perf_counter() - t0
    ns2, args2 = fresh()
    fn = npdynamo.compile(ns2[name], backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        got = fn(*args2)
        row["first_call_s"] = time.perf_counter() - t0
    row["warnings"] = sorted({type(w.message).__name__ for w in caught})
    exact = backend == "eager"
    row["result_ok"] = same(expected, got, exact)
    row["args_ok"] = all(same(a, b, exact) for a, b in zip(expected_args, args2))
    ns3, args3 = fresh()
    report = npdynamo.explain(ns3[name])(*args3)
    row["graphs"] = report.graph_count
    row["breaks"] = report.graph_break_count
    row["reasons"] = sorted({r.reason[:90] for r in report.break_reasons})[:3]
    if timing:
        def best(f, a):
            times = []
            for _ in range(5):
                c = copy.deepcopy(a)
                t0 = time.perf_counter(); f(*c); times.append(time.perf_counter() - t0)
            return min(times)
        row["speedup"] = best(ns[name], args) / best(fn, args)
except BaseException as exc:  # one row per kernel, whatever happens
    row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    row["where"] = traceback.format_exc().strip().splitlines()[-3][:160]
print("ROW" + json.dumps(row))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--backends", default="eager,numba")
    parser.add_argument("--time", action="store_true", help="also time warm calls")
    parser.add_argument("--only", default="", help="comma-separated kernel file stems")
    parser.add_argument("--timeout", type=float, default=180.0)
    opts = parser.parse_args()
    files = sorted(opts.folder.glob("*.py"))
    if opts.only:
        wanted = set(opts.only.split(","))
        files = [f for f in files if f.stem in wanted]
    totals: dict[str, list[int]] = {}
    for backend in opts.backends.split(","):
        ok = total = 0
        print(f"== backend {backend}")
        for path in files:
            if "#run:" not in path.read_text():
                continue
            total += 1
            start = time.perf_counter()
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, str(path), backend, "1" if opts.time else "0"],
                    capture_output=True,
                    text=True,
                    timeout=opts.timeout,
                    env={**os.environ, "NPDYNAMO_PROGRESS": "0"},
                )
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW")]
                row = (
                    json.loads(lines[-1][3:])
                    if lines
                    else {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"}
                )
            except subprocess.TimeoutExpired:
                row = {"error": f"timeout after {opts.timeout:.0f} s"}
            good = "error" not in row and row.get("result_ok") and row.get("args_ok")
            ok += bool(good)
            status = "ok  " if good else ("ERR " if "error" in row else "DIFF")
            detail = row.get("error") or (
                f"graphs {row['graphs']} breaks {row['breaks']} "
                f"first {row['first_call_s']:.2f}s"
                + (f" x{row['speedup']:.2f}" if "speedup" in row else "")
                + (f" warn {row['warnings']}" if row.get("warnings") else "")
                + (f" | {row['reasons'][0]}" if row.get("reasons") else "")
            )
            print(f"{status} {path.stem:28s} {time.perf_counter() - start:6.1f}s  {detail}")
            if "where" in row:
                print(f"       at {row['where']}")
            sys.stdout.flush()
        totals[backend] = [ok, total]
        print(f"== {backend}: {ok}/{total} kernels agree with plain NumPy")
    print("== summary: " + ", ".join(f"{b} {o}/{t}" for b, (o, t) in totals.items()))


if __name__ == "__main__":
    main()
