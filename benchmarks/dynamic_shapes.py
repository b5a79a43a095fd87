"""A training step fed 20 batch sizes: what dynamic shapes save, numba backend, against NumPy.

The step (tanh MLP, softmax cross-entropy, hand-written backward, SGD with a learning rate that
is a Python float) is plain NumPy that reads ``x.shape[0]`` and calls ``np.arange(n)``. Each
configuration runs the same sequence of 20 batch sizes (``SIZES``, the last a partial batch),
``ROUNDS`` times; the table gives the total time including every capture and compile, the mean
time per step once all is compiled (rounds 2 and later), the graphs captured, and the numba
kernels compiled (machine-code versions, compiled or loaded from the disk cache):

* ``numpy``: the plain step;
* ``compile (default)``: ``npdynamo.compile``; the batch size changed on the 2nd call becomes a
  symbol, so every later size is served by that graph's kernels;
* ``compile dynamic=False``: one graph per size until the cache limit (8), then plain Python;
* ``hand-built graph, s0``: the same step as an fx graph with a symbolic batch size, compiled
  by the backend directly (the floor: no capture, no guards).

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
from npdynamo.ops.symbol_table import SymbolTable

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


class _Counting:
    """The numba backend, counting the graphs it is given and keeping what it returns."""

    def __init__(self) -> None:
        self.compiled: list = []

    def __call__(self, gm, example_inputs):
        fn = lookup_backend("numba")(gm, example_inputs)
        self.compiled.append(fn)
        return fn

    def kernels(self) -> int:
        found = {id(d): d for f in self.compiled
                 for d in getattr(f.report, "dispatchers", [])}
        return sum(len(d.overloads) for d in found.values())


def main() -> None:
    import npdynamo

    rng = np.random.default_rng(0)
    inputs = [make_inputs(b, rng) for b in SIZES]
    rows = []
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.environ["NPDYNAMO_CACHE_DIR"] = cache  # a cold kernel cache for every configuration
        rows.append(("numpy", *_timed_rounds(train_step, inputs), 0, 0))

        # what a user gets: npdynamo.compile on the NumPy step (it reads x.shape[0] and calls
        # np.arange(n)); by default the changed batch size becomes a symbol on the 2nd call
        for name, dynamic in (("compile (default)", None), ("compile dynamic=False", False)):
            npdynamo.reset()
            backend = _Counting()
            step = npdynamo.compile(train_step, backend=backend, dynamic=dynamic)
            start = time.perf_counter()
            _total, per_step = _timed_rounds(step, inputs)
            rows.append((name, time.perf_counter() - start, per_step, len(backend.compiled),
                         backend.kernels()))

        # the same step built by hand as one graph with a symbolic batch size
        start = time.perf_counter()
        fn, _facts = compile_graph(train_step_graph(), inputs[0])
        _total, per_step = _timed_rounds(fn, inputs)
        rows.append(("hand-built graph, s0", time.perf_counter() - start, per_step, 1,
                     fn.report.compiled_kernels()))
    print(f"\ntraining step, {len(SIZES)} batch sizes x {ROUNDS} rounds "
          f"({D_IN}->{HIDDEN}->{CLASSES}, float32, numba backend); total time includes "
          "every capture and compile (limit: 8 entries, then plain Python)")
    print(f"{'':22s} {'total':>9s} {'vs numpy':>9s} {'per step after round 1':>23s} "
          f"{'graphs':>7s} {'kernels compiled':>17s}")
    base = rows[0][1]
    for name, total, per_step, graphs, kernels in rows:
        print(f"{name:22s} {total:8.3f}s {total / base:8.2f}x {per_step * 1e6:20.1f} us "
              f"{graphs:7d} {kernels:17d}")


if __name__ == "__main__":
    main()
