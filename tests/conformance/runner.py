"""``make conformance``: CPython's own test modules with every test method compiled by npdynamo.

The bar for trust on code nobody here wrote (issue 23): the unittest modules of ``Lib/test`` of the
Python running this (they ship with CPython; none is copied here) run twice, plainly and with each
test method compiled on the eager backend (``child.py``), and every test that passes plainly but
not compiled is a regression. Each module and mode runs in its own subprocess: a test that runs
past the per-test timeout is stopped inside the process; one that crashes the interpreter or
hangs where the timeout cannot reach costs that one test (the parent kills the process, records
the test, and starts the module again after it), never the run.

Output: a table per module (tests, passing plainly, passing compiled, regressions, plain and
compiled seconds), the regressions with their first error line, the capture time per bytecode
instruction stepped through, the 10 slowest captures with what made them slow, and the tests
whose compiled run took more than 3x their plain time plus 2 s (wall time, as the issue's bar
says, with each test's CPU seconds beside it and a count by CPU seconds: on a loaded machine the
wall time of a capture-heavy test stretches with the load).

``python -m tests.conformance.runner [-j JOBS] [--timeout S] [--json FILE] [--report FILE]
[-k TEXT] [MODULE ...]`` (``--report``: summarise a ``--json`` file of an earlier run)
(``-k``, repeatable: only the tests whose id contains one of the TEXTs)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: The modules the issue names, then the others picked to reach past 40.
MODULES = [
    "test_list", "test_dict", "test_tuple", "test_set", "test_range", "test_enumerate",
    "test_sort", "test_scope", "test_int", "test_float", "test_math", "test_bool",
    "test_contains", "test_slice", "test_raise", "test_iter", "test_generators",
    "test_listcomps", "test_string", "test_functools", "test_itertools", "test_operator",
    "test_with", "test_exceptions", "test_augassign", "test_unary", "test_binop",
    "test_compare", "test_opcodes", "test_keywordonlyarg", "test_class", "test_property",
    "test_dataclasses", "test_statistics", "test_fractions", "test_decimal",
    # picked: builtin types, their library cousins and the language's statements
    "test_bisect", "test_heapq", "test_complex", "test_dictviews", "test_defaultdict",
    "test_userlist", "test_userdict", "test_copy", "test_baseexception", "test_deque",
    "test_string_literals", "test_types", "test_bigmem", "test_pow",
]

ROOT = Path(__file__).resolve().parents[2]
PASSING = {"pass"}


def run_module(module: str, mode: str, timeout: float, workdir: Path,
               keep: tuple[str, ...] = ()) -> dict[str, dict]:
    """Every test of ``module`` in ``mode`` (only those whose id contains one of ``keep``, if
    given): {test id: its result record}."""
    out = workdir / f"{module}.{mode}.jsonl"
    out.unlink(missing_ok=True)
    results: dict[str, dict] = {}
    env = dict(os.environ, CONFORMANCE_TEST_TIMEOUT=str(timeout),
               CONFORMANCE_TEST_FILTER="\n".join(keep))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for _attempt in range(50):  # each restart skips at least the test that took the process down
        cmd = [sys.executable, "-m", "tests.conformance.child", module, mode, str(out),
               *results]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        current, seen_at, stalled = None, time.monotonic(), False
        offset = 0
        while proc.poll() is None:
            time.sleep(0.2)
            current, offset, moved = _read_progress(out, offset, results, current)
            if moved:
                seen_at = time.monotonic()
            elif time.monotonic() - seen_at > timeout + 30:
                proc.kill()  # a hang the in-process timeout could not stop
                stalled = True
        stderr = proc.stderr.read() if proc.stderr else ""
        current, offset, _ = _read_progress(out, offset, results, current)
        if current is None:
            if proc.returncode not in (0, None) and not results:
                results[f"{module}.<import>"] = {"status": "crash", "time": 0.0,
                                                 "error": _last_line(stderr)}
            return results
        results[current] = {"status": "hang" if stalled else "crash", "time": 0.0,
                            "error": "killed after a stall" if stalled
                            else f"exit {proc.returncode}: {_last_line(stderr)}"}
    return results


def _read_progress(out: Path, offset: int, results: dict, current: str | None):
    """New lines of the child's output: finished tests into ``results``; the test running."""
    if not out.exists():
        return current, offset, False
    with out.open() as f:
        f.seek(offset)
        data = f.read()
    complete = data[: data.rfind("\n") + 1]
    moved = bool(complete)
    for line in complete.splitlines():
        record = json.loads(line)
        if record["event"] == "start":
            current = record["id"]
        else:
            results[record["id"]] = record
            current = None
    return current, offset + len(complete.encode()), moved


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def run(modules: list[str], jobs: int, timeout: float, keep: tuple[str, ...] = ()) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="npd-conformance-"))
    tasks = [(m, mode) for m in modules for mode in ("plain", "compiled")]
    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda t: run_module(t[0], t[1], timeout, workdir, keep), tasks))
    report: dict = {"python": sys.version.split()[0], "modules": {}}
    for (module, mode), results in zip(tasks, done):
        report["modules"].setdefault(module, {})[mode] = results
    return report


