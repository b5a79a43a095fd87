"""MLP training step (784 -> 256 -> 10, batch 128): ``value_and_grad`` + in-place SGD.

The step of ``examples/train_mlp.py`` timed as plain NumPy (gradients from the tape), through
``npdynamo.compile`` with the ``eager`` and ``numba`` backends, and as a reference, the same
step with its backward written by hand in NumPy (what the tape's bookkeeping costs on top of
the arithmetic). Ratios are against plain NumPy; each timed call is a real training step.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np

import npdynamo
from benchmarks.common import fmt_time, measure

_EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "train_mlp.py")


def load_example():
    spec = importlib.util.spec_from_file_location("train_mlp_example", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def handwritten_step(mlp):
    def step(params, x, y):
        pre = x @ params["w1"] + params["b1"]
        h = np.maximum(pre, 0.0)
        logits = h @ params["w2"] + params["b2"]
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        rows = np.arange(x.shape[0])
        loss = -(np.log(p[rows, y])).mean()
        d_logits = p
        d_logits[rows, y] -= 1.0
        d_logits /= x.shape[0]
        d_h = (d_logits @ params["w2"].T) * (pre > 0)
        grads = {"w1": x.T @ d_h, "b1": d_h.sum(axis=0), "w2": h.T @ d_logits,
                 "b2": d_logits.sum(axis=0)}
        for k in params:
            params[k] -= mlp.LR * grads[k]
        return loss

    return step


def main() -> None:
    mlp = load_example()
    x, y = mlp.make_data()
    xb, yb = x[: mlp.BATCH], y[: mlp.BATCH]
    rows = []
    variants = [("plain NumPy (tape)", mlp.step), ("hand-written backward", handwritten_step(mlp))]
    for backend in ("eager", "numba"):
        variants.append((f"compiled ({backend})", npdynamo.compile(mlp.step, backend=backend)))
    for name, step in variants:
        params = mlp.init_params()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows.append((name, measure(step, params, xb, yb, samples=7)))
        except Exception as exc:  # report the variant, keep benchmarking the others
            print(f"{name}: failed ({type(exc).__name__}: {exc})")
    print(f"MLP training step {mlp.SIZES}, batch {mlp.BATCH}, float64")
    print(f"{'variant':24} {'median':>11} {'min':>11} {'max':>11} {'vs NumPy':>9}")
    base = rows[0][1]["median"] if rows else None
    for name, r in rows:
        ratio = base / r["median"] if base else float("nan")
        print(f"{name:24} {fmt_time(r['median'])} {fmt_time(r['min'])} {fmt_time(r['max'])} "
              f"{ratio:8.2f}x")


if __name__ == "__main__":
    main()
