"""NumPy functions returning several arrays, captured without a break: the split family (views of
the operand, writes through them reach it), ``np.meshgrid`` and ``np.broadcast_arrays``; plain vs
compiled on both backends, errors, identities and aliasing as NumPy has them."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.ops.composite import Composite
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.normalize import normalize_call
from tests.backends.compare import check_one_graph
from tests.differential import check_same

X = np.arange(24.0).reshape(4, 6)
C3 = np.arange(24.0).reshape(2, 3, 4)
U, V = np.linspace(0.0, 1.0, 3), np.arange(4.0)

CASES = {
    "split": (lambda x: [p * 2 for p in np.split(x, 2)], (X,)),
    "split_axis": (lambda x: np.split(x, [1, 4, 10], axis=-1), (X,)),
    "array_split": (lambda x: np.array_split(x, 4, axis=1), (X,)),
    "array_split_many": (lambda x: np.array_split(x, 7), (X,)),
    "hsplit": (lambda x: np.hsplit(x, 3)[1] + 1, (X,)),
    "hsplit_1d": (lambda v: np.hsplit(v, [2]), (V,)),
    "vsplit": (lambda x: np.vsplit(x, [1, 3]), (X,)),
    "dsplit": (lambda c: np.dsplit(c, 2), (C3,)),
    "meshgrid_xy": (lambda u, v: np.meshgrid(u, v), (U, V)),
    "meshgrid_ij": (lambda u, v: np.meshgrid(u, v, v, indexing="ij"), (U, V)),
    "meshgrid_sparse": (lambda u, v: np.meshgrid(u, v, sparse=True), (U, V)),
    "meshgrid_nocopy": (lambda u, v: [g * 1 for g in np.meshgrid(u, v, copy=False)], (U, V)),
    "meshgrid_one": (lambda u: np.meshgrid(u), (U,)),
    "broadcast_arrays": (lambda u, x: np.broadcast_arrays(u, x[:3, :1], 2.0), (U, X)),
}
#: the cases whose results are only views of the argument: no graph (rebuilt from the argument)
VIEWS_ONLY = {"split_axis", "array_split", "array_split_many", "hsplit_1d", "vsplit", "dsplit"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_and_compiled_agree_in_one_graph(name):
    check_one_graph(*CASES[name], graphs=0 if name in VIEWS_ONLY else 1)


def written_through_a_piece(x):
    a, b = np.split(x, 2, axis=1)
    b[0] = -1.0  # reaches x
    b += 1.0
    x[1, 0] = 9.0  # a sees it
    return a + 0, x.sum()


def base_written_after_split(x):
    parts = np.array_split(x, 3)
    x *= 2
    return parts[0] + parts[2].sum()


def broadcast_of_same_shape_is_the_argument(x, y):
    p, q = np.broadcast_arrays(x, y)
    return p is x, q is y


def written_through_a_broadcast(u, x):
    p, q = np.broadcast_arrays(u, x[:, :3])
    q[0, 0] = 5.0  # q is x's own view (same shape): a plain write
    return x.sum(), p.sum()


@pytest.mark.parametrize("fn, args, graphs", [
    (written_through_a_piece, (X,), 1),
    (base_written_after_split, (X,), 1),
    (broadcast_of_same_shape_is_the_argument, (X, X + 1), 0),  # two constants: no graph
])
def test_pieces_alias_as_in_numpy(fn, args, graphs):
    check_same(fn, *args, compiled=npdynamo.compile(fn, fullgraph=True), graphs=graphs, breaks=0)


def test_a_write_through_a_broadcast_view_is_exact():
    check_same(written_through_a_broadcast, U, X, graphs=1, breaks=0)


def test_returned_pieces_are_views_of_the_argument():
    x = X.copy()
    a, b = npdynamo.compile(lambda x: np.split(x, 2))(x)
    assert a.base is x or np.shares_memory(a, x)
    b[0, 0] = 77.0
    assert x[2, 0] == 77.0
    p, q = npdynamo.compile(lambda u, v: np.broadcast_arrays(u, v[:, None]))(U, V)
    with warnings.catch_warnings():  # NumPy warns on reading these views' flags
        warnings.simplefilter("ignore", FutureWarning)
        assert p.flags.writeable == np.broadcast_arrays(U, V[:, None])[0].flags.writeable


ERRORS = [
    lambda x: np.split(x, 5),
    lambda x: np.array_split(x, 0),
    lambda x: np.split(x, 2, axis=2),
    lambda x: np.array_split(x, 2, axis=-3),
    lambda x: np.hsplit(x[0, 0], 2),
    lambda x: np.vsplit(x[0], 2),
    lambda x: np.dsplit(x, 2),
    lambda x: np.hsplit(x, 4),
    lambda x: np.meshgrid(x, x, indexing="yx"),
    lambda x: np.broadcast_arrays(x, x[:3]),
    lambda x: np.broadcast_arrays(x, x[:, :5], x),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_numpys(i):
    check_same(ERRORS[i], X, graphs=0, breaks=0)  # the frame reruns in Python for the error


class _MetaBuilder:
    """Runs a composite on metas: each op's rule stands for its node."""

    def call(self, op, args, kwargs):
        metas = [a.meta if isinstance(a, _Meta) else a for a in args]
        return _Meta(op.infer(*metas, **kwargs))

    def meta(self, value):
        return value.meta

    def shape(self, value):
        return value.meta.shape


class _Meta:
    def __init__(self, meta: ArrayMeta) -> None:
        self.meta = meta


@pytest.mark.parametrize("shape, sections, axis", list(itertools.product(
    [(0,), (5,), (6, 4), (3, 0, 2)], [1, 2, 3, 4, [1, 3], [4, 2], [-1], [0, 9]], [0, 1, -1],
)))
def test_split_rules_match_numpy(shape, sections, axis):
    """The pieces' shapes and dtypes, or NumPy's exception, for split and array_split."""
    for fn in (np.split, np.array_split):
        x = np.zeros(shape, np.float32)
        try:
            expected = [(p.shape, p.dtype) for p in fn(x, sections, axis=axis)]
        except Exception as exc:  # the rule must raise the same
            expected = (type(exc), str(exc))
        composite = normalize_call(fn, (_Meta(ArrayMeta(shape, x.dtype)), sections),
                                   {"axis": axis})
        assert isinstance(composite, Composite)
        try:
            got = [(p.meta.shape, p.meta.dtype) for p in composite.build(_MetaBuilder())]
        except Exception as exc:
            got = (type(exc), str(exc))
        assert got == expected, (fn.__name__, shape, sections, axis)


@pytest.mark.parametrize("shapes", [[(3,), (4,)], [(2,), (3,), (4,)], [(2, 2), (3,)], [()]])
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid_rules_match_numpy(shapes, indexing, sparse):
    arrays = [np.zeros(s) for s in shapes]
    expected = [p.shape for p in np.meshgrid(*arrays, indexing=indexing, sparse=sparse)]
    composite = normalize_call(np.meshgrid, tuple(_Meta(ArrayMeta(s, np.dtype(float)))
                                                  for s in shapes),
                               {"indexing": indexing, "sparse": sparse})
    assert [p.meta.shape for p in composite.build(_MetaBuilder())] == expected