def summarise(report: dict) -> tuple[str, int]:
    """The report's text and its number of regressions."""
    lines = [f"CPython {report['python']} test modules, every test method compiled (eager)", ""]
    header = f"{'module':<22}{'tests':>6}{'plain':>7}{'compiled':>9}{'regr':>6}" \
             f"{'plain s':>9}{'compiled s':>11}{'capture s':>10}{'us/instr':>9}"
    lines += [header, "-" * len(header)]
    totals = [0, 0, 0, 0, 0.0, 0.0]
    regressions, slow, captures = [], [], []
    # over the bar by CPU seconds (the same test's work, whatever the load), of those timed so
    timed_cpu = slow_cpu = 0
    for module, modes in report["modules"].items():
        plain, compiled = modes.get("plain", {}), modes.get("compiled", {})
        ids = list(dict.fromkeys([*plain, *compiled]))
        ok_plain = {i for i in ids if plain.get(i, {}).get("status") in PASSING}
        ok_compiled = {i for i in ids if compiled.get(i, {}).get("status") in PASSING}
        regr = sorted(ok_plain - ok_compiled)
        t_plain = sum(r.get("time", 0.0) for r in plain.values())
        t_compiled = sum(r.get("time", 0.0) for r in compiled.values())
        row = [len(ids), len(ok_plain), len(ok_compiled), len(regr), t_plain, t_compiled]
        totals = [a + b for a, b in zip(totals, row)]
        mod_captures = [c for r in compiled.values() for c in r.get("captures", ())]
        lines.append(f"{module:<22}{row[0]:>6}{row[1]:>7}{row[2]:>9}{row[3]:>6}"
                     f"{row[4]:>9.1f}{row[5]:>11.1f}{_capture_cost(mod_captures)}")
        for test in regr:
            r = compiled.get(test, {"status": "missing", "error": ""})
            regressions.append(f"{test}: [{r['status']}] {r.get('error', '')}")
        for test, r in compiled.items():
            p = plain.get(test)
            if p and r.get("time", 0.0) > 3 * p.get("time", 0.0) + 2.0:
                slow.append((r["time"], p["time"], test, r.get("cpu"), p.get("cpu")))
            if p and "cpu" in r and "cpu" in p:
                timed_cpu += 1
                slow_cpu += r["cpu"] > 3 * p["cpu"] + 2.0
            for c in r.get("captures", ()):
                captures.append((c["s"], c["steps"], test, c))
    lines.append("-" * len(header))
    lines.append(f"{'total':<22}{totals[0]:>6}{totals[1]:>7}{totals[2]:>9}{totals[3]:>6}"
                 f"{totals[4]:>9.1f}{totals[5]:>11.1f}{_capture_cost([c[3] for c in captures])}")
    lines += ["", f"{len(regressions)} regressions (pass plainly, fail compiled):"]
    lines += [f"  {r}" for r in regressions]
    total_s = sum(c[0] for c in captures)
    total_steps = sum(c[1] for c in captures)
    per = 1e6 * total_s / total_steps if total_steps else 0.0
    lines += ["", f"capture: {len(captures)} entries, {total_s:.1f} s, {total_steps} instructions"
                  f" stepped, {per:.0f} us per instruction"]
    lines.append("10 slowest captures:")
    times = Counter((test, c["fn"]) for _s, _steps, test, c in captures)
    for s, steps, test, c in sorted(captures, key=lambda c: -c[0])[:10]:
        why = [f"{steps} instructions", f"{1e6 * s / max(steps, 1):.0f} us each"]
        if times[test, c["fn"]] > 1:  # recaptured: a guard failed (a new value, a new length)
            why.append(f"captured {times[test, c['fn']]} times in this test")
        if c.get("break"):
            why.append(f"graph break: {c['break']}")
        if c.get("python"):
            why.append(f"runs in Python: {c['python']}")
        why += c.get("loops", [])
        lines.append(f"  {s:7.2f} s  {c['fn']} ({test}): " + "; ".join(why))
    lines += ["", f"{len(slow)} compiled test methods over 3x their plain time + 2 s:"]
    lines += [f"  {t:7.2f} s vs {p:.2f} s plain{_cpu(c, pc)}  {test}"
              for t, p, test, c, pc in sorted(slow, key=lambda s: s[:3])[::-1]]
    if timed_cpu:
        lines.append(f"{slow_cpu} of {timed_cpu} over 3x their plain CPU time + 2 s (CPU seconds "
                     "of the test's process: its own work, which the machine's load does not "
                     "stretch)")
    return "\n".join(lines), len(regressions)


def _cpu(compiled: float | None, plain: float | None) -> str:
    """`` (CPU 1.20 s vs 0.01 s)``, for records that carry CPU seconds (older runs do not)."""
    return "" if compiled is None or plain is None else f" (CPU {compiled:.2f} s vs {plain:.2f} s)"


def _capture_cost(captures: list[dict]) -> str:
    """The capture columns of a table row: seconds capturing, microseconds per instruction."""
    seconds, steps = sum(c["s"] for c in captures), sum(c["steps"] for c in captures)
    return f"{seconds:>10.1f}{1e6 * seconds / steps if steps else 0.0:>9.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=MODULES)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per test")
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("-k", dest="keep", action="append", default=[], metavar="TEXT",
                        help="only the tests whose id contains TEXT (repeatable)")
    parser.add_argument("--report", help="only summarise this --json file of an earlier run")
    args = parser.parse_args(argv)
    if args.report:
        report = json.loads(Path(args.report).read_text())
    else:
        report = run(args.modules, args.jobs, args.timeout, tuple(args.keep))
    if args.json:
        Path(args.json).write_text(json.dumps(report))
    text, regressions = summarise(report)
    print(text)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
