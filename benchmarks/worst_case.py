"""The worst cases of "never worse than Python", plain against compiled in one run.

Each case runs in its own child process with a time limit, so a case that crashes, hangs or is
very slow prints its failure and the others still run:

* a loop with ``print`` in its body (stdout to /dev/null): first and warm call against plain
  Python, with a tiny body (100,000 iterations on 4 elements: the cost of the hand-overs alone)
  and with moderate array work (20,000 iterations on 1,000 elements);
* a ``while err > tol:`` loop on an array value (a break every iteration, with
  ``config.capture_while_loops`` off: by default such a loop is one ``while_loop`` node);
* a function called past ``cache_size_limit``: a call that no entry serves, against plain;
* a function using a passed-in ``np.random.Generator``, called 20 times: entries captured;
* 8 threads making the first call at once (a barrier): entries captured;
* capture time of an unrolled loop at four lengths on the eager backend (ops per second: the
  same at every length when capture is linear), for an elementwise chain and for slice updates
  (``config.capture_for_loops`` off: these loops would be formed into one ``fori_loop`` node);
* a 1,000-op unrolled loop on the numba backend: first call with an empty kernel cache.

Run by ``make bench``; ``python benchmarks/worst_case.py`` alone takes about a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME_LIMIT_S = 30.0
_MARK = "RESULT "


# -- the cases (each runs in a child process and returns a dict) ------------------------------

def _median_time(fn, *args, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def _loop_body(x):
    # moderate array work between the breaks: what the compiled graph is for
    y = np.tanh(x) * 0.5 + 1.0
    return y / (1.0 + np.abs(y)) - 0.25 * x


def print_loop(size: int = 4, n: int = 100_000) -> dict:
    import contextlib

    import npdynamo

    def loop(x, n):
        for i in range(n):
            x = _loop_body(x)
            print(i)
        return x

    x = np.linspace(-1.0, 1.0, size)
    compiled = npdynamo.compile(loop)
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        start = time.perf_counter()
        compiled(x, n)
        first = time.perf_counter() - start
        plain = _median_time(loop, x, n)
        warm = _median_time(compiled, x, n)
    same = bool(np.array_equal(loop(x, 3), compiled(x, 3)))
    return {"plain": plain, "compiled": warm, "first": first, "n": n, "correct": same}


def while_loop() -> dict:
    import npdynamo

    # the break machinery: such a loop is otherwise captured whole (a while_loop node)
    saved, npdynamo.config.capture_while_loops = npdynamo.config.capture_while_loops, False
    try:
        return _while_loop()
    finally:
        npdynamo.config.capture_while_loops = saved


def _while_loop() -> dict:
    import npdynamo

    def solve(x, tol):
        err = np.abs(x).max()
        while err > tol:  # a branch on an array value: a graph break every iteration
            x = 0.99 * x - 0.006 * np.tanh(x)  # contracts towards 0: about 430 iterations
            err = np.abs(x).max()
        return x

    x, tol = np.linspace(-1.0, 1.0, 1_000), 1e-3
    compiled = npdynamo.compile(solve)
    steps = 0
    y = x
    while np.abs(y).max() > tol:
        y, steps = 0.99 * y - 0.006 * np.tanh(y), steps + 1
    start = time.perf_counter()
    got = compiled(x, tol)
    first = time.perf_counter() - start
    return {"plain": _median_time(solve, x, tol), "compiled": _median_time(compiled, x, tol),
            "first": first, "correct": bool(np.array_equal(got, solve(x, tol))), "n": steps}


def past_cache_limit() -> dict:
    import warnings

    import numpy as np

    import npdynamo

    def add(x, k):
        return x + k

    x = np.ones(3)
    compiled = npdynamo.compile(add, dynamic=False)  # k would else become a graph input
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(npdynamo.config.cache_size_limit + 1):
            compiled(x, k)
        # k = 1000 is served by no entry: the function is past its limit
        return {"plain": _per_call(add, x, 1000), "compiled": _per_call(compiled, x, 1000)}


def _per_call(fn, *args) -> float:
    from benchmarks.common import measure

    return measure(fn, *args, samples=7, min_sample_s=0.01)["median"]


def generator_method() -> dict:
    import numpy as np

    import npdynamo
    from npdynamo.capture.hooks.cache import compiled_entries

    def noisy(rng, x):
        return x * 2.0 + rng.standard_normal(4)

    rng = np.random.default_rng(0)
    compiled = npdynamo.compile(noisy)
    for _ in range(20):
        compiled(rng, np.ones(4))
    return {"entries": len(compiled_entries(compiled)),
            "plain": _per_call(noisy, rng, np.ones(4)),
            "compiled": _per_call(compiled, rng, np.ones(4))}


def racing_threads() -> dict:
    import threading

    import numpy as np

    import npdynamo
    from npdynamo.capture.hooks.cache import compiled_entries

    def work(x):
        for _ in range(50):
            x = x * 0.5 + 1.0
        return x

    compiled = npdynamo.compile(work)
    barrier = threading.Barrier(8)
    errors = []

    def first_call():
        barrier.wait()
        try:
            compiled(np.ones(4))
        except Exception as exc:  # reported, not raised in a thread
            errors.append(repr(exc))

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"entries": len(compiled_entries(compiled)), "errors": errors[:1]}


def _unrolled(style: str, ops: int):
    import numpy as np

    if style == "chain":
        def f(x, y):
            for _ in range(ops // 2):
                x = x * 0.5 + y
            return x
    elif style == "slices":
        def f(a, y):
            for i in range(ops // 4):  # getitem, mul, add, setitem
                a[i % 8, :] = a[i % 8, :] * 0.5 + y
            return a
    else:  # "body4": mul, add, sqrt, mul
        def f(x, y):
            for _ in range(ops // 4):
                x = np.sqrt(x * x + y) * 0.5
            return x
    return f, (np.random.default_rng(0).random((8, 64)), np.random.default_rng(1).random(64))


def unrolled_capture(style: str) -> dict:
    import npdynamo

    # the loop unrolled, as a loop that cannot be formed is (a formable one is one fori_loop
    # node, whose capture does not grow with the trip count at all)
    npdynamo.config.capture_for_loops = False
    rows = {}
    # slice updates capture ~20x slower per op than a pure chain today: shorter lengths
    for ops in (1000, 2000, 4000, 8000) if style == "chain" else (250, 500, 1000, 2000):
        fn, args = _unrolled(style, ops)
        compiled = npdynamo.compile(fn, backend="eager")
        start = time.perf_counter()
        compiled(*(a.copy() for a in args))
        rows[ops] = time.perf_counter() - start
    return {"seconds": rows}


def numba_first_call() -> dict:
    import numpy as np

    import npdynamo

    npdynamo.config.capture_for_loops = False  # the loop unrolled: 1,000 ops in the graph
    fn, args = _unrolled("body4", 1000)
    compiled = npdynamo.compile(fn, backend="numba")
    start = time.perf_counter()
    got = compiled(*args)
    first = time.perf_counter() - start
    ok = bool(np.allclose(got, fn(*args)))
    return {"first": first, "correct": ok, "plain": _per_call(fn, *args),
            "compiled": _per_call(compiled, *args)}


CASES = {
    "print_loop": print_loop,
    "print_loop_1000": lambda: print_loop(size=1_000, n=20_000),
    "while_loop": while_loop,
    "past_cache_limit": past_cache_limit,
    "generator_method": generator_method,
    "racing_threads": racing_threads,
    "capture_chain": lambda: unrolled_capture("chain"),
    "capture_slices": lambda: unrolled_capture("slices"),
    "numba_1000_ops": numba_first_call,
}


# -- the parent: one child per case, then the table ------------------------------------------

def _run_case(name: str, env: dict) -> tuple[dict | None, str]:
    try:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", name],
                             env=env, cwd=ROOT, capture_output=True, text=True,
                             timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {TIME_LIMIT_S:.0f} s"
    for line in out.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK):]), ""
    tail = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    return None, f"failed (exit {out.returncode}): {tail[-1] if tail else 'no output'}"


def _t(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.2f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds:9.2f} s "


def _row(label: str, plain: float | None, compiled: float | None, note: str = "") -> None:
    p = _t(plain) if plain is not None else " " * 12
    c = _t(compiled) if compiled is not None else " " * 12
    ratio = f"{compiled / plain:7.2f}x" if plain and compiled is not None else " " * 8
    print(f"  {label:<44} {p} {c} {ratio}  {note}")


def _report(name: str, r: dict) -> None:
    if name.startswith("print_loop"):
        what = "tiny body (4 elements)" if name == "print_loop" else "body on 1,000 elements"
        _row(f"loop with print, {r['n']:,} iters, {what}", r["plain"], r["compiled"],
             f"first call {r['first']:.2f} s" + ("" if r["correct"] else "; WRONG RESULT"))
    elif name == "while_loop":
        _row(f"while err > tol on 1,000 elements, {r['n']} iters", r["plain"], r["compiled"],
             f"first call {r['first']:.2f} s" + ("" if r["correct"] else "; WRONG RESULT"))
    elif name == "past_cache_limit":
        _row("call past cache_size_limit", r["plain"], r["compiled"])
    elif name == "generator_method":
        _row("passed-in Generator method, 20 calls", r["plain"], r["compiled"],
             f"{r['entries']} entr{'y' if r['entries'] == 1 else 'ies'} captured")
    elif name == "racing_threads":
        note = f"{r['entries']} entr{'y' if r['entries'] == 1 else 'ies'} captured"
        _row("8 racing first calls (barrier)", None, None,
             note + (f"; error: {r['errors'][0]}" if r["errors"] else ""))
    elif name.startswith("capture_"):
        secs = {int(k): v for k, v in r["seconds"].items()}
        base = secs[min(secs)] / min(secs)
        for ops, s in sorted(secs.items()):
            _row(f"capture, unrolled {name[8:]}, {ops:,} ops (eager)", None, s,
                 f"{ops / s:8,.0f} ops/s, {s / ops / base:4.2f}x the time per op at "
                 f"{min(secs):,}")
    elif name == "numba_1000_ops":
        _row("1,000-op unrolled loop, numba: first call", None, r["first"],
             "empty kernel cache" + ("" if r["correct"] else "; WRONG RESULT"))
        _row("1,000-op unrolled loop, numba: warm call", r["plain"], r["compiled"])


def main() -> None:
    print("Worst cases: plain Python against compiled, in one run "
          "(ratio = compiled / plain: above 1 is slower than plain)")
    print(f"  {'case':<44} {'plain':>12} {'compiled':>12} {'ratio':>8}")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NPDYNAMO_CACHE_DIR=cache, NPDYNAMO_PROGRESS="0")
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        for name in CASES:
            result, failure = _run_case(name, env)
            if result is None:
                print(f"  {name:<44} {failure}")
            else:
                _report(name, result)
            sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        sys.path.insert(0, ROOT)
        print(_MARK + json.dumps(CASES[sys.argv[2]]()))
    else:
        main()
