"""numba's own examples, NumPy kernels paired with their hand-written numba versions: plain NumPy,
npdynamo eager, npdynamo numba and the hand-written numba, warm and on the first call
(``make bench``, through ``external.py``).

The folder is ``../shared/external/numba-examples`` (read at run time, never copied here; its
README and ``manifest.json`` name each kernel's functions, the arguments it writes and the
tolerances). Each kernel runs in its own process with a time limit (a hang or crash is one
row): it loads the folder's three modules by path, makes the inputs, checks every variant
against NumPy's result with the manifest's tolerances (the return value, or the written
arguments), counts graphs and breaks (``npdynamo.explain``) and numba fallback warnings, times
each variant's first call on fresh inputs (compilation included), then times warm calls of the
four variants interleaved in one process (``common.interleaved``: medians over turns, so a drift
of this shared machine slows them alike; each variant has its own copy of the inputs).

    python benchmarks/numba_examples.py [DIR] [--size S|M] [--only a,b] [--one-thread]
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


def external_folder(name: str) -> Path:
    """``shared/external/<name>`` in the nearest folder above the repository that has it (the
    checkout's parent; a git worktree may sit a level deeper), else where it would be."""
    root = Path(__file__).resolve().parents[1]
    for above in root.parents:
        if (above / "shared/external" / name).is_dir():
            return above / "shared/external" / name
    return root.parent / "shared/external" / name


#: ``../shared/external/numba-examples`` next to the repository (absent in a user's clone).
DEFAULT_FOLDER = external_folder("numba-examples")
VARIANTS = ("numpy", "eager", "numba", "hand")

CHILD = r"""
import copy, importlib.util, json, sys, time, warnings
import numpy as np
import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning
from benchmarks.common import interleaved

folder, spec, size, timing = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"

def load(stem):
    path = f"{folder}/{spec['folder']}/{stem}.py"
    module_spec = importlib.util.spec_from_file_location(f"nbx_{spec['folder']}_{stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module

def close(ref, out):
    if isinstance(ref, (tuple, list)):
        return isinstance(out, (tuple, list)) and len(ref) == len(out) and all(
            close(a, b) for a, b in zip(ref, out))
    try:
        return bool(np.allclose(ref, out, rtol=spec["rtol"], atol=spec["atol"],
                                equal_nan=spec["equal_nan"]))
    except (TypeError, ValueError):
        return False

def compared(result, args):
    if spec["compare"] == "writes_args":
        return tuple(args[i] for i in spec["writes_args"])
    return result

row = {"kernel": spec["name"]}
try:
    inputs = load("inputs")
    plain = getattr(load("numpy_impl"), spec["numpy_function"])
    hand = getattr(load("numba_impl"), spec["numba_function"])
    args, kwargs = inputs.make_inputs(size)
    fns = {"numpy": plain, "eager": npdynamo.compile(plain, backend="eager"),
           "numba": npdynamo.compile(plain, backend="numba"), "hand": hand}
    with np.errstate(all="ignore"):
        ref_args = copy.deepcopy(args)
        ref = compared(plain(*ref_args, **kwargs), ref_args)
        explained = npdynamo.explain(plain)(*copy.deepcopy(args), **kwargs)
        row["graphs"], row["breaks"] = explained.graph_count, explained.graph_break_count
        row["reasons"] = sorted({f"line {r.lineno}: {r.reason}" for r in explained.break_reasons})
        row["fallbacks"] = 0
        for label in VARIANTS[1:]:
            own = copy.deepcopy(args)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                got = fns[label](*own, **kwargs)
                row[label + "_first_s"] = time.perf_counter() - t0
            row["fallbacks"] += sum(w.category is NumbaFallbackWarning for w in caught)
            row[label] = close(ref, compared(got, own))
        if timing:
            own = {label: copy.deepcopy(args) for label in fns}
            calls = {label: (lambda *a, _f=fn: _f(*a, **kwargs)) for label, fn in fns.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                times = interleaved(calls, own, samples=7, min_sample_s=0.01)
            for label in fns:
                row[label + "_s"] = times[label]["median"]
            row["others"] = times["numpy"]["others"]
except BaseException as exc:  # one row per kernel, whatever happens
    row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
print("ROW" + json.dumps(row))
"""
VARIANTS_CHILD = f"VARIANTS = {VARIANTS!r}\n"


def run_kernel(folder: Path, spec: dict, size: str, timing: bool, timeout: float,
               one_thread: bool) -> dict:
    """One kernel in its own process: the row the child prints."""
    env = {**os.environ, "NPDYNAMO_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH")]))}
    if one_thread:
        env.update(NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", VARIANTS_CHILD + CHILD, str(folder), json.dumps(spec), size,
             "1" if timing else "0"],
            capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"kernel": spec["name"], "error": f"timeout after {timeout:.0f} s"}
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW")]
    if not rows:
        return {"kernel": spec["name"], "error": f"exit {proc.returncode}: {proc.stderr[-200:]}"}
    return json.loads(rows[-1][3:])


