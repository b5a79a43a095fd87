"""The first calls, end to end: a kernel compiled on numba against plain NumPy (``make bench``).

For each kernel of ``../shared/external/numpy-benchmarks`` (``#setup:``/``#run:`` lines, as in
``external.py``) and ``../shared/external/numba-examples`` (``manifest.json``, size "S"), read
at run time, a fresh process with an empty ``NPDYNAMO_CACHE_DIR`` times:

* the first N calls (N = 1, 10, 100) of the plain function, cumulative;
* the same N calls of ``npdynamo.compile(fn, backend="numba")``, capture and compile included
  (tiers as configured: by default the eager tier serves calls while workers compile);
* the time from the first compiled call until the compiled tier serves calls (every graph
  switched: ``npdynamo.synchronize()`` after the 100 calls if it was not yet);
* capture time per bytecode instruction of the kernel (``npdynamo.explain`` on the eager
  backend, in the same process after the above).

The target of issue 24: N compiled calls take at most 1.2x plain NumPy's N calls + 0.5 s. Rows
over it are marked ``>``. Calls run on the same (copied once) inputs; a kernel that writes its
arguments drifts the same way plain and compiled.

    python benchmarks/first_call.py [--only a,b] [--suite numpy-benchmarks,numba-examples]
                                    [--blocking] [--timeout S] [--external DIR]
                                    [--backend numba|eager]

``--backend eager`` times the eager backend instead (issue 24: its first call <= 1 s on every
kernel; the ready column is then 0).

``--per-call`` shows where the time of the first 100 calls goes instead: each call of the plain
function and of the compiled one, interleaved (plain call k, then compiled call k, on copies of
the inputs: both share whatever the machine and the background compile leave them), and what
served each compiled call: ``eager`` (the eager tier), ``python`` (plain Python while
compiling), ``switch`` (the call that switched to the compiled tier), ``tune`` (a tuning
call) or ``compiled``. A sum per kind follows. Interleaving shows the compiled calls' own cost;
the table's sequential runs add what the background compile takes from the calls.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.quiet import foreign_load

EXTERNAL = Path(__file__).resolve().parents[1].parent / "shared/external"
COUNTS = (1, 10, 100)
BUDGET_RATIO, BUDGET_S = 1.2, 0.5

CHILD = r"""
import copy, dis, json, sys, time, warnings
import numpy as np

kind, where, name = sys.argv[1], sys.argv[2], sys.argv[3]
counts = [int(c) for c in sys.argv[4].split(",")]
backend = sys.argv[5]
per_call = sys.argv[6] == "1"
timeline = sys.argv[7] == "1"

def load():
    if kind == "numpy-benchmarks":
        from benchmarks.common import numpy_benchmark_kernel
        return (*numpy_benchmark_kernel(where), {})
    ns = {"__name__": "kernel"}
    path = where + "/numpy_impl.py"
    exec(compile(open(path).read(), path, "exec"), ns)
    ins = {"__name__": "inputs"}
    exec(compile(open(where + "/inputs.py").read(), where + "/inputs.py", "exec"), ins)
    args, kwargs = ins["make_inputs"]("S")
    return ns[name], list(args), kwargs

def timed(fn, args, kwargs, after=None, served=None, calls=None):
    marks, ready = {}, None
    start = time.perf_counter()
    for k in range(1, max(counts) + 1):
        before = served() if served else None
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        now = time.perf_counter()
        if served:
            calls.append([t0 - start, now - t0, served.kind(before, served())])
        if after is not None and ready is None and after():
            ready = now - start
        if k in counts:
            marks[k] = now - start
    return marks, ready, start

class Served:
    # what served a compiled call: compare the state before and after it (kind)

    def __init__(self):
        self.seen = []

    def __call__(self):
        from npdynamo.backends import tiers, tuning
        with tiers._pending_lock:
            self.seen.extend(t for t in tiers._pending if t not in self.seen)
        return (sum(t.eager_calls for t in self.seen), sum(t.plain_calls for t in self.seen),
                sum(t.switched for t in self.seen), tuning.tuning_calls())

    @staticmethod
    def kind(before, after):
        kinds = [k for k, b, a in zip(("eager", "python", "switch", "tune"), before, after)
                 if a > b]
        return kinds[0] if kinds else "compiled"

def interleaved(fn, compiled, args, kwargs):
    plain_in, ours = copy.deepcopy((args, kwargs)), copy.deepcopy((args, kwargs))
    served, calls = Served(), []
    for _ in range(max(counts)):
        t0 = time.perf_counter()
        fn(*plain_in[0], **plain_in[1])
        t1 = time.perf_counter()
        before = served()
        t2 = time.perf_counter()
        compiled(*ours[0], **ours[1])
        t3 = time.perf_counter()
        calls.append([t1 - t0, t3 - t2, served.kind(before, served())])
    return calls

