"""The numba backend against NumPy on the same user code, hand-written numba and torch.compile.

For each workload (``benchmarks/workloads.py``, written the way a user writes them) and dtype,
one table: NumPy eager, npdynamo ``eager``, npdynamo ``numba``, the hand-written numba kernel
(``benchmarks/handwritten.py``, the ceiling: it writes into buffers allocated once) and, when
``torch`` is importable (the ``bench`` extra), ``torch.compile`` on the very same NumPy function,
with median/min/max per call, the speed relative to NumPy ("vs NumPy", > 1 is faster) and to the
hand-written kernel ("vs hand"), plus the first-call times of npdynamo numba and torch.compile in
this process. The variants are sampled in turns (15 samples of >= 20 ms each) after waiting for
the machine to be quiet; "others" is the CPU other processes used meanwhile. A summary gives each
workload's speed-up over NumPy for npdynamo numba and torch.compile.

``python -m benchmarks.numba_backend --one-thread`` runs the same tables in a child process with
one thread everywhere (OpenBLAS/OpenMP, numba, torch; numba kernels serial), as ``make bench``
does after the default-threads run.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
import warnings

import numpy as np

import npdynamo
from benchmarks import handwritten, workloads
from benchmarks.common import fmt_time, interleaved

try:
    import torch
except ImportError:  # the ``bench`` extra is not installed: no torch.compile column
    torch = None

RNG = np.random.default_rng(0)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1", "NPDYNAMO_NUMBA_PARALLEL": "never"}


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


def _mlp_step_args(dtype):
    x, w1, b1, w2, b2 = _mlp_args(dtype)
    y = np.eye(10, dtype=dtype)[RNG.integers(0, 10, x.shape[0])]
    return (x, y, w1, b1, w2, b2)


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
    ("MLP SGD step 64x784-256-10 (hand-written backward, in place)", 1.3,
     workloads.mlp_sgd_step, handwritten.mlp_sgd_step, _mlp_step_args),
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


def _first_call(fn, args) -> tuple[object, float]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numba fallback must not go unnoticed here
        result = fn(*copy.deepcopy(args))
    return result, time.perf_counter() - start


def bench_workload(name, target, user_fn, hand_fn, make_args, dtype) -> dict:
    args = make_args(dtype)
    npdynamo.reset()  # one cache entry per function: guards of other dtypes are not checked
    with np.errstate(all="ignore"):
        # each variant on its own copy: a workload may update its arguments in place
        want = user_fn(*copy.deepcopy(args))
        variants = {"NumPy eager": user_fn,
                    "npdynamo eager": npdynamo.compile(user_fn, backend="eager"),
                    "npdynamo numba": npdynamo.compile(user_fn, backend="numba"),
                    "hand-written numba": hand_fn}
        got, first = _first_call(variants["npdynamo numba"], args)
        firsts = {"npdynamo numba": first}
        hand_fn(*copy.deepcopy(args))  # compile
        assert _close(got, want, dtype), f"{name}: numba backend result differs"
        assert _close(hand_fn(*copy.deepcopy(args)), want, dtype), \
            f"{name}: hand-written result differs"
        if torch is not None:
            compiled = torch.compile(user_fn)
            got, firsts["torch.compile"] = _first_call(compiled, args)
            assert _close(got, want, dtype), f"{name}: torch.compile result differs"
            variants["torch.compile"] = compiled
        rows = interleaved(variants, args)
    base, ceiling = rows["NumPy eager"]["median"], rows["hand-written numba"]["median"]
    first_text = ", ".join(f"{k} {v:.2f} s" for k, v in firsts.items())
    print(f"\n{name}, {np.dtype(dtype).name} (first calls in this process: {first_text})")
    print(f"{'':22} {'median':>11} {'min':>11} {'max':>11} {'vs NumPy':>9} "
          f"{'vs hand':>8} {'others':>7}")
    for label, r in rows.items():
        print(f"{label:22} {fmt_time(r['median'])} {fmt_time(r['min'])} {fmt_time(r['max'])} "
              f"{base / r['median']:8.2f}x {ceiling / r['median']:7.2f}x {r['others']:6.2f}c")
    torch_row = rows.get("torch.compile")
    return {"name": name, "dtype": np.dtype(dtype).name, "target": target,
            "vs_numpy": base / rows["npdynamo numba"]["median"],
            "eager_vs_numpy": base / rows["npdynamo eager"]["median"],
            "torch_vs_numpy": base / torch_row["median"] if torch_row else None,
            "vs_hand": rows["npdynamo numba"]["median"] / ceiling,
            "numba_s": rows["npdynamo numba"]["median"]}


def summary(results: list[dict]) -> None:
    print("\nsummary (speed-up over NumPy eager on the same code, > 1 is faster; npdynamo numba "
          "time relative to hand-written numba, 1.00 = as fast):")
    print(f"  {'workload':36} {'dtype':8} {'eager':>7} {'numba':>7} {'torch.compile':>14} "
          f"{'numba/hand':>11}")
    for r in results:
        torch_text = f"{r['torch_vs_numpy']:13.2f}x" if r["torch_vs_numpy"] else \
            f"{'(no torch)':>14}"
        print(f"  {r['name']:36} {r['dtype']:8} {r['eager_vs_numpy']:6.2f}x "
              f"{r['vs_numpy']:6.2f}x {torch_text} {r['vs_hand']:10.2f}x")


def main(one_thread: bool = False) -> None:
    """The tables with this process's threads; with ``one_thread``, in a child process whose
    every thread pool has one thread (set before NumPy, numba and torch start)."""
    if one_thread:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run([sys.executable, "-m", "benchmarks.numba_backend"], cwd=root,
                       env={**os.environ, **ONE_THREAD}, check=True)
        return
    threads = "one thread" if os.environ.get("NUMBA_NUM_THREADS") == "1" else "default threads"
    print(f"\nnumba backend workloads, {threads}"
          f"{'' if torch is not None else ' (torch not installed: no torch.compile column)'}")
    if torch is not None and threads == "one thread":
        torch.set_num_threads(1)
    results = []
    for spec in WORKLOADS:
        for dtype in (np.float32, np.float64):
            results.append(bench_workload(*spec, dtype))
    summary(results)


if __name__ == "__main__":
    main(one_thread="--one-thread" in sys.argv)
