"""Normalisation: every spelling of an operation gives one canonical (op, args, kwargs), the
canonical call computes exactly what the original NumPy call computes, and calls a graph cannot
express are refused the way the translator expects."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import npdynamo.ops as ops
from npdynamo.ops import (
    BINARY_OPERATORS,
    INPLACE_OPERATORS,
    REGISTRY,
    UNARY_OPERATORS,
    ArrayMeta,
    UnsupportedArguments,
    infer_inplace,
    normalize_attribute,
    normalize_call,
    normalize_method,
)

X = np.arange(6.0).reshape(2, 3)
Y = np.linspace(-1.0, 1.0, 3)
INTS = np.arange(6).reshape(2, 3)
XT = X.T


def same(a, b) -> bool:
    """Two canonical forms are identical (array operands compared by identity)."""
    (op1, args1, kw1), (op2, args2, kw2) = a, b
    if op1 is not op2 or len(args1) != len(args2) or kw1 != kw2:
        return False
    if list(kw1) != list(kw2):
        return False
    return all(x is y or (type(x) is type(y) and _eq(x, y)) for x, y in zip(args1, args2))


def _eq(x, y) -> bool:
    if isinstance(x, tuple):
        return len(x) == len(y) and all(u is v or _eq(u, v) for u, v in zip(x, y))
    return bool(x == y)


def test_four_spellings_of_add_are_identical() -> None:
    forms = [
        normalize_call(np.add, (X, Y), {}),
        normalize_method("__add__", X, (Y,), {}),
        (BINARY_OPERATORS["+"], (X, Y), {}),
        normalize_call(np.add, (X, Y), {"out": None}),
        normalize_call(np.ndarray.__add__, (X, Y), {}),
    ]
    for form in forms[1:]:
        assert same(forms[0], form), form
    assert forms[0][0] is ops.add


def test_reflected_dunders_swap_operands() -> None:
    op, args, kwargs = normalize_method("__rsub__", X, (2.0,), {})
    assert op is ops.subtract and args == (2.0, X) and kwargs == {}


@pytest.mark.parametrize(
    "forms",
    [
        [(np.sum, (X,), {"axis": 1}), ("sum", X, (1,), {}), ("sum", X, (), {"axis": 1})],
        [
            (np.sum, (X,), {}),
            (np.sum, (X,), {"axis": None, "keepdims": False}),
            ("sum", X, (), {}),
            (np.sum, (X, None, None, None, False), {}),
        ],
        [(np.mean, (X,), {"axis": [0, 1]}), ("mean", X, ((0, 1),), {})],
        [(np.max, (X,), {"axis": 0}), (np.amax, (X, 0), {}), ("max", X, (0,), {})],
        [
            (np.var, (X,), {"ddof": 1}),
            ("var", X, (), {"ddof": 1}),
            (np.var, (X,), {"correction": 1}),
        ],
        [
            (np.reshape, (X, (3, 2)), {}),
            ("reshape", X, (3, 2), {}),
            ("reshape", X, ((3, 2),), {}),
            ("reshape", X, ([3, 2],), {}),
            (np.reshape, (X,), {"shape": (3, 2)}),
        ],
        [
            (np.transpose, (X,), {}),
            ("transpose", X, (), {}),
            ("transpose", X, (None,), {}),
            ("T", X),
        ],
        [
            (np.transpose, (X, (1, 0)), {}),
            ("transpose", X, (1, 0), {}),
            ("transpose", X, ((1, 0),), {}),
            ("transpose", X, ([1, 0],), {}),
        ],
        [
            ("astype", X, (np.float32,), {}),
            ("astype", X, ("float32",), {}),
            ("astype", X, (np.dtype("float32"),), {}),
        ]
        + ([(np.astype, (X, np.float32), {})] if hasattr(np, "astype") else []),
        [
            (np.abs, (X,), {}),
            (np.absolute, (X,), {}),
            ("__abs__", X, (), {}),
            (UNARY_OPERATORS["abs"], (X,)),
        ],
        [(np.mod, (X, 2), {}), (np.remainder, (X, 2), {}), ("__mod__", X, (2,), {})],
        [
            (np.zeros, (3,), {}),
            (np.zeros, ((3,),), {"dtype": float}),
            (np.zeros, ([3],), {"dtype": "float64"}),
        ],
        [
            (np.clip, (X, 0, 1), {}),
            (np.clip, (X,), {"min": 0, "max": 1}),
            ("clip", X, (0, 1), {}),
            ("clip", X, (), {"min": 0, "max": 1}),
        ],
        [
            (np.arange, (5,), {}),
            (np.arange, (0, 5), {}),
            (np.arange, (0, 5, 1), {}),
            (np.arange, (), {"stop": 5}),
            (np.arange, (np.int64(5),), {}),
        ],
        [(np.einsum, ("ij,jk->ik", X, XT), {}), (np.einsum, (" ij , jk -> ik ", X, XT), {})],
        [(np.dot, (X, Y), {}), ("dot", X, (Y,), {}), (np.dot, (X, Y), {"out": None})],
        [("copy", X, (), {}), ("copy", X, (), {"order": "C"})],
        [(np.ndarray.sum, (X,), {"axis": 0}), ("sum", X, (0,), {})],
    ],
)
def test_function_and_method_spellings_agree(forms) -> None:
    normalized = [_normalize(f) for f in forms]
    for n in normalized[1:]:
        assert same(normalized[0], n), (normalized[0], n)


def _normalize(form):
    if isinstance(form[0], ops.Op):
        return (form[0], tuple(form[1]), {})
    if len(form) == 2:
        return normalize_attribute(form[0], form[1])
    if isinstance(form[0], str):
        return normalize_method(*form)
    return normalize_call(*form)


def test_static_arguments_have_one_spelling() -> None:
    _, _, kw = normalize_call(np.sum, (X,), {"axis": [1, 0], "dtype": "f4"})
    assert kw == {"axis": (1, 0), "dtype": np.dtype(np.float32)}
    _, args, kw = normalize_call(np.zeros, (np.int64(3),), {"dtype": np.float32})
    assert args == () and kw == {"shape": (3,), "dtype": np.dtype(np.float32)}
    _, _, kw = normalize_method("reshape", X, (np.int64(3), -1), {})
    assert kw == {"shape": (3, -1)} and all(type(d) is int for d in kw["shape"])
    _, args, _ = normalize_method("__getitem__", X, ((np.int64(1), slice(np.int32(0), None)),), {})
    assert args[1] == (1, slice(0, None, None)) and type(args[1][0]) is int


# -- the canonical call computes exactly what NumPy computes --------------------------------

B = np.array([True, False, True])
S = np.float32(2.5)

FIDELITY = [
    (np.add, (X, 2), {}),
    (np.add, (INTS, 2.5), {}),
    (np.add, (INTS.astype(np.int8), 3), {}),
    (np.multiply, (S, 3), {}),
    (np.true_divide, (INTS, 4), {}),
    (np.power, (X, 2), {}),
    (np.add, (INTS, INTS), {"dtype": np.float32}),
    (np.maximum, (X, Y), {}),
    (np.less, (INTS.astype(np.int8), 1000), {}),
    (np.sqrt, (B,), {}),
    (np.exp, (1,), {}),
    (np.divmod, (X, 0.7), {}),
    (np.matmul, (X, X.T), {}),
    (np.dot, (Y, Y), {}),
    (np.einsum, ("ij->j", X), {}),
    (np.outer, (Y, [1, 2]), {}),
    (np.tensordot, (X, X, 2), {}),
    (np.where, (B, Y, 0), {}),
    (np.clip, (INTS, -1000, 3), {}),
    (np.clip, (X, None, 2), {}),
    (np.sum, (INTS.astype(np.int32),), {}),
    (np.mean, (INTS,), {"axis": 1, "keepdims": True}),
    (np.var, (X,), {"ddof": 1}),
    (np.std, (INTS,), {"axis": 0}),
    (np.argmax, (X,), {"axis": 1}),
    (np.any, (X,), {}),
    (np.prod, (X,), {"dtype": np.float32}),
    (np.max, (S,), {}),
    (np.reshape, (X, (3, -1)), {}),
    (np.transpose, (S,), {}),
    (np.squeeze, (X[None],), {}),
    (np.expand_dims, (X, (0, -1)), {}),
    (np.concatenate, ([X, X],), {"axis": None}),
    (np.stack, ((Y, Y),), {"axis": -1}),
    (np.broadcast_to, (Y, (2, 3)), {}),
    (np.ravel, (X.T,), {}),
    (np.copy, (S,), {}),
    (np.array, (X,), {"dtype": np.int8}),
    (np.asarray, ([1, 2.5],), {}),
    (np.swapaxes, (X, 0, 1), {}),
    (np.moveaxis, (X, 0, -1), {}),
    (np.zeros, (3,), {}),
    (np.ones, ((2, 2),), {"dtype": bool}),
    (np.full, (2, 7), {}),
    (np.full, ((2, 3), Y), {}),
    (np.zeros_like, (S,), {}),
    (np.full_like, (INTS, 1.5), {}),
    (np.arange, (0.5, 3), {}),
    (np.arange, (1, 10, 3), {"dtype": np.float32}),
    (np.eye, (3,), {"k": 1}),
    (np.identity, (2,), {"dtype": int}),
    (np.linspace, (0, 1, 5), {}),
]

METHOD_FIDELITY = [
    ("__add__", X, (1,), {}),
    ("__rtruediv__", X, (1,), {}),
    ("__rpow__", INTS, (2,), {}),
    ("__pow__", X, (0.5,), {}),
    ("__matmul__", X, (X.T,), {}),
    ("__neg__", INTS, (), {}),
    ("__invert__", B, (), {}),
    ("__lt__", X, (Y,), {}),
    ("__rdivmod__", X, (7.0,), {}),
    ("sum", X, (), {"axis": 0}),
    ("max", S, (), {}),
    ("copy", S, (), {}),
    ("reshape", S, ((),), {}),
    ("reshape", X, (-1,), {}),
    ("transpose", X, (1, 0), {}),
    ("astype", S, ("f8",), {}),
    ("flatten", X, (), {}),
    ("squeeze", S, (), {}),
    ("clip", X, (), {"max": 2}),
    ("dot", X, (Y,), {}),
    ("var", INTS, (), {"ddof": 1}),
    ("__getitem__", X, ((1, slice(None, None, -1)),), {}),
    ("__getitem__", X, (1,), {}),
    ("__getitem__", X, ((Ellipsis, None, INTS[0, :2]),), {}),
    ("__getitem__", X, ([1, 0],), {}),
    ("__getitem__", S, ((),), {}),
]


def _run(call):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return call()


def _assert_identical(expected, got) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for e, g in zip(expected, got):
            _assert_identical(e, g)
        return
    assert type(got) is type(expected)
    assert got.dtype == expected.dtype and np.shape(got) == np.shape(expected)
    assert np.array_equal(got, expected, equal_nan=expected.dtype.kind in "fc")


@pytest.mark.parametrize("fn, args, kwargs", FIDELITY, ids=lambda v: getattr(v, "__name__", ""))
def test_canonical_call_computes_what_numpy_computes(fn, args, kwargs) -> None:
    expected = _run(lambda: fn(*args, **kwargs))
    op, cargs, ckwargs = normalize_call(fn, args, kwargs)
    _assert_identical(expected, _run(lambda: op(*cargs, **ckwargs)))


@pytest.mark.parametrize("name, this, args, kwargs", METHOD_FIDELITY, ids=lambda v: str(v)[:12])
def test_canonical_method_computes_what_numpy_computes(name, this, args, kwargs) -> None:
    expected = _run(lambda: getattr(this, name)(*args, **kwargs))
    op, cargs, ckwargs = normalize_method(name, this, args, kwargs)
    _assert_identical(expected, _run(lambda: op(*cargs, **ckwargs)))


def test_attribute_t_is_transpose() -> None:
    op, args, kwargs = normalize_attribute("T", X)
    assert op is ops.transpose and kwargs == {}
    _assert_identical(X.T, op(*args))
    assert normalize_attribute("shape", X) is None


def test_setitem_is_functional() -> None:
    op, args, kwargs = normalize_method("__setitem__", INTS, ((slice(None), 1), 9.7), {})
    out = op(*args, **kwargs)
    expected = INTS.copy()
    expected[:, 1] = 9.7
    _assert_identical(expected, out)
    assert INTS[0, 1] == 1, "the input must not change"
    assert op.infer(ArrayMeta.of(INTS), args[1], 9.7) == ArrayMeta(INTS.shape, INTS.dtype)


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: normalize_call(np.add, (X, Y), {"out": np.empty(3)}),
        lambda: normalize_call(np.add, (X, Y, np.empty((2, 3))), {}),
        lambda: normalize_call(np.add, (X, Y), {"where": B}),
        lambda: normalize_call(np.add, (X, Y), {"casting": "unsafe"}),
        lambda: normalize_call(np.add, (X, Y), {"order": "F"}),
        lambda: normalize_call(np.sum, (X,), {"where": X > 1}),
        lambda: normalize_call(np.sum, (X,), {"initial": 1.0}),
        lambda: normalize_method("sum", X, (), {"out": np.empty(())}),
        lambda: normalize_call(np.concatenate, (X,), {}),
        lambda: normalize_call(np.einsum, (X, [0, 1], [1]), {}),
        lambda: normalize_call(np.einsum, ("ij->", X), {"optimize": True}),
        lambda: normalize_method("reshape", X, (6,), {"order": "F"}),
        lambda: normalize_call(np.stack, ([1, X],), {"dtype": np.float32}),
        lambda: normalize_call(np.add, (X, [X, 1]), {}),
        lambda: ops.getitem.infer(ArrayMeta.of(Y), (ArrayMeta.of(B),)),
    ],
)
def test_valid_calls_a_graph_cannot_express_are_unsupported(call) -> None:
    with pytest.raises(UnsupportedArguments):
        call()


@pytest.mark.parametrize(
    "fn, args, kwargs, exc",
    [
        (np.add, (X, Y), {"foo": 1}, TypeError),
        (np.add, (X,), {}, TypeError),
        (np.add, (X, Y, None, None), {}, TypeError),
        (np.sum, (X,), {"foo": 1}, TypeError),
        (np.reshape, (X,), {}, TypeError),
        (np.zeros, (3,), {"foo": 1}, TypeError),
        (np.zeros, (2.0,), {}, TypeError),
        (np.sum, (X,), {"axis": 1.0}, TypeError),
        (np.argmax, (X,), {"axis": (0,)}, TypeError),
        (np.where, (B, Y), {}, ValueError),
        (np.clip, (X, 0), {}, TypeError),
        (np.var, (X,), {"ddof": 1, "correction": 1}, ValueError),
    ],
)
def test_invalid_calls_raise_like_numpy(fn, args, kwargs, exc) -> None:
    with pytest.raises(exc):
        fn(*args, **kwargs)
    with pytest.raises(exc):
        normalize_call(fn, args, kwargs)


def test_invalid_method_calls_raise_type_error() -> None:
    for name, args, kwargs in [
        ("sum", (), {"foo": 1}),
        ("reshape", (), {}),
        ("reshape", (2, 3), {"foo": 1}),
        ("__add__", (), {}),
    ]:
        with pytest.raises(TypeError):
            getattr(X, name)(*args, **kwargs)
        with pytest.raises(TypeError):
            normalize_method(name, X, args, kwargs)


def test_unknown_callables_methods_and_attributes_give_none() -> None:
    assert normalize_call(np.linalg.eigvals, (X,), {}) is None
    assert normalize_call(print, (X,), {}) is None
    assert normalize_call(np.add.reduce, (X,), {}) is None
    assert normalize_method("item", X, (), {}) is None
    assert normalize_method("__iadd__", X, (Y,), {}) is None


# -- operators, in-place updates, the registry ----------------------------------------------


def test_operator_tables() -> None:
    assert set(BINARY_OPERATORS) == {
        "+",
        "-",
        "*",
        "/",
        "//",
        "%",
        "**",
        "@",
        "&",
        "|",
        "^",
        "<<",
        ">>",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
    }
    assert {s: op.name for s, op in UNARY_OPERATORS.items()} == {
        "-": "negative",
        "+": "positive",
        "~": "invert",
        "abs": "absolute",
    }
    assert INPLACE_OPERATORS["-="] is ops.subtract and "==" + "=" not in INPLACE_OPERATORS


@pytest.mark.parametrize(
    "target, other",
    [
        (X.astype(np.float32), Y),
        (INTS, 2),
        (INTS, 1.5),
        (X[:1], X),
        (INTS.astype(np.int8), 1000),
        (X, X.T),
    ],
)
def test_infer_inplace_matches_numpy_augmented_assignment(target, other) -> None:
    def numpy_iadd():
        t = target.copy()
        t += other
        return t

    expected, error = None, None
    try:
        expected = numpy_iadd()
    except Exception as exc:
        error = exc
    other_meta = ArrayMeta.of(other) if isinstance(other, np.ndarray) else other
    if error is not None:
        with pytest.raises(type(error)):
            infer_inplace(ops.add, ArrayMeta.of(target), other_meta)
        return
    result = infer_inplace(ops.add, ArrayMeta.of(target), other_meta)
    assert result.shape == expected.shape
    stored = ops.astype(ops.add(target, other), dtype=target.dtype)
    _assert_identical(expected, stored)


def test_every_op_is_reachable_and_well_formed() -> None:
    for name, op in REGISTRY.items():
        assert getattr(ops, name) is op
        assert op.name == name and repr(op) == f"ops.{name}"
        assert op.kind in ("elementwise", "reduction", "opaque")
        assert op.impure is (name in ("draw", "shuffled"))  # random draws only
        # importing npdynamo installs the autograd VJP rules: every differentiable op has one
        assert callable(op.vjp) if op.differentiable else op.vjp is None or callable(op.vjp)
        assert pickle.loads(pickle.dumps(op)) is op
    assert ops.add.kind == "elementwise" and ops.sum.kind == "reduction"
    assert ops.matmul.kind == "opaque" and ops.where.kind == "elementwise"
    assert not ops.equal.differentiable and not ops.argmax.differentiable
    assert not ops.zeros.differentiable and ops.multiply.differentiable