def _ratio(row: dict, num: str, den: str) -> float | None:
    """How many times faster ``den`` runs than ``num`` (both correct and timed)."""
    if all(row.get(v) for v in (num, den) if v != "numpy") and row.get(num + "_s") and \
            row.get(den + "_s"):
        return row[num + "_s"] / row[den + "_s"]
    return None


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def table(rows: list[dict]) -> str:
    """The per-kernel table and the totals, as printed."""
    head = (f"{'kernel':26s}  eager numba  hand  graphs breaks fallbacks   numpy"
            "  eager x  numba x   hand x  numba/hand  1st numba  1st hand")
    lines = [head, "-" * len(head)]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['kernel']:26s}  ERROR {row['error']}")
            continue
        ok = "".join(f" {'ok' if row.get(v) else 'WRONG':>5s}" for v in VARIANTS[1:])
        line = f"{row['kernel']:26s} {ok}  {row['graphs']:6d} {row['breaks']:6d} " \
               f"{row['fallbacks']:9d}"
        if "numpy_s" in row:
            line += f" {row['numpy_s'] * 1e3:6.2f}ms"
            for v in VARIANTS[1:]:
                s = _ratio(row, "numpy", v)
                line += f" {s:8.2f}" if s is not None else f" {'-':>8s}"
            s = _ratio(row, "hand", "numba")
            line += f" {s:11.2f}" if s is not None else f" {'-':>11s}"
        line += f" {row['numba_first_s']:9.2f}s {row['hand_first_s']:8.2f}s"
        lines.append(line)
    lines.append("-" * len(head))
    n = len(rows)
    for v in VARIANTS[1:]:
        correct = sum(1 for r in rows if r.get(v))
        speedups = [s for s in (_ratio(r, "numpy", v) for r in rows) if s]
        lines.append(f"{v}: {correct}/{n} correct; geometric-mean speed-up over NumPy "
                     f"x{_geomean(speedups):.2f} ({len(speedups)} timed)")
    against = [s for s in (_ratio(r, "hand", "numba") for r in rows) if s]
    if against:
        lines.append(f"npdynamo numba against hand-written numba: geometric mean "
                     f"x{_geomean(against):.2f}, lowest x{min(against):.2f} ({len(against)} "
                     "kernels; 1.0 = as fast)")
    fallbacks = sum(r.get("fallbacks", 0) for r in rows)
    lines.append(f"numba fallback warnings: {fallbacks}")
    for r in rows:
        for reason in r.get("reasons", []):
            lines.append(f"  break in {r['kernel']}: {reason}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", default=DEFAULT_FOLDER)
    parser.add_argument("--size", default="S", choices=["S", "M"])
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    parser.add_argument("--no-time", action="store_true", help="skip the warm timings")
    parser.add_argument("--one-thread", action="store_true",
                        help="NUMBA_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1 in each kernel's "
                             "process (the suite's README measures so)")
    parser.add_argument("--timeout", type=float, default=600.0)
    opts = parser.parse_args([] if argv is None else argv)
    print(f"== numba-examples ({opts.size}): NumPy, npdynamo eager/numba, hand-written numba")
    manifest = opts.folder / "manifest.json"
    if not manifest.is_file():
        print(f"skipped: {opts.folder} is not there (it sits next to the project's own "
              "checkout; pass the folder as an argument)")
        return
    specs = json.loads(manifest.read_text())["kernels"]
    if opts.only:
        specs = [s for s in specs if s["name"] in set(opts.only.split(","))]
    rows = []
    for spec in specs:
        start = time.perf_counter()
        rows.append(run_kernel(opts.folder, spec, opts.size, not opts.no_time, opts.timeout,
                               opts.one_thread))
        print(f"  {spec['name']} done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
