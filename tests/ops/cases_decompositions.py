"""Case strategies for the multi-result ops (``slogdet``, ``eigh``, ``eig``, ``svd``, ``qr``,
``lstsq``, their projection ``tuple_item``: stacks of matrices of every shape kind, square, wide,
tall, 1-d and 0-d errors, empty, in the dtypes ``np.linalg`` sees), ``broadcast_view``, and the
functional forms of the writing functions (``copyto``, ``putmask``, ``fill_diagonal``,
``put_along_axis``)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from tests.ops.strategies import Case, fill

_DTYPES = st.sampled_from([np.dtype(t) for t in
                           ("float32", "float64", "complex128", "float16", "int64", "bool")])


@st.composite
def matrices(draw, square: bool = False):
    m = draw(st.integers(0, 3))
    n = m if square else draw(st.integers(0, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    shape = draw(st.sampled_from([batch + (m, n)] * 6 + [(n,), ()]))
    return fill(shape, draw(_DTYPES), draw(st.integers(0, 99)))


def _unary(kwargs, square: bool = False):
    return st.builds(lambda a, kw: Case((a,), kw), matrices(square), kwargs)


def _full_rank(a: np.ndarray, rcond) -> bool:
    """``lstsq`` finds ``a`` of full rank (its own rank, with ``rcond`` and ``a``'s precision)."""
    if not a.size or a.ndim != 2:
        return True
    try:
        rank = np.linalg.lstsq(a, np.zeros(a.shape[0], a.dtype), rcond=rcond)[2]
    except (np.linalg.LinAlgError, TypeError, ValueError):
        return True  # an error case: NumPy's error is what the rule must give
    return rank == min(a.shape)


@st.composite
def lstsq_case(draw):
    a = fill((draw(st.integers(1, 4)), draw(st.integers(1, 3))), draw(_DTYPES),
             draw(st.integers(0, 99)))
    rows = a.shape[0] + draw(st.sampled_from([0, 0, 0, 1]))
    b = fill(draw(st.sampled_from([(rows,), (rows, 2), (rows, 0), (1, rows, 2)])),
             np.dtype(draw(st.sampled_from(["float64", "float32", "int32"]))),
             draw(st.integers(0, 99)))
    rcond = draw(st.sampled_from([None, 1e-10]))
    if a.dtype.kind == "b" or not _full_rank(a, rcond):
        a = a.astype(np.float64) + np.eye(*a.shape)  # full rank: the rule's assumption
        # (a + I can lose a rank too: a 4x3 matrix of rank 2 was drawn once; the op then
        # raises RankDeficient at run time by design, and its graph reruns in Python)
        assume(_full_rank(a, rcond))
    return Case((a, b), {"rcond": rcond})


@st.composite
def eig_case(draw):
    """Square stacks (and the 1-d/0-d errors). A real matrix gets a large rotation part, so its
    eigenvalues are complex as the rule assumes (real ones make the op raise at run time:
    tests/ops/test_external_kernels.py checks that rerun); below 2x2 it is made complex."""
    a = draw(matrices(square=True))
    if a.ndim >= 2 and a.dtype.kind in "biuf" and a.dtype != np.float16:
        n = a.shape[-1]
        if n < 2:
            return Case((a.astype(np.complex128),))
        rot = np.zeros((n, n), dtype=np.int64 if a.dtype.kind in "biu" else a.dtype)
        rot[0, 1], rot[1, 0] = 100, -100
        a = a + rot
    return Case((a,))


@st.composite
def tuple_item_case(draw):
    results = np.linalg.svd(fill((3, 2), np.dtype(np.float32), draw(st.integers(0, 9))))
    return Case((tuple(results), draw(st.integers(0, 2))))


@st.composite
def broadcast_view_case(draw):
    x = fill(draw(st.sampled_from([(), (3,), (1, 3), (2, 1), (4,)])), np.dtype(np.float64), 0)
    return Case((x,), {"shape": draw(st.sampled_from([(2, 3), (3,), (0, 3), (2, 1)]))})


_TARGETS = st.sampled_from([(3, 4), (4,), (2, 2, 2), (1, 4), (3, 3)])
_KINDS = st.sampled_from([np.dtype(t) for t in ("float64", "int64", "float32", "bool")])


@st.composite
def copyto_case(draw):
    dst = fill(draw(_TARGETS), draw(_KINDS), draw(st.integers(0, 9)))
    src = draw(st.one_of(st.sampled_from([1, 2.5, True, -3]),
                         st.builds(lambda s, k: fill(s, k, 1),
                                   st.sampled_from([(), (4,), (3, 1), (3,), (2, 4)]), _KINDS)))
    args = [dst, src]
    if draw(st.booleans()):
        args.append(fill(draw(st.sampled_from([(4,), (3, 4), (2,)])),
                         draw(st.sampled_from([np.dtype(bool), np.dtype(float)])), 2))
    casting = draw(st.sampled_from(["same_kind", "unsafe", "safe", "no"]))
    return Case(tuple(args), {"casting": casting})


@st.composite
def putmask_case(draw):
    a = fill(draw(_TARGETS), draw(_KINDS), draw(st.integers(0, 9)))
    mask = fill(draw(st.sampled_from([a.shape, (a.size,), (5,)])), np.dtype(bool), 3)
    values = draw(st.one_of(st.sampled_from([0, 1.5]), st.builds(
        lambda k: fill((2,), k, 4), _KINDS)))
    return Case((a, mask, values))


@st.composite
def fill_diagonal_case(draw):
    a = fill(draw(st.sampled_from([(3, 3), (5, 3), (2, 4), (4,), (2, 2, 2), (2, 3, 2)])),
             draw(_KINDS), 0)
    val = draw(st.sampled_from([1, 2.5, (1.0, 2.0)]))
    return Case((a, val), {"wrap": draw(st.booleans())})


@st.composite
def put_along_axis_case(draw):
    a = fill((3, 4), draw(_KINDS), draw(st.integers(0, 9)))
    axis = draw(st.sampled_from([0, 1, -1, 2, None]))
    idx_shape = draw(st.sampled_from([(3, 1), (1, 4), (2,), (3, 4)]))
    idx = fill(idx_shape, np.dtype(draw(st.sampled_from(["int64", "float64"]))), 5) % 3
    return Case((a, idx.astype(idx.dtype), 7), {"axis": axis})


@st.composite
def mask_update_case(draw):
    a = fill(draw(st.sampled_from([(3, 4), (4,), (2, 3)])), draw(_KINDS), draw(st.integers(0, 9)))
    mask = fill(draw(st.sampled_from([a.shape, a.shape[:1], (5,)])), np.dtype(bool), 1)
    value = draw(st.one_of(st.sampled_from([1, 2.5]), st.builds(
        lambda s, k: fill(s, k, 2), st.sampled_from([(), (1,), a.shape[1:]]), _KINDS)))
    ufunc = draw(st.sampled_from(["add", "multiply", "subtract", "floor_divide"]))
    return Case((a, a, mask, mask, value), {"ufunc": ufunc}, unsupported_ok=True)


def _masked_program(draw) -> tuple:
    """An array, a mask (matching it, its rows, or of a wrong length), another array and a small
    elementwise program over the two arrays, for the masked ops."""
    a = fill(draw(st.sampled_from([(3, 4), (4,)])), draw(_KINDS), draw(st.integers(0, 9)))
    mask = fill(draw(st.sampled_from([a.shape, a.shape[:1], (5,)])), np.dtype(bool), 1)
    other = fill(a.shape, draw(_KINDS), 3)
    program = draw(st.sampled_from([
        (("leaf", 0),), (("leaf", 0), ("const", 2), ("op", "*")),
        (("leaf", 0), ("leaf", 1), ("op", "-"), ("const", 1.5), ("op", "+")),
        (("leaf", 1), ("const", 2), ("op", "**")), (("leaf", 0), ("leaf", 1), ("op", ">")),
    ]))
    return a, mask, other, program


@st.composite
def mask_apply_case(draw):
    a, mask, other, program = _masked_program(draw)
    return Case((a, mask, a, other), {"program": program}, unsupported_ok=True)


@st.composite
def masked_reduce_case(draw):
    a, mask, other, program = _masked_program(draw)
    kind = draw(st.sampled_from(["sum", "mean"]))
    return Case((mask, a, other), {"program": program, "kind": kind}, unsupported_ok=True)


_DRAWS = [
    (False, "random", (), {"size": (2, 3)}), (False, "normal", (np.zeros(3), 1.0), {}),
    (False, "normal", (0.0, np.ones((2, 1))), {"size": (2, 4)}),
    (False, "normal", (np.zeros(3), 1.0), {"size": (2,)}),
    (False, "integers", (0, 5), {"size": 4, "dtype": np.int32}),
    (False, "integers", (5,), {}), (False, "integers", (5, 3), {"size": 2}),
    (False, "choice", (np.arange(4.0), 3), {"replace": False}),
    (False, "choice", (np.arange(4.0), 5), {"replace": False}),
    (False, "permutation", (np.ones((3, 2)),), {"axis": 1}),
    (False, "poisson", (np.ones(2),), {}), (False, "uniform", (), {"size": 0}),
    (True, "rand", (2, 2), {}), (True, "randint", (0, np.array([3, 5])), {}),
    (True, "choice", (np.arange(3.0), 2), {}), (True, "standard_normal", ((2,),), {}),
]


@st.composite
def draw_case(draw):
    from npdynamo.ops.random import bind_draw

    legacy, method, args, kwargs = draw(st.sampled_from(_DRAWS))
    state = np.random.RandomState(1) if legacy else np.random.default_rng(1)
    _op, op_args, op_kwargs = bind_draw(state, method, args, kwargs)
    return Case(tuple(op_args), op_kwargs)


@st.composite
def shuffled_case(draw):
    x = fill(draw(st.sampled_from([(4,), (3, 2), (2, 3, 2)])), draw(_KINDS), 0)
    legacy = draw(st.booleans())
    state = np.random.RandomState(2) if legacy else np.random.default_rng(2)
    axis = 0 if legacy else draw(st.sampled_from([0, -1]))
    return Case((state, x), {"axis": axis} if axis else {})


def part_case():
    return st.builds(lambda s, k: Case((fill(s, np.dtype(k), 4),)),
                     st.sampled_from([(), (3,), (2, 2)]),
                     st.sampled_from(["complex128", "complex64", "float64", "int32"]))


def decomposition_cases() -> dict:
    return {
        "slogdet": _unary(st.just({}), square=True),
        "eigh": _unary(st.fixed_dictionaries({"UPLO": st.sampled_from(["L", "U"])}),
                       square=True),
        "svd": _unary(st.fixed_dictionaries({"full_matrices": st.booleans(),
                                             "hermitian": st.booleans()})),
        "qr": _unary(st.fixed_dictionaries(
            {"mode": st.sampled_from(["reduced", "complete", "r", "raw"])})),
        "lstsq": lstsq_case(),
        "eig": eig_case(),
        "tuple_item": tuple_item_case(),
        "broadcast_view": broadcast_view_case(),
        "copyto": copyto_case(),
        "putmask": putmask_case(),
        "fill_diagonal": fill_diagonal_case(),
        "put_along_axis": put_along_axis_case(),
        "mask_update": mask_update_case(),
        "mask_apply": mask_apply_case(),
        "masked_reduce": masked_reduce_case(),
        "draw": draw_case(),
        "shuffled": shuffled_case(),
        "real": part_case(),
        "imag": part_case(),
    }
