"""Programs every export target is tested on: each with example arguments, its dynamic
dimensions, and a maker of new arguments of other sizes along those dimensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import npdynamo

_rng = np.random.default_rng(0)
W1 = _rng.standard_normal((6, 16)) * 0.5
B1 = np.zeros(16)
W2 = _rng.standard_normal((16, 4)) * 0.5
PARAMS32 = {"w": (_rng.standard_normal((6, 8)) * 0.5).astype(np.float32),
            "b": np.zeros(8, np.float32)}


def mlp_predict(x):
    h = np.tanh(x @ W1 + B1)
    logits = h @ W2
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def mlp32(x):
    h = np.maximum(x @ PARAMS32["w"] + PARAMS32["b"], 0)
    return h.mean(axis=1), (h * h).sum()


def elementwise(x, y):
    a = np.sqrt(np.abs(x)) + np.maximum(x, 0.1) * np.exp(-x * y)
    b = np.where(x > 0, x, 2 * y).clip(-1.0, 1.0)
    return a - b / (1.0 + y * y), np.sin(x) * np.cos(y) - np.tanh(x - y)


def reductions(x):
    return (x.mean(axis=0), x.var(axis=1), x.max(axis=1, keepdims=True), x.sum(),
            np.argmax(x, axis=1), x.min(axis=0), (x > 0).all(axis=1), np.std(x))


def shapes(x):
    a = np.concatenate([x, x * 2], axis=0)
    b = np.stack([x, -x], axis=1)
    c = x.T @ x
    d = np.expand_dims(x, 0) + 1
    return a, b, c, d, x.reshape(-1), x[1:, ::2], x[:, 0], x[::-1], np.zeros_like(x)


def sgd_step(w, x, y):
    err = x @ w - y
    grad = x.T @ err / 8.0
    w -= 0.1 * grad
    return (err * err).mean()


def rolled_rows(x):
    return np.roll(x, 2, axis=0) - np.roll(x, -1, axis=1)


def halve(x):
    while np.abs(x).max() > 1.0:
        x = x * 0.5
    return x


def branch(x):
    if x.sum() > 0:
        y = x * 2.0 + 1
    else:
        y = np.exp(x) - 1
    return y


def rolled(z):
    for i in range(40):
        z = z * 0.9 + np.sin(z + i)
    return z


def newton(x):
    y = x.copy()
    for _ in range(30):  # a plain Python for loop: rolled into the graph, an ONNX Loop
        y = y - (y * y - x) / (2 * y)
    return y


def integers(a, b):
    c = a * 3 + b - 7
    return c, (c > 2).astype(np.float64) * a, np.maximum(a, b), c // 1


def _f64(*shape):
    return lambda n, rng: rng.standard_normal(tuple(n if d is None else d for d in shape))


@dataclass
class Workload:
    name: str
    fn: Callable
    make: Callable  # (n, rng) -> tuple of arguments; n is the size of the dynamic dim
    dims: object = None  # dynamic_shapes for export
    mutates: bool = False
    onnx: bool = True  # whether every op has an ONNX form
    sizes: list[int] = field(default_factory=lambda: [5, 9, 2])

    def args(self, n: int, seed: int = 0) -> tuple:
        return self.make(n, np.random.default_rng(seed))

    def export(self):
        return npdynamo.export(self.fn, *self.args(3), dynamic_shapes=self.dims)


N = npdynamo.Dim("n")
WORKLOADS = [
    Workload("mlp_predict", mlp_predict, lambda n, r: (r.standard_normal((n, 6)),), [{0: N}]),
    Workload("mlp32", mlp32, lambda n, r: (r.standard_normal((n, 6)).astype(np.float32),),
             [{0: N}]),
    Workload("elementwise", elementwise,
             lambda n, r: (r.standard_normal((n, 4)), r.standard_normal((n, 4))),
             [{0: N}, {0: N}]),
    Workload("reductions", reductions, lambda n, r: (r.standard_normal((n, 5)),), [{0: N}]),
    Workload("shapes", shapes, lambda n, r: (r.standard_normal((n, 4)),), [{0: N}]),
    Workload("sgd_step", sgd_step,
             lambda n, r: (r.standard_normal((3, 2)), r.standard_normal((n, 3)),
                           r.standard_normal((n, 2))),
             [None, {0: N}, {0: N}], mutates=True),
    Workload("rolled_rows", rolled_rows, lambda n, r: (r.standard_normal((n, 3)),), [{0: N}]),
    Workload("halve", halve, lambda n, r: (r.standard_normal((n, 3)) * 20,), [{0: N}]),
    Workload("branch", branch, lambda n, r: (r.standard_normal((n, 3)) + r.choice([-2, 2]),),
             [{0: N}], sizes=[5, 9, 2, 4, 7]),
    Workload("rolled", rolled, lambda n, r: (r.standard_normal((n, 2)),), [{0: N}]),
    Workload("newton", newton, lambda n, r: (r.random((n, 3)) * 9 + 1,), [{0: N}]),
    Workload("integers", integers,
             lambda n, r: (r.integers(-9, 9, (n, 3)), r.integers(-9, 9, (n, 3))),
             [{0: N}, {0: N}]),
]
BY_NAME = {w.name: w for w in WORKLOADS}


def copies(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def assert_close(expected, got, f64: float = 1e-10, f32: float = 1e-5) -> None:
    """Same structure, dtypes and shapes; values within ``f32``/``f64`` relative tolerance
    (the tolerance of targets that do not reproduce NumPy's rounding bit for bit)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected)
        for k in expected:
            assert_close(expected[k], got[k], f64, f32)
        return
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for e, g in zip(expected, got):
            assert_close(e, g, f64, f32)
        return
    e, g = np.asarray(expected), np.asarray(got)
    assert g.dtype == e.dtype, f"dtype {g.dtype} != {e.dtype}"
    assert g.shape == e.shape, f"shape {g.shape} != {e.shape}"
    if e.dtype.kind in "fc":
        rtol = f32 if e.dtype.itemsize <= 4 * (2 if e.dtype.kind == "c" else 1) else f64
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * 1e-2)
    else:
        np.testing.assert_array_equal(g, e)
