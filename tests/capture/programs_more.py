"""More capture programs: realistic small workloads and corners of the capture surface."""

from __future__ import annotations

import numpy as np

from tests.capture.programs import A, f32, i64, program


@program(lambda: (A(16, 4), A(16), A(4)))
def linear_regression_loss(x, y, w):
    pred = x @ w
    err = pred - y
    return (err**2).mean(), 2 * x.T @ err / x.shape[0]


@program(lambda: (A(10, 3), (A(10) > 0).astype(np.float64), A(3)))
def logistic_loss(x, y, w):
    z = x @ w
    p = 1 / (1 + np.exp(-z))
    eps = 1e-9
    return -(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)).mean()


@program(lambda: (A(5, 4), np.array([0, 3, 1, 2, 3])))
def cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(logits.shape[0]), labels].mean()


@program(lambda: (A(4, 6), A(4, 6), A(4, 6)))
def attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ v


@program(lambda: (A(3, 5), A(5, 5), A(5, 5), A(5)))
def rnn_unrolled(xs, wx, wh, h0):
    h = h0
    outs = []
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
        outs.append(h)
    return np.stack(outs), h


@program(lambda: (A(8, 2), A(8, 2), 0.01, 4))
def nbody_like_steps(pos, vel, dt, steps):
    for _ in range(steps):
        d = pos[:, None, :] - pos[None, :, :]
        r2 = (d**2).sum(axis=-1) + 0.1
        acc = -(d / r2[..., None] ** 1.5).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
    return pos, vel


@program(lambda: (A(20),))
def heat_equation_steps(u):
    for _ in range(5):
        lap = np.concatenate([u[:1], u[:-2] + u[2:] - 2 * u[1:-1], u[-1:]])
        u = u + 0.1 * lap
    return u


@program(lambda: ({"w": A(4), "b": A(4)}, {"w": A(4), "b": A(4)}, 0.1))
def sgd_functional(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in params}


@program(lambda: (A(6),), lambda: (f32(6),))
def adam_functional(p):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    g = 2 * p
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    mhat = m / (1 - 0.9)
    vhat = v / (1 - 0.999)
    return p - 0.001 * mhat / (np.sqrt(vhat) + 1e-8)


@program(lambda: (A(3, 3),))
def mixed_dtypes(x):
    i = np.arange(3)
    return x + i, i * 2.5, (i > 1) + x, x.astype(np.float32) + np.float64(1.0), i // 2


@program(lambda: (i64(4), f32(4)))
def nep50_promotion(i, f):
    return i + 1.5, f + 1.0, f * 2, f + np.float64(1.0), i * True, (i > 0) * 3


@program(lambda: (A(2, 3),))
def keyword_only_call(x):
    return np.sum(x, axis=1, keepdims=True), np.mean(x, keepdims=True), x.max(axis=None)


@program(lambda: (A(4, 4),))
def chained_methods(x):
    return x.T.reshape(2, 8).sum(axis=0).reshape(4, 2).mean(axis=1)


@program(lambda: (A(3, 4),))
def negative_axes(x):
    return x.sum(axis=-1), x.mean(axis=-2), np.expand_dims(x, -1).shape, x.max(axis=(-1, -2))


@program(lambda: (A(5),))
def power_forms(x):
    return x**2, x**3, np.abs(x) ** 0.5, x**-1, 2**x, np.power(x, 2)


@program(lambda: (A(4), 2))
def conditional_on_shape(x, axis_hint):
    if x.ndim == 1 and axis_hint > 1:
        y = x.reshape(2, 2)
    else:
        y = x
    return y.sum(axis=0)


@program(lambda: (A(3),))
def nested_data(x):
    cfg = {"layers": [{"scale": 2.0}, {"scale": 3.0}], "bias": (1.0, 2.0)}
    for layer in cfg["layers"]:
        x = x * layer["scale"]
    return x + cfg["bias"][1], len(cfg["layers"])


@program(lambda: (A(3), [A(3), A(3)]))
def list_of_arrays_input(x, ws):
    out = x
    for w in ws:
        out = out * w
    return out, sum(ws), ws[0]


@program(lambda: (A(3), (A(3), 2.0)))
def tuple_input(x, pair):
    w, s = pair
    return x * w * s, pair


@program(lambda: (A(4),))
def dict_methods(x):
    d = {"a": x}
    d["b"] = x * 2
    d.update({"c": x * 3})
    got = d.get("z", x)
    n = d.pop("a")
    return sorted(d), d.setdefault("e", n), got, len(d)


@program(lambda: (A(4),))
def list_methods(x):
    lst = [x, x * 2]
    lst.extend([x * 3])
    lst.insert(0, x * 0)
    last = lst.pop()
    lst.reverse()
    return lst, last, len(lst)


@program(lambda: (A(3),))
def string_keys_and_format(x):
    names = [f"w{i}" for i in range(3)]
    return {name: x * i for i, name in enumerate(names)}, "-".join(names).upper()


@program(lambda: (A(2, 3), A(3)))
def operator_methods(x, y):
    return x.__mul__(y), y.__rsub__(x), x.__matmul__(y), x.__neg__(), x.__lt__(y)


@program(lambda: (A(3, 4),))
def isinstance_dispatch(x):
    def norm(v):
        if isinstance(v, (list, tuple)):
            return [norm(e) for e in v]
        return v / np.sqrt((v * v).sum())

    return norm(x), norm((x, x * 2))


@program(lambda: (A(3), 3))
def early_return(x, n):
    for i in range(10):
        if i == n:
            return x * i
        x = x + 1
    return x


@program(lambda: (A(6),))
def break_continue(x):
    total = x * 0
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 6:
            break
        total = total + x * i
    return total


@program(lambda: (A(4, 5),))
def reversed_and_slicing_steps(x):
    rows = [x[i] for i in reversed(range(x.shape[0]))]
    return np.stack(rows), x[::2, 1::2], x[-2:, :-1]


@program(lambda: (A(3, 3),))
def where_chain(x):
    return np.where(x > 0.5, 1.0, np.where(x < -0.5, -1.0, x))


@program(lambda: (A(2, 3), A(2, 3)))
def logical_ops(a, b):
    p, q = a > 0, b > 0
    return p & q, p | q, p ^ q, ~p, np.logical_and(p, q), np.logical_not(q)

