"""The benchmark workloads, written the way a user writes them (shared by tests and benchmarks)."""

from __future__ import annotations

import math

import numpy as np

GELU_C = math.sqrt(2 / math.pi)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x**3)))


def gelu_cubed(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, weight, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * weight + bias


def adam(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step on a dict of parameters, written functionally (new arrays returned):
    in-place updates of argument arrays are not capturable yet."""
    new_p, new_m, new_v = {}, {}, {}
    for k in params:
        g = grads[k]
        mk = b1 * m[k] + (1 - b1) * g
        vk = b2 * v[k] + (1 - b2) * g * g
        m_hat = mk / (1 - b1**t)
        v_hat = vk / (1 - b2**t)
        new_p[k] = params[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
        new_m[k] = mk
        new_v[k] = vk
    return new_p, new_m, new_v


def adam_in_place(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """The same step as users usually write it: the state arrays updated in place."""
    for k in params:
        g = grads[k]
        m[k] *= b1
        m[k] += (1 - b1) * g
        v[k] *= b2
        v[k] += (1 - b2) * g * g
        params[k] -= lr * (m[k] / (1 - b1**t)) / (np.sqrt(v[k] / (1 - b2**t)) + eps)
    return params, m, v


def mlp_forward(x, w1, b1, w2, b2):
    """A 2-layer MLP forward with softmax probabilities (the training step needs autograd)."""
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def mlp_sgd_step(x, y, w1, b1, w2, b2, lr=0.05):
    """One SGD step of the same MLP with its backward written by hand (softmax cross-entropy,
    ``y`` one-hot), the parameters updated in place; returns the loss."""
    pre = x @ w1 + b1
    h = np.maximum(pre, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -(y * np.log(p + 1e-12)).sum() / n
    d_logits = (p - y) / n
    d_h = (d_logits @ w2.T) * (pre > 0)
    w2 -= lr * (h.T @ d_logits)
    b2 -= lr * d_logits.sum(axis=0)
    w1 -= lr * (x.T @ d_h)
    b1 -= lr * d_h.sum(axis=0)
    return loss


def tiny_chain(x):
    """Ten elementwise ops on a tiny array: per-call overhead dominates."""
    y = x * 2.0 + 1.0
    y = y * x - 3.0
    y = y / 2.0 + x
    y = y * 0.5 - x * x
    return y + 1.0


def diffusion_3d(field, coeff):
    """One step of fourth-order horizontal diffusion with flux limiting on a (nx, ny, nz) field,
    written with slices and ``np.where`` (a weather-model style stencil)."""
    inner = field[1:-1, 1:-1, :]
    lap = 4.0 * inner - (field[2:, 1:-1, :] + field[:-2, 1:-1, :]
                         + field[1:-1, 2:, :] + field[1:-1, :-2, :])
    flux_x = lap[1:, 1:-1, :] - lap[:-1, 1:-1, :]
    flux_x = np.where(flux_x * (inner[1:, 1:-1, :] - inner[:-1, 1:-1, :]) > 0, 0.0, flux_x)
    flux_y = lap[1:-1, 1:, :] - lap[1:-1, :-1, :]
    flux_y = np.where(flux_y * (inner[1:-1, 1:, :] - inner[1:-1, :-1, :]) > 0, 0.0, flux_y)
    core = inner[1:-1, 1:-1, :]
    return core - coeff * (flux_x[1:, :, :] - flux_x[:-1, :, :]
                           + flux_y[:, 1:, :] - flux_y[:, :-1, :])
