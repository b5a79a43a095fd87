"""The capture test programs: ordinary NumPy functions covering DESIGN.md section 6.

Each program is registered with a factory for its arguments; ``test_differential.py`` runs every
one plain and compiled. Programs here must capture into ONE graph with no break.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

PROGRAMS: list[tuple[str, object, object]] = []
RNG = np.random.default_rng(0)


def program(*factories):
    """Register ``fn`` once per argument factory."""

    def register(fn):
        for i, factory in enumerate(factories):
            PROGRAMS.append((f"{fn.__name__}-{i}", fn, factory))
        return fn

    return register


def arr(*shape, dtype=np.float64):
    data = RNG.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        data = (data * 10).round()
    if np.dtype(dtype).kind == "b":
        data = data > 0
    return data.astype(dtype)


A = partial(arr)
f32 = partial(arr, dtype=np.float32)
i64 = partial(arr, dtype=np.int64)

SCALE = 2.5
OFFSETS = (1.0, 2.0, 3.0)
WEIGHTS = {"w": np.ones(4) * 0.5, "b": np.arange(4.0)}


# -- arithmetic, comparisons, ufuncs ---------------------------------------------------------
@program(lambda: (A(3, 4), A(3, 4)), lambda: (f32(5), f32(5)), lambda: (i64(4), i64(4)))
def arith(x, y):
    return x + y, x - y, x * y, x / (y * y + 1), -x, +y


@program(lambda: (A(3, 4),), lambda: (f32(7),), lambda: (i64(6),))
def scalars(x):
    return x * 2, 2.5 * x, x - 1, 1 - x, x / 3, x**2, x + True


@program(lambda: (i64(5), i64(5)))
def integer_ops(a, b):
    b = b * b + 1
    return a // b, a % b, a & b, a | b, a ^ b, a << 2, a >> 1, ~a


@program(lambda: (A(4, 3), A(3)))
def comparisons(x, y):
    return x < y, x <= 0.5, x > y, x >= 0, x == y, x != 0


@program(lambda: (A(3, 4),), lambda: (f32(2, 2),))
def unary_math(x):
    a = np.abs(x)
    return (
        np.exp(x),
        np.log(a + 1),
        np.log1p(a),
        np.expm1(x),
        np.tanh(x),
        np.sqrt(a),
        np.sin(x),
        np.cos(x),
        np.negative(x),
        np.sign(x),
        np.square(x),
        np.reciprocal(a + 1),
    )


@program(lambda: (A(3, 4), A(4)))
def max_min_where_clip(x, y):
    return (
        np.maximum(x, y),
        np.minimum(x, 0.0),
        np.where(x > 0, x, y),
        np.clip(x, -0.5, 0.5),
        x.clip(-1, 1),
    )


@program(lambda: (A(3, 4), A(3, 4)))
def add_forms(x, y):
    return x + y, np.add(x, y), x.__add__(y), np.add(x, y, out=None)


@program(lambda: (A(1000),))
def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


@program(lambda: (A(8, 16),), lambda: (f32(4, 5),))
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@program(lambda: (A(6, 8), A(8), A(8)))
def layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


# -- reductions ------------------------------------------------------------------------------
@program(lambda: (A(3, 4, 5),), lambda: (i64(2, 3, 2),))
def reductions(x):
    return (
        x.sum(),
        x.sum(axis=0),
        np.sum(x, axis=(0, 2)),
        x.mean(axis=-1, keepdims=True),
        np.max(x),
        x.min(axis=1),
        np.prod(x, axis=2),
        x.argmax(),
        np.argmin(x, axis=0),
        x.var(),
        np.std(x, axis=1, ddof=1),
    )


@program(lambda: (A(4, 4) > 0,))
def bool_reductions(m):
    return m.any(), m.all(axis=0), np.sum(m), m.sum(axis=1)


# -- linear algebra --------------------------------------------------------------------------
@program(lambda: (A(3, 4), A(4, 5), A(5)))
def matmuls(a, b, v):
    return a @ b, np.matmul(a, b), np.dot(a, b), b @ v, np.dot(v, v), a.dot(b)


@program(lambda: (A(2, 3, 4), A(2, 4, 5)))
def batched_matmul(a, b):
    return a @ b, np.einsum("bij,bjk->bik", a, b), np.einsum("bij->b", a)


@program(lambda: (A(8, 4), A(4, 16), A(16), A(16, 3), A(3)))
def mlp_forward(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


# -- shapes ----------------------------------------------------------------------------------
@program(lambda: (A(2, 3, 4),))
def shape_ops(x):
    return (
        x.reshape(6, 4),
        x.reshape(-1),
        np.reshape(x, (4, -1)),
        x.T,
        x.transpose(1, 0, 2),
        np.transpose(x, (2, 0, 1)),
        np.expand_dims(x, 0),
        x[None].squeeze(0),
        np.squeeze(x.reshape(1, 24, 1)),
        x.ravel(),
        x.flatten(),
    )


@program(lambda: (A(2, 3), A(2, 3)))
def joins(a, b):
    return (
        np.concatenate([a, b]),
        np.concatenate((a, b), axis=1),
        np.stack([a, b]),
        np.stack((a, b), axis=-1),
        np.broadcast_to(a[0], (4, 3)),
    )


@program(lambda: (A(6, 4),))
def shape_arithmetic(x):
    half = x.shape[0] // 2
    return x[:half] - x[half:], x.reshape(half, -1).sum(axis=1), len(x), x.ndim, x.size


@program(lambda: (A(3, 4),))
def attributes(x):
    return x.shape, x.ndim, x.dtype, x.size, x.T.shape, x.dtype == np.float64


# -- creation, astype ------------------------------------------------------------------------
@program(lambda: (A(3, 4),))
def creation(x):
    return (
        np.zeros((3, 4)) + x,
        np.ones(4) * 2,
        np.full((2, 2), 7.0),
        np.zeros_like(x),
        np.ones_like(x, dtype=np.int32),
        np.full_like(x, 3),
        np.arange(5),
        np.arange(1, 2, 0.25),
        np.eye(3),
        np.eye(2, 3, k=1),
        np.zeros(3, dtype=np.float32),
    )


@program(lambda: (A(3, 4),), lambda: (i64(5),))
def astypes(x):
    return x.astype(np.float32), x.astype("int32"), x.astype(bool), (x > 0).astype(np.float64)


# -- indexing --------------------------------------------------------------------------------
@program(lambda: (A(5, 6),))
def basic_indexing(x):
    return (
        x[0],
        x[-1],
        x[1:3],
        x[:, 2],
        x[1:4, ::2],
        x[..., 1],
        x[None, 0],
        x[::-1],
        x[2, 3],
        x[:, None, :2],
    )


@program(lambda: (A(5, 6), np.array([0, 2, 4])))
def integer_array_indexing(x, idx):
    return x[idx], x[:, idx], x[idx, idx], x[idx][:, 1:3]


@program(lambda: (A(4, 3),))
def fresh_array_updates(x):
    out = np.zeros((4, 3))
    out[0] = x[0]
    out[1:3] = 2.0
    out[:, 2] = x[:, 0] * 3
    acc = x * 1.0
    acc += 1
    acc *= x
    return out, acc


# -- Python values ---------------------------------------------------------------------------
@program(lambda: (A(3), 2, 0.5, True, "mul"))
def python_scalars(x, n, s, flag, mode):
    k = n * 3 + 1
    if flag and mode == "mul":
        return x * k * s
    return x + k


@program(lambda: (A(3), (1.0, 2.0)), lambda: (A(3), [1.0, 2.0, 3.0]))
def sequences(x, coeffs):
    total = x * 0
    for c in coeffs:
        total = total + c * x
    return total, len(coeffs), coeffs[0], coeffs[-1:]


@program(lambda: ({"a": A(3), "b": A(3), "scale": 2.0},))
def dict_input(params):
    return params["a"] * params["scale"] + params["b"], sorted(params.keys())[0]


@program(lambda: (A(3),))
def build_containers(x):
    t = (x, x * 2)
    lst = [x + i for i in range(3)]
    d = {"sum": x.sum(), "first": lst[0]}
    lst.append(t[1])
    return t, lst, d, {"n": len(lst)}


@program(lambda: (A(4),))
def range_enumerate_zip(x):
    out = []
    for i, (a, b) in enumerate(zip(range(3), (2.0, 3.0, 4.0))):
        out.append(x * a + b - i)
    return out


@program(lambda: ({"w": A(3), "b": A(3)},))
def dict_loops(params):
    keys, total = [], 0.0
    for k in params:
        keys.append(k)
    for _k, v in params.items():
        total = total + v
    return keys, total, list(params.values())[1]


@program(lambda: (A(3),))
def slices_and_none(x):
    s = slice(0, 2)
    return x[s], x[None], x[:, None] * x[None, :]


@program(lambda: (A(3), 4))
def builtins_on_numbers(x, n):
    return (
        x * min(n, 3),
        x + max(2, n, 1),
        abs(-n),
        sum([1, 2, n]),
        int(2.7) + n,
        float(n) * x,
        bool(n),
        isinstance(n, int),
        isinstance(x, np.ndarray),
        round(2.567, 2),
        divmod(n, 3),
    )


@program(lambda: (A(3),))
def math_module(x):
    return x * math.sqrt(2.0) + math.pi, x * math.exp(1), np.pi * x


@program(lambda: (A(3),))
def fstring_constants(x):
    key = f"layer_{2}"
    d = {key: x}
    return d["layer_2"] * 2


@program(lambda: (A(3), 5))
def while_known(x, n):
    i = 0
    while i < n:
        x = x * 1.5
        i += 1
    return x, i


@program(lambda: (A(2, 2), None), lambda: (A(2, 2), A(2, 2)))
def optional_arg(x, bias):
    if bias is None:
        return x * 2
    return x * 2 + bias


@program(lambda: (A(3),))
def unpacking(x):
    a, b, *rest = (x, x * 2, x * 3, x * 4)
    (c, d), e = (1, 2), 3
    first, second = x.reshape(3, 1)[:2]
    return a + b, rest, c + d + e, first, second


@program(lambda: (A(3), A(3)))
def comprehensions(x, y):
    squares = [v * v for v in (x, y)]
    mapping = {i: x * i for i in range(3)}
    return squares, mapping, [k for k in mapping if k > 0]


@program(lambda: (A(4),))
def boolean_logic(x):
    n = x.shape[0]
    a = n > 2 and n < 10
    b = n < 2 or n == 4
    return (x * 2 if a and b else x), not a, n in (1, 4), 3 not in [1, 2]


@program(lambda: (A(3),))
def tuple_returns(x):
    return (x,), ((x, 1), [x]), ()


@program(lambda: (A(3),))
def returns_input(x):
    return x


@program(lambda: (A(3),))
def returns_same_twice(x):
    y = x * 2
    return y, y, x


@program(lambda: (3, 4.0))
def pure_python(a, b):
    return a * b + 1, [a] * 2, (a, b), str(a)


@program(lambda: (A(3), np.float32(2.0)), lambda: (f32(3), np.float64(0.5)))
def numpy_scalar_args(x, s):
    return x * s, s * 2


@program(lambda: (A(3),))
def numpy_constants(x):
    return x * np.float32(2), x.astype(np.float32) * np.float64(3), np.sqrt(2.0) * x


# -- globals ---------------------------------------------------------------------------------
@program(lambda: (A(4),))
def reads_globals(x):
    return x * SCALE + OFFSETS[1] + WEIGHTS["w"] * WEIGHTS["b"]


# -- user functions --------------------------------------------------------------------------
def _helper(a, b=2.0, *, c=1.0):
    return a * b + c


def _varargs(*args, **kwargs):
    total = 0
    for a in args:
        total = total + a
    return total * kwargs.get("scale", 1)


def _relu(x):
    return np.maximum(x, 0)


def _deep(x, n):
    if n == 0:
        return x
    return _deep(x + 1, n - 1)


@program(lambda: (A(3),))
def inline_defaults_kwargs(x):
    return _helper(x), _helper(x, 3.0), _helper(x, c=5.0), _helper(b=0.5, a=x)


@program(lambda: (A(3), A(3)))
def inline_star_args(x, y):
    args = (x, y)
    kw = {"scale": 3}
    return _varargs(x, y), _varargs(*args, **kw), _varargs(x, scale=2.0)


@program(lambda: (A(3),))
def inline_recursion(x):
    return _deep(x, 3), _relu(x - 0.5)


@program(lambda: (A(3), 2.0))
def nested_closure(x, k):
    def scale(v):
        return v * k

    def compose(f, g):
        return lambda v: f(g(v))

    h = compose(scale, _relu)
    return scale(x), h(x)


def _make_affine(w, b):
    def affine(x):
        return x * w + b

    return affine


AFFINE = _make_affine(np.full(3, 2.0), 1.0)


@program(lambda: (A(3),))
def global_closure(x):
    return AFFINE(x)


def make_closure_program():
    bias = np.arange(3.0)
    factor = 4

    def closure_fn(x):
        return x * factor + bias

    return closure_fn


_closure_fn = make_closure_program()
PROGRAMS.append(("closure_over_array-0", _closure_fn, lambda: (A(3),)))


@program(lambda: (A(3),))
def lambdas(x):
    sq = lambda v: v * v  # noqa: E731
    return sq(x), (lambda a, b=2: a * b)(x)


# -- user objects ----------------------------------------------------------------------------
class Linear:
    scale = 1.5

    def __init__(self, n_in, n_out):
        self.w = arr(n_in, n_out)
        self.b = np.zeros(n_out)
        self.activation = "relu"

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        y = x @ self.w + self.b
        if self.activation == "relu":
            y = np.maximum(y, 0)
        return y * self.scale

    @property
    def n_out(self):
        return self.w.shape[1]

    @staticmethod
    def double(x):
        return x * 2

    @classmethod
    def tag(cls):
        return cls.__name__


class MLP:
    def __init__(self):
        self.layers = [Linear(4, 8), Linear(8, 3)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@program(lambda: (Linear(4, 3), A(2, 4)))
def object_method(layer, x):
    return layer.forward(x), layer(x), layer.n_out, layer.double(x), layer.tag()


@program(lambda: (MLP(), A(5, 4)))
def object_list_of_layers(model, x):
    return model.forward(x)


@program(lambda: (Linear(3, 3), A(3)))
def object_attr_reads(layer, x):
    return x * layer.scale + layer.b, layer.activation


@program(lambda: (Linear(3, 2), A(1, 3)))
def bound_method_arg(layer, x):
    f = layer.forward
    return f(x)
