"""Small functions, where per-call cost decides: plain NumPy against compiled eager and numba.

Three workloads written the way users write small code: a class-based model (methods, attribute
reads, a list of layers), a training step of a small model (hand-written backward, in-place SGD
over a dict of parameters) and a function made of closures that appends to a history list. On
arrays this small, NumPy's own per-call cost is most of the time; compiling removes the Python
around the NumPy calls (method calls, attribute and dict reads, the loop over layers) and adds
the guard check and the dispatch. Ratios are plain time / compiled time (> 1: compiled is
faster), medians of interleaved samples in one run.
"""

from __future__ import annotations

import copy

import numpy as np

import npdynamo
from benchmarks.common import fmt_time, interleaved

RNG = np.random.default_rng(0)


class Dense:
    def __init__(self, n_in: int, n_out: int) -> None:
        self.w = RNG.standard_normal((n_in, n_out)) * 0.3
        self.b = np.zeros(n_out)

    def __call__(self, x):
        return x @ self.w + self.b


class Model:
    def __init__(self, sizes: list[int]) -> None:
        self.layers = [Dense(a, b) for a, b in zip(sizes, sizes[1:])]

    def activation(self, h):
        return np.tanh(h)

    def predict(self, x):
        h = x
        for layer in self.layers[:-1]:
            h = self.activation(layer(h))
        return self.layers[-1](h)


def predict(model, x):
    return model.predict(x)


def sgd_step(params, x, y, lr=0.05):
    h = np.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    err = out - y
    loss = (err * err).mean()
    d_out = 2.0 * err / err.size
    d_h = (d_out @ params["w2"].T) * (1.0 - h * h)
    grads = {"w1": x.T @ d_h, "b1": d_h.sum(axis=0), "w2": h.T @ d_out, "b2": d_out.sum(axis=0)}
    for k in params:
        params[k] -= lr * grads[k]
    return loss


def make_scale(s):
    def scale(v):
        return v * s
    return scale


def make_shift(d):
    def shift(v):
        return v + d
    return shift


STAGES = [make_scale(0.5), make_shift(1.0), make_scale(2.0), np.sqrt]


def pipeline(x, history):
    for stage in STAGES:
        x = stage(x)
    history.append(float(x.mean()))  # a Python float leaves the graph: the value is needed
    return x


def _workloads():
    model = Model([16, 32, 32, 4])
    params = {"w1": RNG.standard_normal((16, 32)) * 0.3, "b1": np.zeros(32),
              "w2": RNG.standard_normal((32, 4)) * 0.3, "b2": np.zeros(4)}
    x = RNG.standard_normal((8, 16))
    y = RNG.standard_normal((8, 4))
    return [
        ("class-based model predict (3 layers, batch 8)", predict, (model, x)),
        ("training step, in-place SGD (16-32-4, batch 8)", sgd_step, (params, x, y)),
        ("closures + list append (4 stages, 64 elements)", pipeline,
         (np.abs(RNG.standard_normal(64)), [])),
    ]


def main() -> None:
    print("small functions: plain NumPy vs npdynamo.compile (ratio > 1: compiled is faster)")
    print(f"{'workload':48} {'plain':>11} {'eager':>11} {'numba':>11} {'eager':>7} {'numba':>7}")
    for name, fn, args in _workloads():
        variants = {"plain": fn, **{backend: npdynamo.compile(fn, backend=backend)
                                    for backend in ("eager", "numba")}}
        # each variant on its own copy: the workloads update their arguments
        rows = interleaved(variants, {label: copy.deepcopy(args) for label in variants})
        times = {label: r["median"] for label, r in rows.items()}
        print(f"{name:48} {fmt_time(times['plain'])} {fmt_time(times['eager'])} "
              f"{fmt_time(times['numba'])} {times['plain'] / times['eager']:6.2f}x "
              f"{times['plain'] / times['numba']:6.2f}x")


if __name__ == "__main__":
    main()
