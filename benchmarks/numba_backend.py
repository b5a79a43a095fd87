"""The numba backend against NumPy on the same user code, and against hand-written numba.

For each workload (``benchmarks/workloads.py``, written the way a user writes them) and dtype,
one table: NumPy eager, npdynamo ``eager``, npdynamo ``numba`` and the hand-written numba
kernel (``benchmarks/handwritten.py``, the ceiling: it writes into buffers allocated once), with
median/min/max per call, the speed relative to NumPy ("vs NumPy", > 1 is faster) and to the
hand-written kernel ("vs hand"), plus the numba compile time of the graph in this process.
The four variants are sampled in turns (15 samples of >= 20 ms each) after waiting for the
machine to be quiet; "others" is the CPU other processes used meanwhile. A summary gives each
workload's speed-up over NumPy and its time relative to the hand-written kernel.
"""

from __future__ import annotations

import copy
import statistics
import time
import timeit
import warnings

import numpy as np

import npdynamo
from benchmarks import handwritten, workloads
from benchmarks.common import fmt_time
from benchmarks.quiet import foreign_load, wait_until_quiet

RNG = np.random.default_rng(0)


def _adam_args(dtype):
    params = {"w": RNG.standard_normal((1000, 999)).astype(dtype),
              "b": RNG.standard_normal(1000).astype(dtype)}
    grads = {k: RNG.standard_normal(p.shape).astype(dtype) for k, p in params.items()}
    m = {k: (RNG.standard_normal(p.shape) * 0.1).astype(dtype) for k, p in params.items()}
    v = {k: RNG.uniform(0, 0.1, p.shape).astype(dtype) for k, p in params.items()}
    return params, grads, m, v, 10


def _mlp_args(dtype):
    return (RNG.standard_normal((64, 784)).astype(dtype),
            (RNG.standard_normal((784, 256)) * 0.05).astype(dtype),
            np.zeros(256, dtype), (RNG.standard_normal((256, 10)) * 0.05).astype(dtype),
            np.zeros(10, dtype))


#: (name, target ratio vs NumPy or None, user function, hand-written, argument factory)
WORKLOADS = [
    ("GELU 1e6 (x**3 as written)", 20.0, workloads.gelu, handwritten.gelu,
     lambda dt: (RNG.standard_normal(1_000_000).astype(dt),)),
    ("GELU 1e6 (x*x*x)", 3.0, workloads.gelu_cubed, handwritten.gelu_cubed,
     lambda dt: (RNG.standard_normal(1_000_000).astype(dt),)),
    ("row softmax 4096x1024", 1.2, workloads.softmax, handwritten.softmax,
     lambda dt: (RNG.standard_normal((4096, 1024)).astype(dt),)),
    ("layernorm 4096x1024", 3.0, workloads.layernorm, handwritten.layernorm,
     lambda dt: (RNG.standard_normal((4096, 1024)).astype(dt),
                 RNG.standard_normal(1024).astype(dt), RNG.standard_normal(1024).astype(dt))),
    ("Adam 1e6 params (dict, functional)", 5.0, workloads.adam, handwritten.adam, _adam_args),
    ("Adam 1e6 params (dict, in place)", 5.0, workloads.adam_in_place,
     handwritten.adam_in_place, _adam_args),
    ("MLP forward 64x784-256-10", None, workloads.mlp_forward, handwritten.mlp_forward,
     _mlp_args),
    ("tiny chain: 10 ops on 10 elements", None, workloads.tiny_chain, handwritten.tiny_chain,
     lambda dt: (RNG.standard_normal(10).astype(dt),)),
]


def _close(a, b, dtype) -> bool:
    if isinstance(a, dict):
        return all(_close(a[k], b[k], dtype) for k in a)
    if isinstance(a, tuple):
        return all(_close(x, y, dtype) for x, y in zip(a, b))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    return bool(np.allclose(a, b, rtol=tol, atol=tol * float(np.abs(b).max())))


def _interleaved(fns: dict, args, samples: int = 15, min_sample_s: float = 0.02) -> dict:
    """Per-call times of each function, sampled in turns so that drifts of this shared machine
    affect every variant alike; median, min and max per variant."""
    timers, numbers = {}, {}
    for label, fn in fns.items():
        for _ in range(3):
            fn(*args)
        timers[label] = timeit.Timer(lambda fn=fn: fn(*args))
        number = 1
        while timers[label].timeit(number) < min_sample_s:
            number *= 2
        numbers[label] = number
    times: dict = {label: [] for label in fns}
    wait_until_quiet()
    with foreign_load() as load:
        for _ in range(samples):
            for label in fns:
                times[label].append(timers[label].timeit(numbers[label]) / numbers[label])
    return {label: {"median": statistics.median(t), "min": min(t), "max": max(t),
                    "others": load.cores} for label, t in times.items()}


def bench_workload(name, target, user_fn, hand_fn, make_args, dtype) -> dict:
    args = make_args(dtype)
    npdynamo.reset()  # one cache entry per function: guards of other dtypes are not checked
    with np.errstate(all="ignore"):
        # each variant on its own copy: a workload may update its arguments in place
        want = user_fn(*copy.deepcopy(args))
        eager = npdynamo.compile(user_fn, backend="eager")
        numba_fn = npdynamo.compile(user_fn, backend="numba")
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a numba fallback must not go unnoticed here
            got = numba_fn(*copy.deepcopy(args))
        compile_s = time.perf_counter() - start
        hand_fn(*copy.deepcopy(args))  # compile
        assert _close(got, want, dtype), f"{name}: numba backend result differs"
        assert _close(hand_fn(*copy.deepcopy(args)), want, dtype), \
            f"{name}: hand-written result differs"
        rows = _interleaved({"NumPy eager": user_fn, "npdynamo eager": eager,
                             "npdynamo numba": numba_fn, "hand-written numba": hand_fn}, args)
    base, ceiling = rows["NumPy eager"]["median"], rows["hand-written numba"]["median"]
    print(f"\n{name}, {np.dtype(dtype).name} (numba compile in this process: {compile_s:.2f} s)")
    print(f"{'':22} {'median':>11} {'min':>11} {'max':>11} {'vs NumPy':>9} "
          f"{'vs hand':>8} {'others':>7}")
    for label, r in rows.items():
        print(f"{label:22} {fmt_time(r['median'])} {fmt_time(r['min'])} {fmt_time(r['max'])} "
              f"{base / r['median']:8.2f}x {ceiling / r['median']:7.2f}x {r['others']:6.2f}c")
    return {"name": name, "dtype": np.dtype(dtype).name, "target": target,
            "vs_numpy": base / rows["npdynamo numba"]["median"],
            "vs_hand": rows["npdynamo numba"]["median"] / ceiling,
            "numba_s": rows["npdynamo numba"]["median"]}


def summary(results: list[dict]) -> None:
    print("\nsummary (numba backend vs NumPy eager on the same code; time relative to "
          "hand-written numba, 1.00 = as fast):")
    for r in results:
        print(f"  {r['name']:36} {r['dtype']:8} {r['vs_numpy']:7.2f}x NumPy, "
              f"{r['vs_hand']:5.2f}x hand-written time")


def main() -> None:
    results = []
    for spec in WORKLOADS:
        for dtype in (np.float32, np.float64):
            results.append(bench_workload(*spec, dtype))
    summary(results)


if __name__ == "__main__":
    main()