def sequential(fn, args, kwargs):
    import npdynamo
    from npdynamo.backends import tiers
    row = {}
    row["numpy"], _, _ = timed(fn, copy.deepcopy(args), copy.deepcopy(kwargs))
    compiled = npdynamo.compile(fn, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = [] if timeline else None
        marks, ready, start = timed(compiled, copy.deepcopy(args), copy.deepcopy(kwargs),
                                    lambda: tiers.pending() == 0,
                                    Served() if timeline else None, calls)
        if timeline:
            row["timeline"] = calls
        if ready is None:
            npdynamo.synchronize()
            ready = time.perf_counter() - start
    row["compiled"], row["ready_s"] = marks, ready
    report = npdynamo.explain(fn)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    instructions = sum(1 for _ in dis.get_instructions(fn))
    row["capture_us_per_instr"] = report.compile_time_s / max(instructions, 1) * 1e6
    row["instructions"] = instructions
    return row

row = {}
try:
    fn, args, kwargs = load()
    if per_call:
        import npdynamo
        compiled = npdynamo.compile(fn, backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row["calls"] = interleaved(fn, compiled, args, kwargs)
    else:
        row.update(sequential(fn, args, kwargs))
except BaseException as exc:
    row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
print("ROW" + json.dumps(row))
"""




def kernels(suites: list[str], only: set[str],
            external: Path = EXTERNAL) -> list[tuple[str, str, str, str]]:
    """(suite, location, function name, row label) of every kernel found."""
    found = []
    if "numpy-benchmarks" in suites:
        folder = external / "numpy-benchmarks"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            if "#run:" in path.read_text():
                found.append(("numpy-benchmarks", str(path), "", path.stem))
    if "numba-examples" in suites:
        manifest = external / "numba-examples" / "manifest.json"
        if manifest.is_file():
            for k in json.loads(manifest.read_text())["kernels"]:
                found.append(("numba-examples", str(manifest.parent / k["folder"]),
                              k["numpy_function"], k["name"]))
    return [k for k in found if not only or k[3] in only]


def run_one(suite: str, where: str, name: str, blocking: bool, timeout: float,
            backend: str = "numba", per_call: bool = False, timeline: bool = False) -> dict:
    """One kernel in a fresh process with an empty kernel cache."""
    with tempfile.TemporaryDirectory(prefix="npdynamo-first-call-") as cache:
        env = {**os.environ, "NPDYNAMO_CACHE_DIR": cache, "NPDYNAMO_PROGRESS": "0",
               "NPDYNAMO_TIERED": "0" if blocking else "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [
                   str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]))}
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, suite, where, name, ",".join(map(str, COUNTS)),
                 backend, "1" if per_call else "0", "1" if timeline else "0"],
                capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
    rows = [line for line in proc.stdout.splitlines() if line.startswith("ROW")]
    if not rows:
        return {"error": f"exit {proc.returncode}: {proc.stderr[-200:]}"}
    return json.loads(rows[-1][3:])


def within(numpy_s: float, numba_s: float) -> bool:
    return numba_s <= BUDGET_RATIO * numpy_s + BUDGET_S


def table(rows: list[tuple[str, dict]], backend: str = "numba") -> str:
    head = (f"{'kernel':26s}" + "".join(f" {'numpy x' + str(n):>10s} {backend:>8s}" for n in COUNTS)
            + f" {'ready':>7s} {'capture':>11s}")
    lines = [head, "-" * len(head)]
    ready = []
    met = dict.fromkeys(COUNTS, 0)
    for label, row in rows:
        if "error" in row:
            lines.append(f"{label:26s} ERROR {row['error']}")
            continue
        line = f"{label:26s}"
        for n in COUNTS:
            a, b = row["numpy"][str(n)], row["compiled"][str(n)]
            ok = within(a, b)
            met[n] += ok
            line += f" {a:9.3f}s {b:7.3f}s{' ' if ok else '>'}"
        ready.append(row["ready_s"])
        line += f" {row['ready_s']:6.2f}s {row['capture_us_per_instr']:8.0f}us/i"
        lines.append(line)
    lines.append("-" * len(head))
    measured = len(ready)
    for n in COUNTS:
        lines.append(f"first {n} call(s) within {BUDGET_RATIO}x NumPy + {BUDGET_S} s: "
                     f"{met[n]}/{measured}")
    if ready:
        lines.append(f"compiled tier serving calls after: median {statistics.median(ready):.2f} s,"
                     f" max {max(ready):.2f} s")
    return "\n".join(lines)


def per_call_table(label: str, row: dict) -> str:
    """One kernel's interleaved calls (``--per-call``): the first ten, then each tenth and each
    call served otherwise than the one before; then the sums per kind of call."""
    if "error" in row:
        return f"{label}: ERROR {row['error']}"
    lines = [f"== {label}: call, plain ms, compiled ms, served by, compiled - plain so far (s)"]
    extra, previous = 0.0, None
    sums: dict[str, list[float]] = {}
    for k, (plain, ours, kind) in enumerate(row["calls"], 1):
        extra += ours - plain
        total = sums.setdefault(kind, [0, 0.0, 0.0])
        total[0] += 1
        total[1] += plain
        total[2] += ours
        if k <= 10 or k % 10 == 0 or kind != previous:
            lines.append(f"{k:5d} {plain * 1e3:9.2f} {ours * 1e3:9.2f}  {kind:8s} {extra:7.3f}")
        previous = kind
    for kind, (n, plain, ours) in sums.items():
        lines.append(f"  {kind:8s}: {n:3d} calls, plain {plain:.3f} s, compiled {ours:.3f} s "
                     f"({ours / max(plain, 1e-9):.2f}x)")
    return "\n".join(lines)


def _over(row: dict) -> bool:
    n = str(max(COUNTS))
    return "error" not in row and not within(row["numpy"][n], row["compiled"][n])


def timeline_table(label: str, row: dict) -> str:
    """One kernel's compiled calls in the table's own sequential run (``--timeline``): runs of
    calls served alike, when they began and what they cost against plain NumPy's mean call."""
    if "error" in row or "timeline" not in row:
        return f"{label}: ERROR {row.get('error', 'no timeline')}"
    plain = row["numpy"][str(max(COUNTS))] / max(COUNTS)
    lines = [f"== {label}: calls, served by, began at (s), seconds, mean ms (plain NumPy "
             f"{plain * 1e3:.2f} ms), extra over plain (s)"]
    runs: list[list] = []
    for k, (began, took, kind) in enumerate(row["timeline"], 1):
        if runs and runs[-1][2] == kind:
            runs[-1][1], runs[-1][4] = k, runs[-1][4] + took
        else:
            runs.append([k, k, kind, began, took])
    for first, last, kind, began, took in runs:
        n = last - first + 1
        lines.append(f"  {first:3d}-{last:<3d} {kind:8s} {began:7.3f} {took:7.3f} "
                     f"{took / n * 1e3:8.2f} {took - n * plain:+7.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    parser.add_argument("--suite", default="numpy-benchmarks,numba-examples")
    parser.add_argument("--blocking", action="store_true", help="tiers off (NPDYNAMO_TIERED=0)")
    parser.add_argument("--backend", default="numba", choices=("numba", "eager"),
                        help="eager: the first calls of the eager backend (issue 24: <= 1 s)")
    parser.add_argument("--per-call", action="store_true",
                        help="each of the first 100 calls, plain and compiled interleaved")
    parser.add_argument("--timeline", default="",
                        help="comma-separated kernels whose compiled calls the table's run "
                        "records one by one (what served each, what it cost); 'over': those "
                        "of every row over the budget at 100 calls")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--external", type=Path, default=EXTERNAL,
                        help="the folder holding numpy-benchmarks and numba-examples")
    opts = parser.parse_args([] if argv is None else argv)
    mode = "blocking compile" if opts.blocking else "tiered"
    print(f"== the first calls end to end, {opts.backend} backend ({mode}) vs NumPy, fresh "
          "process and empty kernel cache per kernel")
    found = kernels(opts.suite.split(","), set(filter(None, opts.only.split(","))),
                    opts.external)
    if not found:
        print(f"skipped: no kernels under {opts.external} (it sits next to the project's own "
              "checkout)")
        return
    rows, loads = [], []
    for suite, where, name, label in found:
        with foreign_load() as load:
            rows.append((label, run_one(suite, where, name, opts.blocking, opts.timeout,
                                        opts.backend, opts.per_call,
                                        opts.timeline == "over"
                                        or label in opts.timeline.split(","))))
        loads.append(load.cores)
        print(f"  {label}: done", file=sys.stderr, flush=True)
        if opts.per_call:
            print(per_call_table(label, rows[-1][1])
                  + f"\n  (other processes used {load.cores:.1f} cores meanwhile)", flush=True)
    if not opts.per_call:
        print(table(rows, opts.backend))
        for label, row in rows:
            if label in opts.timeline.split(",") or (opts.timeline == "over" and _over(row)):
                print(timeline_table(label, row))
    print(f"other processes used {statistics.median(loads):.1f} cores (median over the "
          f"kernels; max {max(loads):.1f}) of {os.cpu_count()} while these ran")


if __name__ == "__main__":
    main(sys.argv[1:])
