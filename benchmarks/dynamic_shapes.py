"""A training step fed 20 batch sizes: one size-generic graph vs one graph per size vs NumPy.

The step (tanh MLP, softmax cross-entropy, hand-written backward, SGD with a learning rate that
is a dynamic scalar) is built as an fx graph by hand with a symbolic batch size ``s0``, as
capture will build it once dynamic shapes reach capture. Each configuration runs the same
sequence of 20 batch sizes (``SIZES``, the last one a partial batch), repeated ``ROUNDS`` times,
and the table gives the total time including every compile, and the numba kernels compiled
(machine-code versions: compiled or loaded from the disk cache; with symbolic sizes, at most a
serial and a parallel version per fusion group, never one per size):

* ``numpy``: the plain NumPy step;
* ``numba, symbolic``: one graph with ``s0``, compiled once by the numba backend;
* ``numba, per size``: one static graph per batch size (what specialisation costs: a numba
  compile per size; kernels shared through the disk cache are counted too).

A last column gives the mean time per step once everything is compiled (rounds 2 and later).

Run ``python -m benchmarks.dynamic_shapes``. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings

import numpy as np

from npdynamo import fx, ops
from npdynamo.backends import lookup_backend
from npdynamo.fx.passes import propagate_shapes
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymbolTable

D_IN, HIDDEN, CLASSES = 64, 128, 10
SIZES = [32, 48, 64, 17, 96, 128, 40, 56, 80, 100, 120, 24, 36, 72, 88, 112, 60, 44, 52, 9]
ROUNDS = 5


def train_step(x, t, labels, w1, b1, w2, lr):
    """The NumPy reference: forward, loss, backward, SGD update."""
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.mean(np.log(p[np.arange(n), labels]))
    g = (p - t) / n
    dw2 = np.transpose(h) @ g
    dh = (g @ np.transpose(w2)) * (1 - h * h)
    dw1 = np.transpose(x) @ dh
    db1 = np.sum(dh, axis=0)
    return loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2


def train_step_graph(batch: int | None = None, dtype=np.float32) -> fx.Graph:
    """``train_step`` as a graph; batch size symbolic (``s0``) unless ``batch`` is given."""
    n = SymbolTable().new(SIZES[0], "x.shape[0]") if batch is None else batch
    g = fx.Graph()
    call = lambda op, *a, **k: g.call_function(op, a, k)  # noqa: E731
    x = g.placeholder("x", ArrayMeta((n, D_IN), dtype))
    t = g.placeholder("t", ArrayMeta((n, CLASSES), dtype))
    labels = g.placeholder("labels", ArrayMeta((n,), np.int64))
    w1 = g.placeholder("w1", ArrayMeta((D_IN, HIDDEN), dtype))
    b1 = g.placeholder("b1", ArrayMeta((HIDDEN,), dtype))
    w2 = g.placeholder("w2", ArrayMeta((HIDDEN, CLASSES), dtype))
    lr = g.placeholder("lr", ScalarMeta(float))
    h = call(ops.tanh, call(ops.add, call(ops.matmul, x, w1), b1))
    logits = call(ops.matmul, h, w2)
    m = call(ops.max, logits, axis=1, keepdims=True)
    e = call(ops.exp, call(ops.subtract, logits, m))
    p = call(ops.divide, e, call(ops.sum, e, axis=1, keepdims=True))
    picked = call(ops.getitem, p, (call(ops.arange, stop=n), labels))
    loss = call(ops.negative, call(ops.mean, call(ops.log, picked)))
    grad = call(ops.divide, call(ops.subtract, p, t), n)
    dw2 = call(ops.matmul, call(ops.transpose, h), grad)
    dh = call(ops.multiply, call(ops.matmul, grad, call(ops.transpose, w2)),
              call(ops.subtract, 1, call(ops.multiply, h, h)))
    dw1 = call(ops.matmul, call(ops.transpose, x), dh)
    db1 = call(ops.sum, dh, axis=0)
    g.output((loss, call(ops.subtract, w1, call(ops.multiply, lr, dw1)),
              call(ops.subtract, b1, call(ops.multiply, lr, db1)),
              call(ops.subtract, w2, call(ops.multiply, lr, dw2))))
    return g


def make_inputs(batch: int, rng: np.random.Generator, dtype=np.float32) -> tuple:
    x = rng.standard_normal((batch, D_IN)).astype(dtype)
    labels = rng.integers(0, CLASSES, batch)
    t = np.eye(CLASSES, dtype=dtype)[labels]
    w1 = (rng.standard_normal((D_IN, HIDDEN)) * 0.1).astype(dtype)
    b1 = np.zeros(HIDDEN, dtype)
    w2 = (rng.standard_normal((HIDDEN, CLASSES)) * 0.1).astype(dtype)
    return x, t, labels, w1, b1, w2, 0.05


def compile_graph(graph: fx.Graph, example: tuple, backend: str = "numba"):
    """Shapes propagated, then the backend: returns the callable and its facts."""
    facts = propagate_shapes(graph, [p.meta["val"] for p in graph.placeholders])
    return lookup_backend(backend)(fx.GraphModule(graph), list(example)), facts


def _timed_rounds(step, inputs: list[tuple]) -> tuple[float, float]:
    """Total seconds of ``ROUNDS`` passes over ``inputs``, and the mean seconds per step of
    the passes after the first (every compile happens in the first pass)."""
    start = time.perf_counter()
    first = 0.0
    for r in range(ROUNDS):
        for args in inputs:
            step(*args)
        if r == 0:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    return total, (total - first) / ((ROUNDS - 1) * len(inputs))


def main() -> None:
    rng = np.random.default_rng(0)
    inputs = [make_inputs(b, rng) for b in SIZES]
    rows = []
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("error")  # a numba fallback would make the figures meaningless
        os.environ["NPDYNAMO_CACHE_DIR"] = cache  # a cold kernel cache for both configurations
        rows.append(("numpy", *_timed_rounds(train_step, inputs), 0))

        start = time.perf_counter()
        fn, _facts = compile_graph(train_step_graph(), inputs[0])
        total, per_step = _timed_rounds(fn, inputs)
        rows.append(("numba, symbolic", time.perf_counter() - start, per_step,
                     fn.npdynamo_report.compiled_kernels()))

        per_size: dict[int, object] = {}

        def specialised(*args):
            b = args[0].shape[0]
            if b not in per_size:
                per_size[b] = compile_graph(train_step_graph(b), args)[0]
            return per_size[b](*args)

        rows.append(("numba, per size", *_timed_rounds(specialised, inputs), 0))
        reports = {id(d): d for f in per_size.values() for d in f.npdynamo_report.dispatchers}
        rows[-1] = (*rows[-1][:3], sum(len(d.overloads) for d in reports.values()))
    print(f"\ntraining step, {len(SIZES)} batch sizes x {ROUNDS} rounds "
          f"({D_IN}->{HIDDEN}->{CLASSES}, float32); total time includes compiles")
    print(f"{'':18s} {'total':>10s} {'vs numpy':>9s} {'per step after round 1':>23s} "
          f"{'kernels compiled':>17s}")
    base = rows[0][1]
    for name, total, per_step, kernels in rows:
        print(f"{name:18s} {total:9.3f}s {total / base:8.2f}x {per_step * 1e6:20.1f} us "
              f"{kernels:17d}")


if __name__ == "__main__":
    main()
