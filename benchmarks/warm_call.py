"""What a warm call costs around the machine code (issue 25): ``python -m benchmarks.warm_call``.

Per kernel of the loop corpus (``benchmarks/loop_kernels.py``, small size) whose graph runs
as one numba function (``loop_program.GraphCall``), in this one process, sampled in turns:

* ``npdynamo``: a warm call of the compiled function (dispatcher, guards, entry runner, warm
  path, machine code);
* ``entry``: the machine code alone, called through numba's entry point as the warm path calls
  it (argument unboxing and result boxing included);
* ``hand``: the hand-written numba version (numba's dispatcher, its typing included).

``around`` is ``npdynamo - entry``: the Python the warm call runs around the machine code.
``calls`` counts the Python-level calls of one warm call (cProfile: functions and builtins).
Times are the lowest of the turns' per-call means (the least disturbed on a shared machine):
rough guides only. To compare two checkouts, run this file with each one first on
``PYTHONPATH`` (it imports ``npdynamo`` and ``benchmarks`` from there).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import pstats
import timeit
import warnings

import numpy as np

import npdynamo
from benchmarks.loop_kernels import KERNELS

SEED = 25


def graph_call(record_runs: dict) -> object | None:
    """The whole-graph function that ran since ``record_runs`` was taken (None: no such)."""
    from npdynamo.backends.numba.loop_program import GraphCall

    for obj in gc.get_objects():
        if type(obj) is GraphCall and obj.record.runs > record_runs.get(id(obj), 0):
            return obj
    return None


def _runs() -> dict:
    from npdynamo.backends.numba.loop_program import GraphCall

    return {id(o): o.record.runs for o in gc.get_objects() if type(o) is GraphCall}


def calls_per_call(fn, args, repeat: int = 50) -> float:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(repeat):
        fn(*args)
    profile.disable()
    return pstats.Stats(profile).total_calls / repeat


def _same_call(entry, compiled, args, given) -> bool:
    """Whether the graph's function, given ``given`` (the frame's arguments, or its arrays
    where the guards made its numbers constants of the graph), returns the call's first
    result: only then is ``entry(*given)`` the machine code of a warm call."""
    try:
        got = entry(*given)[0]
    except Exception:
        return False
    want = compiled(*args)
    want = want[0] if isinstance(want, tuple) else want
    return type(got) is type(want) and np.array_equal(got, want, equal_nan=True)


def one(kernel, turns: int) -> dict | None:
    args = kernel.make("small", np.random.default_rng(SEED))
    npdynamo.reset()
    compiled = npdynamo.compile(kernel.plain, backend="numba")
    # past the tuner's first warm calls, which run each candidate in turn (the NumPy calls
    # among them: the whole-graph function would not be seen running in three calls)
    for _ in range(50):
        compiled(*args)
    before = _runs()
    for _ in range(3):
        compiled(*args)
        kernel.numba(*args)
    call = graph_call(before)
    if call is None:
        return None
    (compiled_loop,) = call.jit.overloads.values()
    variants = {"npdynamo": compiled, "hand": kernel.numba}
    given = args if len(call.metas) == len(args) else tuple(
        a for a in args if isinstance(a, np.ndarray))
    if _same_call(compiled_loop.entry_point, compiled, args, given):
        entry = compiled_loop.entry_point
        variants["entry"] = lambda *_: entry(*given)
    timers = {k: timeit.Timer(lambda f=f: f(*args)) for k, f in variants.items()}
    numbers = {}
    for label, timer in timers.items():
        number = 1
        while timer.timeit(number) < 0.005:
            number *= 2
        numbers[label] = number
    best = dict.fromkeys(variants, math.inf)
    for _ in range(turns):
        for label, timer in timers.items():
            best[label] = min(best[label], timer.timeit(numbers[label]) / numbers[label])
    return {"name": kernel.name, "entry": math.nan, **best,
            "calls": calls_per_call(compiled, args)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("kernels", nargs="*", help="names of the kernels (default: all)")
    opts = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    npdynamo.config.tiered = False  # the compiled tier from the first call
    print("Warm calls of whole-graph numba functions (lowest turn, shared machine: rough)")
    print(f"  {'kernel':16s} {'npdynamo':>9s} {'entry':>9s} {'around':>9s} {'hand':>9s} "
          f"{'numba/hand':>10s} {'calls':>6s}")
    ratios = []
    for kernel in KERNELS:
        if opts.kernels and kernel.name not in opts.kernels:
            continue
        row = one(kernel, opts.turns)
        if row is None:
            print(f"  {kernel.name:16s} (no whole-graph function)")
            continue
        ratio = row["hand"] / row["npdynamo"]
        ratios.append(ratio)
        us = {k: row[k] * 1e6 for k in ("npdynamo", "entry", "hand")}
        print(f"  {row['name']:16s} {us['npdynamo']:7.2f}us {us['entry']:7.2f}us "
              f"{us['npdynamo'] - us['entry']:7.2f}us {us['hand']:7.2f}us {ratio:9.3f}x "
              f"{row['calls']:6.1f}")
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"  geometric mean of numba/hand over {len(ratios)} kernels: {geo:.3f}x")


if __name__ == "__main__":
    main()
