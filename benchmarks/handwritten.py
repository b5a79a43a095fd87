"""Hand-written numba versions of the benchmark workloads: the ceiling for generated kernels.

Each is what an expert would write by hand for this machine: one fused loop per workload,
``prange`` over rows or elements (serial next to BLAS), ``error_model='numpy'``, fast-math where
reductions need it, the vectorisable exp/tanh of ``npdynamo.backends.numba.approx`` (numba has
no SVML here, so ``np.exp`` in a loop is a scalar call), constants typed like the data (a Python
float would turn float32 arithmetic into float64), and large outputs written into buffers
allocated once: the ceiling. (A fresh large array costs a page fault per 4 KiB page when first
written, often more than the kernel; the user's functions must return new arrays, which npdynamo
does by reusing only buffers nobody references any more, from the same size on.)
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numba import njit, prange

from npdynamo.backends.numba.approx import exp_f32, exp_f64, tanh_f32, tanh_f64
from npdynamo.backends.numba.program import REUSE_MIN_BYTES

_FM = {"reassoc", "contract", "arcp", "nsz"}
_BUFFERS: dict = {}


def _out(tag: str, like: np.ndarray) -> np.ndarray:
    """The output buffer ``tag`` for arrays like ``like``: allocated once when large (the same
    size rule as npdynamo's buffer reuse), a new array when small."""
    if like.nbytes < REUSE_MIN_BYTES:
        return np.empty_like(like)
    key = (tag, like.shape, like.dtype)
    if key not in _BUFFERS:
        _BUFFERS[key] = np.empty_like(like)
    return _BUFFERS[key]
_EXP = {np.float32: exp_f32, np.float64: exp_f64}
_TANH = {np.float32: tanh_f32, np.float64: tanh_f64}


@cache
def _gelu(ty):
    tanh = _TANH[ty]
    c0, c1, half, one = ty(math.sqrt(2 / math.pi)), ty(0.044715), ty(0.5), ty(1.0)

    @njit(parallel=True, error_model="numpy", fastmath=_FM)
    def kernel(x, out):
        for i in prange(x.shape[0]):
            v = x[i]
            out[i] = half * v * (one + tanh(c0 * (v + c1 * v * v * v)))

    return kernel


def gelu(x):
    out = _out("gelu", x)
    _gelu(x.dtype.type)(x.ravel(), out.ravel())
    return out


gelu_cubed = gelu  # the same kernel: a hand-written version has no x**3 to rewrite


@cache
def _softmax(ty):
    exp, zero, one = _EXP[ty], ty(0), ty(1)

    @njit(parallel=True, error_model="numpy", fastmath=_FM)
    def kernel(x, out):
        n, m = x.shape
        for i in prange(n):
            mx = x[i, 0]
            for j in range(m):
                mx = max(mx, x[i, j])
            s = zero
            for j in range(m):
                e = exp(x[i, j] - mx)
                out[i, j] = e
                s += e
            inv = one / s
            for j in range(m):
                out[i, j] *= inv

    return kernel


def softmax(x):
    out = _out("softmax", x)
    _softmax(x.dtype.type)(x, out)
    return out


@cache
def _layernorm(ty):
    zero, one, eps = ty(0), ty(1), ty(1e-5)

    @njit(parallel=True, error_model="numpy", fastmath=_FM)
    def kernel(x, w, b, out):
        n, m = x.shape
        inv_m = one / ty(m)
        for i in prange(n):
            s = zero
            for j in range(m):
                s += x[i, j]
            mean = s * inv_m
            q = zero
            for j in range(m):
                d = x[i, j] - mean
                q += d * d
            inv = one / np.sqrt(q * inv_m + eps)
            for j in range(m):
                out[i, j] = (x[i, j] - mean) * inv * w[j] + b[j]

    return kernel


def layernorm(x, weight, bias):
    out = _out("layernorm", x)
    _layernorm(x.dtype.type)(x, weight, bias, out)
    return out


@cache
def _adam(ty):
    one = ty(1)

    @njit(parallel=True, error_model="numpy", fastmath=_FM)
    def kernel(p, g, m, v, p_out, m_out, v_out, lr, b1, b2, eps, c1, c2):
        for i in prange(p.shape[0]):
            gi = g[i]
            mi = b1 * m[i] + (one - b1) * gi
            vi = b2 * v[i] + (one - b2) * gi * gi
            m_out[i] = mi
            v_out[i] = vi
            p_out[i] = p[i] - lr * (mi / c1) / (np.sqrt(vi / c2) + eps)

    return kernel


def adam(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    new_p, new_m, new_v = {}, {}, {}
    for k, p in params.items():
        ty = p.dtype.type
        new_p[k], new_m[k], new_v[k] = _out(f"p{k}", p), _out(f"m{k}", p), _out(f"v{k}", p)
        _adam(ty)(p.ravel(), grads[k].ravel(), m[k].ravel(), v[k].ravel(), new_p[k].ravel(),
                  new_m[k].ravel(), new_v[k].ravel(), ty(lr), ty(b1), ty(b2), ty(eps),
                  ty(1 - b1**t), ty(1 - b2**t))
    return new_p, new_m, new_v


def adam_in_place(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    for k, p in params.items():
        ty = p.dtype.type
        _adam(ty)(p.ravel(), grads[k].ravel(), m[k].ravel(), v[k].ravel(), p.ravel(),
                  m[k].ravel(), v[k].ravel(), ty(lr), ty(b1), ty(b2), ty(eps),
                  ty(1 - b1**t), ty(1 - b2**t))
    return params, m, v


@cache
def _mlp(ty):
    exp, zero = _EXP[ty], ty(0)

    @njit(error_model="numpy", fastmath=_FM)
    def bias_relu(h, b):
        for i in range(h.shape[0]):
            for j in range(h.shape[1]):
                h[i, j] = max(h[i, j] + b[j], zero)

    @njit(error_model="numpy", fastmath=_FM)
    def row_exp(z, b, out, i):
        """out[i] = exp(z[i] + b - max(z[i] + b)); returns the row's sum."""
        m = z.shape[1]
        mx = z[i, 0] + b[0]
        for j in range(m):
            mx = max(mx, z[i, j] + b[j])
        s = zero
        for j in range(m):
            e = exp(z[i, j] + b[j] - mx)
            out[i, j] = e
            s += e
        return s

    @njit(error_model="numpy", fastmath=_FM)
    def bias_softmax(z, b, out):
        for i in range(z.shape[0]):
            s = row_exp(z, b, out, i)
            for j in range(z.shape[1]):
                out[i, j] /= s

    return bias_relu, bias_softmax, row_exp


def mlp_forward(x, w1, b1, w2, b2):
    """GEMMs by NumPy (BLAS keeps the cores: serial numba kernels in between)."""
    bias_relu, bias_softmax, _ = _mlp(x.dtype.type)
    h = x @ w1
    bias_relu(h, b1)
    z = h @ w2
    out = _out("mlp", z)
    bias_softmax(z, b2, out)
    return out


@cache
def _mlp_step(ty):
    row_exp, log, zero, tiny = _mlp(ty)[2], np.log, ty(0), ty(1e-12)

    @njit(error_model="numpy", fastmath=_FM)
    def softmax_loss_grad(z, b, y, d):
        """logits = z + b; d = (softmax - y) / n; returns the cross-entropy."""
        n, m = z.shape
        total = 0.0
        for i in range(n):
            s = row_exp(z, b, d, i)
            for j in range(m):
                p = d[i, j] / s
                total -= y[i, j] * log(p + tiny)
                d[i, j] = (p - y[i, j]) / n
        return total / n

    @njit(error_model="numpy", fastmath=_FM)
    def relu_grad(d_h, h):
        for i in range(d_h.shape[0]):
            for j in range(d_h.shape[1]):
                if h[i, j] <= zero:
                    d_h[i, j] = zero

    @njit(error_model="numpy", fastmath=_FM)
    def sgd(w, g, lr):
        w_flat, g_flat = w.reshape(-1), g.reshape(-1)
        for i in range(w_flat.shape[0]):
            w_flat[i] -= lr * g_flat[i]

    @njit(error_model="numpy", fastmath=_FM)
    def sgd_bias(b, d, lr):
        for j in range(b.shape[0]):
            s = zero
            for i in range(d.shape[0]):
                s += d[i, j]
            b[j] -= lr * s

    return softmax_loss_grad, relu_grad, sgd, sgd_bias


def mlp_sgd_step(x, y, w1, b1, w2, b2, lr=0.05):
    """GEMMs by NumPy; bias+ReLU, softmax+loss+its gradient, the ReLU mask and the updates
    fused (the ReLU's output is its mask: h > 0 exactly where the pre-activation is)."""
    bias_relu = _mlp(x.dtype.type)[0]
    softmax_loss_grad, relu_grad, sgd, sgd_bias = _mlp_step(x.dtype.type)
    lr = x.dtype.type(lr)
    h = x @ w1
    bias_relu(h, b1)
    d_logits = _out("mlp_d", np.empty((x.shape[0], w2.shape[1]), x.dtype))
    loss = softmax_loss_grad(h @ w2, b2, y, d_logits)
    d_h = d_logits @ w2.T
    relu_grad(d_h, h)
    sgd(w2, h.T @ d_logits, lr)
    sgd_bias(b2, d_logits, lr)
    sgd(w1, x.T @ d_h, lr)
    sgd_bias(b1, d_h, lr)
    return x.dtype.type(loss)


@cache
def _tiny(ty):
    c05, c1, c2, c3 = ty(0.5), ty(1), ty(2), ty(3)

    @njit(error_model="numpy")
    def kernel(x, out):
        for i in range(x.shape[0]):
            v = x[i]
            y = v * c2 + c1
            y = y * v - c3
            y = y / c2 + v
            y = y * c05 - v * v
            out[i] = y + c1

    return kernel


def tiny_chain(x):
    out = _out("tiny", x)
    _tiny(x.dtype.type)(x, out)
    return out
