"""Small programs covering every op ``to_onnx`` writes (``test_onnx.py`` checks that each op of
``onnx_supported_ops()`` appears in one of them), each with inputs in the op's domain."""

from __future__ import annotations

import numpy as np

import npdynamo

_r = np.random.default_rng(3)
X = _r.standard_normal((4, 3))
Y = _r.standard_normal((4, 3))
POS = np.abs(X) + 0.5
UNIT = np.tanh(X) * 0.9
INTS = _r.integers(-20, 20, (4, 3))
J = _r.integers(1, 9, (4, 3))
B = X > 0
C = npdynamo.Dim("n")

CASES = {
    "float_unary": (lambda x, p, u: (
        np.exp(x), np.log(p), np.sqrt(p), np.sin(x), np.cos(x), np.tan(u), np.cosh(x),
        np.tanh(x), np.floor(x * 3), np.ceil(x * 3), np.rint(x * 3),
        np.reciprocal(p), np.exp2(x), np.log2(p), np.log10(p), np.deg2rad(x), np.rad2deg(x),
        np.trunc(x * 3), np.square(x), np.conjugate(x), np.positive(x), np.fabs(x),
        np.round(x * 3), np.round(x, 2)), (X, POS, UNIT)),
    "float32_only": (lambda x, p, u: (
        np.arcsin(u), np.arccos(u), np.arctan(x), np.sinh(x), np.arcsinh(x), np.arccosh(p + 1),
        np.arctanh(u), np.linalg.det(x[:3] + 3 * np.eye(3, dtype=np.float32)), np.tan(u),
        np.exp(x) * np.float32(2)),
        (X.astype(np.float32), POS.astype(np.float32), UNIT.astype(np.float32))),
    "signed": (lambda x, i: (np.abs(x), -x, np.sign(x), np.abs(i), -i, np.sign(i),
                             np.square(i)), (X, INTS)),
    "binary": (lambda x, y, p: (
        x + y, x - y, x * y, x / p, np.power(p, y), np.float_power(p, y), np.maximum(x, y),
        np.minimum(x, y), np.fmod(x, p), np.hypot(x, y), np.logaddexp(x, y),
        x + 1, 2 - x, x * 0.5, 3.0 / p), (X, Y, POS)),
    "ints": (lambda i, j: (i + j, i - j, i * j, np.maximum(i, j), np.minimum(i, j),
                           np.fmod(i, j), i % j, i & j, i | j, i ^ j, ~i, i * 2 + 1, i / j),
             (INTS, J)),
    "compare": (lambda x, y, i: (
        x == y, x != y, x < y, x <= y, x > y, x >= y, i > 0, x > i, np.isnan(x / x),
        np.isinf(1 / (x * 0)), np.isfinite(x), np.isclose(x, y + 1e-9),
        np.logical_and(x > 0, y > 0), np.logical_or(x > 0, y > 0),
        np.logical_xor(x > 0, y > 0), np.logical_not(x > 0)), (X, Y, INTS)),
    "select": (lambda x, y, b: (np.where(b, x, y), np.clip(x, -0.5, 0.5), x.clip(0, None),
                                x.astype(np.float32), (x * 3).astype(np.int64),
                                b.astype(np.float64), x.copy(), np.asarray(x),
                                np.array([1.0, 2.0, 3.0]) * x), (X, Y, B)),
    "reduce": (lambda x, b, i: (
        x.sum(), x.sum(axis=0), x.sum(axis=1, keepdims=True), x.prod(axis=0), x.mean(),
        x.mean(axis=(0, 1)), x.max(axis=1), x.min(), b.all(), b.any(axis=0), x.var(),
        x.std(axis=0), np.linalg.norm(x), np.linalg.norm(x[0]), np.argmax(x), np.argmin(x, 1),
        i.sum(axis=0), b.sum(), np.ptp(x, axis=0), np.average(x, axis=1),
        np.count_nonzero(b, axis=0), np.cumsum(x, axis=0), np.cumsum(x),
        np.cumulative_sum(x, axis=1), np.trace(x[:3]),
        np.nansum(x / (x > -0.5)), np.nanmean(np.where(b, x, np.nan), axis=0)), (X, B, INTS)),
    "linalg": (lambda x, y: (x @ y.T, np.dot(x, y.T), np.dot(x[0], y[0]), np.dot(2.0, x),
                             np.outer(x[0], y[1]), np.einsum("ij,kj->ik", x, y),
                             np.inner(x[0], y[0]), np.vdot(x, y)), (X, Y)),
    "shapes": (lambda x: (
        x.reshape(3, 4), x.reshape(-1), x.T, np.transpose(x[None], (1, 0, 2)),
        np.swapaxes(x, 0, 1), np.moveaxis(x[None], 0, 2), np.broadcast_arrays(x[0], x)[0],
        np.expand_dims(x, (0, 2)),
        np.squeeze(x[:, :1]), np.squeeze(x[None], axis=0), np.broadcast_to(x[0], (2, 3)),
        np.concatenate([x, x], axis=1), np.concatenate([x, x], axis=None),
        np.stack([x, x], axis=-1), np.vstack([x[0], x[1]]), np.hstack([x, x]),
        np.flip(x), np.flip(x, axis=1), np.tile(x, 2), np.tile(x[0], (2, 2)), np.tril(x),
        np.triu(x, 1),
        np.dstack([x, x]), np.column_stack([x[0], x[1]]), x.ravel(), x.flatten(),
        np.roll(x, 1, axis=0), np.roll(x, -2, axis=1),
        np.diff(x, axis=0), np.diff(x)), (X,)),
    "create": (lambda x: (np.zeros((2, 3)), np.ones(3, dtype=np.int32), np.empty((0, 2)),
                          np.full((2, 2), 7.5), np.zeros_like(x), np.ones_like(x),
                          np.full_like(x, 2.0), np.arange(5), np.arange(1.0, 2.0, 0.25),
                          np.eye(3, 4, k=1), np.tri(3, 4, k=0), np.empty_like(x) * 0
                          ), (X,)),
    "index": (lambda x, i: (x[1], x[-1, 1:], x[:, None, 0], x[::2, ::-1], x[..., 1],
                            x[np.array([0, 2, 3])], x[:, np.array([2, 0])],
                            np.take(x, np.array([1, 0]), axis=1), np.take(x, np.array([5])),
                            np.take_along_axis(x, np.array([[2, 0, 1]] * 4), axis=1),
                            np.sort(x, axis=1), np.sort(x, axis=0)), (X, INTS)),
    "gather_scatter": (lambda x: (
        x[np.array([0, 1, 3]), np.array([2, 0, -1])], x[np.arange(4), np.array([0, 2, 1, 1])],
        npdynamo.grad(lambda a: (a[np.array([0, 0, 3]), np.array([1, 1, 2])] ** 2).sum())(x)),
        (X,)),
    "py": (lambda x: (float(x.shape[0]) * x, x * abs(-2.0)), (X,)),
    "ddof": (lambda x: (x.var(ddof=1), x.std(axis=0, ddof=1), np.var(x, axis=(0, 1), ddof=2)),
             (X,)),
}


def _writes(x):
    y = x.copy()
    y[1] = 0.0
    y[:, 2] = y[:, 0] * 2
    y[::2, 1:] += 1
    y[-1, -1] = 5
    y[None, 0] = np.arange(3.0)
    z = x.copy()
    z[z > 0] = -1  # a mask and one value (x[mask] = array is refused: see test_onnx)
    w = x.copy()
    w[x[:, 0] > 0] = np.float64(2.5)
    return (y, z, w)


CASES["setitem"] = (_writes, (X,))


def _index_math(e):
    out = np.zeros((2, 3))
    for i in range(60):  # rolled: the slice bounds are Python ints computed in the graph
        out = out + e[:, i * 2:i * 2 + 3] * 0.5 + e[:, 3 * i - 1 + 1:3 * i + 3]
    return (out,)


CASES["python_numbers"] = (_index_math, (_r.standard_normal((2, 200)),))
