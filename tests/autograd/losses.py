"""The autograd test losses: ordinary NumPy loss functions, each with argument factories.

``LOSSES`` holds ``Loss(name, fn, make_args, argnums, one_graph)``. ``make_args()`` returns
fresh float64 arguments; ``argnums`` says which ones are differentiated (arrays, floats or
pytrees of them). ``one_graph`` marks the losses ``npdynamo.compile`` captures into a single
graph without a break (the others branch on array values, call ``graph_break()`` or use
Python-only features): the capture-based joint-graph tests use those, and they fail, rather
than skip, if capture stops producing one graph. Graph-break variants (``grad(compile(f))``)
can reuse every loss here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import npdynamo


@dataclass(frozen=True)
class Loss:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple]
    argnums: int | tuple[int, ...] = 0
    one_graph: bool = True


LOSSES: list[Loss] = []


def loss(make_args, argnums=0, one_graph=True):
    def register(fn):
        LOSSES.append(Loss(fn.__name__, fn, make_args, argnums, one_graph))
        return fn

    return register


def rand(*shape, seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def labels(n, classes, seed=1):
    return np.random.default_rng(seed).integers(0, classes, n)


def mlp_params(sizes, seed=2):
    return {f"{k}{i}": rand(*((a, b) if k == "w" else (b,)), seed=seed + 2 * i + (k == "b"))
            for i, (a, b) in enumerate(zip(sizes, sizes[1:])) for k in ("w", "b")}


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# -- regression ------------------------------------------------------------------------------


@loss(lambda: (rand(4), rand(8, 4, seed=3), rand(8, seed=4)))
def linear_mse(w, x, y):
    return np.mean((x @ w - y) ** 2)


@loss(lambda: ({"w": rand(4), "b": 0.3 * np.ones(())}, rand(8, 4, seed=3), rand(8, seed=4)))
def ridge(p, x, y):
    residual = x @ p["w"] + p["b"] - y
    return 0.5 * np.sum(residual * residual) + 0.1 * np.dot(p["w"], p["w"])


@loss(lambda: (rand(5), rand(10, 5, seed=3), (rand(10, seed=4) > 0).astype(np.float64)))
def logistic(w, x, y):
    z = x @ w
    return np.mean(np.log1p(np.exp(-z)) * y + np.log1p(np.exp(z)) * (1.0 - y))


@loss(lambda: (rand(5), rand(10, 5, seed=3), np.sign(rand(10, seed=4))))
def logistic_logaddexp(w, x, y):
    return np.logaddexp(0.0, -y * (x @ w)).mean()


@loss(lambda: (rand(4, 3), rand(6, 4, seed=3), labels(6, 3)))
def softmax_regression(w, x, y):
    logp = log_softmax(x @ w)
    return -logp[np.arange(6), y].mean()


@loss(lambda: (rand(4, 3), rand(6, 4, seed=3), np.eye(3)[labels(6, 3)]))
def softmax_onehot_einsum(w, x, onehot):
    logp = log_softmax(np.einsum("nd,dc->nc", x, w))
    return -np.einsum("nc,nc->", onehot, logp) / 6


@loss(lambda: (rand(3), rand(12, 3, seed=3), rand(12, seed=4)))
def huber(w, x, y):
    r = x @ w - y
    quad = 0.5 * r * r
    lin = 0.3 * (np.abs(r) - 0.15)
    return np.where(np.abs(r) < 0.3, quad, lin).sum()


@loss(lambda: (rand(3), rand(12, 3, seed=3), np.sign(rand(12, seed=4))))
def hinge(w, x, y):
    return np.maximum(0.0, 1.0 - y * (x @ w)).mean() + 0.01 * (w**2).sum()


@loss(lambda: (rand(3), rand(3, seed=5, lo=0.1, hi=0.5), rand(9, 3, seed=3), rand(9, seed=4)),
      argnums=(0, 1))
def gaussian_nll(mu_w, log_sigma, x, y):
    mu = x @ mu_w
    sigma = np.exp(x @ log_sigma)
    return np.mean(np.log(sigma) + 0.5 * ((y - mu) / sigma) ** 2)


# -- networks -------------------------------------------------------------------------------


@loss(lambda: (mlp_params([6, 5, 3]), rand(7, 6, seed=9), labels(7, 3)))
def mlp_relu(p, x, y):
    h = np.maximum(x @ p["w0"] + p["b0"], 0.0)
    logp = log_softmax(h @ p["w1"] + p["b1"])
    return -logp[np.arange(7), y].mean()


@loss(lambda: ([rand(4, 5, seed=1), rand(5, 5, seed=2), rand(5, 2, seed=3)], rand(6, 4, seed=9),
               rand(6, 2, seed=8)))
def mlp_tanh_list(layers, x, y):
    h = x
    for w in layers[:-1]:
        h = np.tanh(h @ w)
    return np.mean((h @ layers[-1] - y) ** 2)


@loss(lambda: ({"layers": [{"w": rand(4, 4, seed=i), "b": rand(4, seed=10 + i)}
                           for i in range(2)], "head": (rand(4, seed=7), 0.2)},
               rand(5, 4, seed=9)))
def nested_pytree(p, x):
    h = x
    for layer in p["layers"]:
        h = sigmoid(h @ layer["w"] + layer["b"])
    w, b = p["head"]
    return np.sum((h @ w + b) ** 2)


@loss(lambda: ({"g": rand(6, seed=1, lo=0.5, hi=1.5), "b": rand(6, seed=2), "w": rand(6, 2)},
               rand(4, 6, seed=9)))
def layernorm(p, x):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    h = (x - mu) / np.sqrt(var + 1e-5) * p["g"] + p["b"]
    return np.sum(np.tanh(h @ p["w"]))


@loss(lambda: ({"g": rand(3, seed=1, lo=0.5, hi=1.5), "w": rand(4, 3, seed=2)},
               rand(8, 4, seed=9)))
def batchnorm_std(p, x):
    h = x @ p["w"]
    h = (h - h.mean(axis=0)) / (h.std(axis=0) + 1e-3)
    return np.mean(np.square(h * p["g"] - 0.5))


@loss(lambda: ({"q": rand(4, 4, seed=1), "k": rand(4, 4, seed=2), "v": rand(4, 4, seed=3)},
               rand(5, 4, seed=9)))
def attention(p, x):
    q, k, v = x @ p["q"], x @ p["k"], x @ p["v"]
    scores = q @ k.T / 2.0
    weights = np.exp(log_softmax(scores))
    return np.sum((weights @ v) ** 2)


@loss(lambda: ({"qkv": rand(6, 18, seed=1), "o": rand(6, 6, seed=2)}, rand(2, 5, 6, seed=9)))
def multihead_attention(p, x):
    b, t, d = x.shape
    qkv = (x @ p["qkv"]).reshape(b, t, 3, 2, 3).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    att = np.exp(log_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(3.0)))
    out = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return np.mean((out @ p["o"]) ** 2)


@loss(lambda: ({"wx": rand(3, 4, seed=1), "wh": rand(4, 4, seed=2), "wo": rand(4, seed=3)},
               rand(6, 2, 3, seed=9)))
def rnn_unrolled(p, xs):
    h = np.zeros((2, 4))
    total = 0.0
    for t in range(6):
        h = np.tanh(xs[t] @ p["wx"] + h @ p["wh"])
        total = total + np.sum(h @ p["wo"]) * 0.5**t
    return total


@loss(lambda: ({"z": rand(7, 3, seed=1), "r": rand(7, 3, seed=2), "h": rand(7, 3, seed=3)},
               rand(4, 2, 4, seed=9)))
def gru_unrolled(p, xs):
    h = np.zeros((2, 3))
    for x in xs:
        xh = np.concatenate([x, h], axis=1)
        z = sigmoid(xh @ p["z"])
        r = sigmoid(xh @ p["r"])
        cand = np.tanh(np.concatenate([x, r * h], axis=1) @ p["h"])
        h = (1.0 - z) * h + z * cand
    return np.sum(h**2)


@loss(lambda: (rand(3, 2, seed=1), rand(10, 2, seed=9)))
def conv1d_stack(kernel, x):
    windows = np.stack([x[i:i + 3] for i in range(8)])
    out = np.einsum("wkc,kc->w", windows, kernel)
    return np.sum(np.tanh(out))


@loss(lambda: (rand(12, seed=1), rand(6, 2, seed=2)))
def maxpool(x, w):
    pooled = x.reshape(6, 2).max(axis=1)
    return np.sum(pooled[:, None] * w)


@loss(lambda: (rand(5, 3, seed=1), np.array([0, 2, 2, 4, 0, 1, 2])))
def embedding_repeated(table, ids):
    return np.sum(np.sin(table[ids]) * np.arange(1.0, 8.0)[:, None])


@loss(lambda: (rand(4, 4, seed=1), rand(4, seed=2)))
def bilinear_trace(a, v):
    return np.einsum("i,ij,j->", v, a, v) + np.einsum("ii", a @ a) + np.sum(a * np.eye(4))


@loss(lambda: (rand(2, 3, 4, seed=1), rand(3, 4, 2, seed=2)), argnums=(0, 1))
def tensordot_loss(a, b):
    return np.sum(np.tensordot(a, b, axes=([1, 2], [0, 1])) ** 2)


# ``**`` between NumPy scalars is the scalar_power op outside grad (Python's scalar power
# differs from np.power in the last digit); under grad the tape's np.power semantics
@loss(lambda: (rand(6, seed=1, lo=0.5, hi=1.5),))
def geometric_mean(x):
    return np.prod(x) ** (1.0 / 6) + np.prod(x.reshape(2, 3), axis=0).sum()


@loss(lambda: (rand(5, seed=1), rand(5, seed=2)), argnums=(0, 1))
def cosine_similarity(a, b):
    return 1.0 - np.dot(a, b) / (np.sqrt(np.sum(a * a)) * np.sqrt(np.sum(b * b)))


@loss(lambda: (rand(6, seed=1, lo=0.2, hi=2.0),))
def ufunc_mix(x):
    return np.sum(np.arctan(x) * np.sqrt(x) + np.cbrt(x) - np.log2(x) + np.expm1(-x)
                  + np.hypot(x, 1.5) + np.power(x, 1.5) + np.float_power(x, 0.5) + np.sinh(x))


@loss(lambda: (rand(3, 4, seed=1), rand(4, 2, seed=2)), argnums=(0, 1))
def clip_and_concat(a, b):
    c = np.concatenate([np.clip(a, -0.5, 0.5), a * 2.0], axis=0) @ b
    return np.sum(c ** 2) + np.max(c) - np.min(b)


@loss(lambda: (rand(3, 3, seed=1),))
def setitem_build(a):
    m = np.zeros_like(a)
    m[0] = a[1] * 2.0
    m[1:, 1:] = a[:2, :2] ** 2
    m[np.array([2, 2]), np.array([0, 0])] = a[0, 0]
    return np.sum(m * a)


@loss(lambda: (rand(4, seed=1), 1.5), argnums=(0, 1))
def python_float_param(x, scale):
    return np.sum((x * scale) ** 2) + scale


# -- Python control flow and graph breaks ---------------------------------------------------


@loss(lambda: (rand(6, seed=1),), one_graph=False)
def data_dependent_if(x):
    s = np.sum(x**2)
    if s > 1.0:
        return s / np.sqrt(s)
    return s * 2.0


@loss(lambda: (rand(3, seed=1) * 4.0,), one_graph=False)
def while_until_small(x):
    total = 0.0
    while np.max(np.abs(x)) > 0.1:
        total = total + np.sum(x * x)
        x = x * 0.5
    return total


@loss(lambda: (rand(8, seed=1),), one_graph=False)
def per_element_branches(x):
    s = 0.0
    for v in x:
        s = s + (v * v if v > 0 else -v)
    return s


@loss(lambda: (mlp_params([4, 3, 1]), rand(5, 4, seed=9)), one_graph=False)
def mlp_with_graph_break(p, x):
    h = np.tanh(x @ p["w0"] + p["b0"])
    npdynamo.graph_break()
    out = h @ p["w1"] + p["b1"]
    return np.mean(out**2)


@loss(lambda: (rand(4, 3, seed=1),), one_graph=False)
def boolean_mask(a):
    return np.sum(a[a > 0] ** 3) + np.mean(a)


@loss(lambda: (rand(5, seed=1),), one_graph=False)
def argmax_select(x):
    return x[np.argmax(x)] * 2.0 + np.sum(x[np.argsort(x)[:2]])
