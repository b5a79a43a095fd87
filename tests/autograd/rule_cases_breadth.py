"""Valid float64 calls of the breadth families' differentiable ops, for the finite-difference
check of their VJP rules (``npdynamo/autograd/vjp_layout.py``, ``vjp_solvers.py``).

Values are drawn apart from each other (sort, partition, max ties) and away from the kinks of
norm and round; matrices are well conditioned.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.autograd.rule_cases import CASES as BASE_CASES
from tests.autograd.rule_cases import axis_choice, shapes, small_shapes, values

nonempty = small_shapes


def distinct(draw, shape):
    """Values at least 0.1 apart (no ties a sort or a max could flip under a small step)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n) - n * 0.05).reshape(shape)


def int_axis(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


def one(kwargs_of=lambda draw, shape: {}, shape_st=nonempty, make=values):
    @st.composite
    def case(draw):
        shape = draw(shape_st)
        return (make(draw, shape),), kwargs_of(draw, shape)

    return case()


def _pad_width(draw, shape):
    return tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)


def _pad_kwargs(draw, shape):
    mode = draw(st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]))
    out = {"pad_width": _pad_width(draw, shape), "mode": mode}
    if mode == "constant":
        out["constant_values"] = 1.5
    return out


@st.composite
def take_case(draw):
    shape = draw(nonempty)
    x = values(draw, shape)
    axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    size = x.size if axis is None else shape[axis]
    idx = np.asarray(draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4)))
    return (x, idx), {"axis": axis}


@st.composite
def take_along_axis_case(draw):
    shape = draw(nonempty)
    x = values(draw, shape)
    axis = int_axis(draw, len(shape))
    ishape = list(shape)
    ishape[axis] = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    return (x, rng.integers(0, shape[axis], ishape)), {"axis": axis}


@st.composite
def stacking_case(draw, name):
    base = draw(st.sampled_from([(2,), (2, 3), (2, 3, 2), ()]))
    return (tuple(values(draw, base) for _ in range(draw(st.integers(1, 3)))),), {}


@st.composite
def append_case(draw):
    shape = draw(nonempty)
    axis = draw(st.one_of(st.none(), st.just(int_axis(draw, len(shape)))))
    other = list(shape)
    if axis is not None:
        other[axis] = draw(st.integers(1, 3))
    return (values(draw, shape), values(draw, tuple(other))), {"axis": axis}


@st.composite
def matrix(draw, batch=True):
    n = draw(st.integers(1, 3))
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=1))) if batch else ()
    a = values(draw, lead + (n, n))
    return a + 3 * np.eye(n)


@st.composite
def svd_case(draw):
    """A matrix with well separated singular values; full matrices only when square (the extra
    singular vectors of a non-square one are not unique)."""
    m, n = draw(st.sampled_from([(3, 2), (2, 3), (3, 3), (2, 2)]))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    k = min(m, n)
    left = np.linalg.qr(values(draw, batch + (m, m)))[0][..., :k]
    right = np.linalg.qr(values(draw, batch + (n, n)))[0][..., :k, :]
    a = left @ (np.arange(k, 0, -1.0)[:, None] * 2.0 * right)
    return (a,), {"full_matrices": m == n and draw(st.booleans())}


@st.composite
def qr_case(draw):
    """A matrix whose leading square block is well conditioned (R's diagonal away from 0);
    complete mode only where it equals the reduced one (m <= n)."""
    m, n = draw(st.sampled_from([(3, 2), (2, 3), (3, 3), (4, 2), (2, 4), (1, 1)]))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    k = min(m, n)
    a = values(draw, batch + (m, n))
    a[..., :k, :k] += 3 * np.eye(k)
    modes = ["reduced", "r"] + (["complete"] if m <= n else [])
    return (a,), {"mode": draw(st.sampled_from(modes))}


@st.composite
def lstsq_case(draw):
    """A tall or square matrix of full column rank, one right-hand side or several."""
    m, n = draw(st.sampled_from([(3, 2), (4, 2), (3, 3), (2, 2), (4, 3)]))
    a = values(draw, (m, n))
    a[:n, :n] += 3 * np.eye(n)
    b = values(draw, (m,) if draw(st.booleans()) else (m, 2))
    return (a, b), {}


def _separated(a):
    """A symmetric matrix with well separated eigenvalues (eigh's gradient is finite)."""
    n = a.shape[-1]
    return (a + np.swapaxes(a, -1, -2)) / 4 + np.diag(np.arange(n) * 4.0)


@st.composite
def solve_case(draw):
    a = draw(matrix())
    n = a.shape[-1]
    b = values(draw, draw(st.sampled_from([(n,), (n, 2)])))
    return (a, b), {}


@st.composite
def norm_case(draw):
    shape = draw(nonempty)
    x = values(draw, shape)
    x[np.abs(x) < 0.1] = 0.5  # away from the kink at zero
    axis = draw(st.one_of(st.none(), st.just(int_axis(draw, len(shape))),
                          st.just(tuple(range(len(shape)))[-2:])))
    return (x,), {"axis": axis, "keepdims": draw(st.booleans())}


@st.composite
def inner_case(draw):
    a = values(draw, draw(shapes))
    last = a.shape[-1:] if a.ndim else ()
    b = values(draw, draw(st.sampled_from([(), (2,)])) + last if a.ndim else draw(shapes))
    return (a, b), {}


@st.composite
def vdot_case(draw):
    shape = draw(nonempty)
    return (values(draw, shape), values(draw, shape[::-1])), {}


def _with_nans(draw, shape):
    # The finite-difference check needs finite inputs: these exercise the non-NaN path (the
    # NaN positions' zero cotangent is checked in the differential tests).
    return values(draw, shape)


def _diff_kwargs(draw, shape):
    return {"n": draw(st.integers(1, 2)), "axis": int_axis(draw, len(shape)),
            "prepend": draw(st.sampled_from([None, 0.5])),
            "append": draw(st.sampled_from([None, 1]))}


def _reduce(draw, shape):
    return {"axis": axis_choice(draw, len(shape)), "keepdims": draw(st.booleans())}


_MOMENT_SHAPES = st.sampled_from([(3,), (2, 3), (4, 2)])


def _moment(draw, shape):
    # at least two elements per reduced slice: ddof=1 and the root stay away from zero
    axis = draw(st.sampled_from([None, -1]))
    return {"axis": axis, "ddof": draw(st.sampled_from([0, 1])),
            "keepdims": draw(st.booleans())}


@st.composite
def convolution_case(draw):
    a = values(draw, (draw(st.integers(1, 5)),))
    v = values(draw, (draw(st.integers(1, 5)),))
    return (a, v), {"mode": draw(st.sampled_from(["full", "same", "valid"]))}


@st.composite
def polyval_case(draw):
    p = values(draw, (draw(st.integers(1, 4)),))
    if draw(st.booleans()):
        p = tuple(float(c) for c in p)  # constant coefficients
    return (p, values(draw, draw(shapes))), {}


@st.composite
def eigvalsh_case(draw):
    # well separated eigenvalues (the eigenvectors, hence the gradient, are then smooth)
    n = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = q @ np.diag(np.arange(n) * 2.0 + 1.0) @ q.T
    return (a + np.triu(rng.standard_normal((n, n)), 1),), {}  # the upper part is ignored


@st.composite
def kron_case(draw):
    return (values(draw, draw(shapes)), values(draw, draw(shapes))), {}


@st.composite
def cross_case(draw):
    batch = draw(st.sampled_from([(), (2,), (1,)]))
    a = values(draw, batch + (3,))
    b = values(draw, draw(st.sampled_from([(3,), (2, 3)])))
    if draw(st.booleans()):
        return (np.moveaxis(a, -1, 0), b), {"axisa": 0, "axisc": 0}
    return (a, b), {}


def _order(draw, shape):
    return {"axis": draw(st.one_of(st.none(), st.just(int_axis(draw, len(shape))))),
            "keepdims": draw(st.booleans())}


def _order_q(top: float):
    def kwargs(draw, shape):
        q = draw(st.one_of(st.sampled_from([0.1, 0.5, 0.9, 1.0, 0.0]).map(lambda v: v * top),
                           st.lists(st.sampled_from([0.2, 0.75]), min_size=1, max_size=2)
                           .map(lambda vs: tuple(v * top for v in vs))))
        return {**_order(draw, shape), "q": q}

    return kwargs


def _sort(draw, shape):
    return {"axis": draw(st.one_of(st.none(), st.just(int_axis(draw, len(shape)))))}


def _partition(draw, shape):
    axis = int_axis(draw, len(shape))
    return {"axis": axis, "kth": draw(st.integers(0, shape[axis] - 1))}


def _cumsum(draw, shape):
    return {"axis": draw(st.one_of(st.none(), st.just(int_axis(draw, len(shape)))))}


def _rounded(draw, shape):
    return np.round(values(draw, shape), 1) + 0.04  # away from rounding boundaries


def breadth_cases():
    two_d = st.tuples(st.integers(1, 3), st.integers(1, 3))
    return {
        "flip": one(lambda d, s: {"axis": axis_choice(d, len(s))}),
        "roll": one(lambda d, s: {"shift": d(st.integers(-3, 3)),
                                  "axis": d(st.one_of(st.none(), st.just(int_axis(d, len(s)))))}),
        "rot90": one(lambda d, s: {"k": d(st.integers(-1, 3))}, two_d),
        "tril": one(lambda d, s: {"k": d(st.integers(-2, 2))}),
        "triu": one(lambda d, s: {"k": d(st.integers(-2, 2))}),
        "sort": one(_sort, make=distinct),
        "partition": one(_partition, make=distinct),
        "nan_to_num": one(make=_with_nans),
        "take": take_case(),
        "take_along_axis": take_along_axis_case(),
        "repeat": one(lambda d, s: {"repeats": d(st.integers(0, 3)),
                                    "axis": d(st.one_of(st.none(), st.just(int_axis(d, len(s)))))}),
        "tile": one(lambda d, s: {"reps": tuple(d(st.lists(st.integers(1, 3), max_size=3)))}),
        "pad": one(_pad_kwargs),
        "diag": one(lambda d, s: {"k": d(st.integers(-2, 2))},
                    st.sampled_from([(3,), (2, 3), (3, 3), (1,)])),
        "diagonal": one(lambda d, s: {"offset": d(st.integers(-1, 1)), "axis1": 0, "axis2": -1},
                        st.sampled_from([(2, 3), (3, 3), (2, 2, 3)])),
        "diagflat": one(lambda d, s: {"k": d(st.integers(-2, 2))}),
        "ediff1d": one(shape_st=shapes),
        "append": append_case(),
        "trace": one(lambda d, s: {"offset": d(st.integers(-1, 1))},
                     st.sampled_from([(2, 3), (3, 3), (2, 2, 3)])),
        **{f"atleast_{n}d": one(shape_st=shapes) for n in (1, 2, 3)},
        **{n: stacking_case(n) for n in ("hstack", "vstack", "dstack", "column_stack")},
        "cumsum": one(_cumsum),
        "cumulative_sum": one(lambda d, s: {"axis": int_axis(d, len(s)),
                                            "include_initial": d(st.booleans())}),
        "nancumsum": one(_cumsum, make=_with_nans),
        "diff": one(_diff_kwargs),
        "nansum": one(_reduce, make=_with_nans),
        "nanmean": one(_reduce, make=_with_nans),
        "nanmax": one(_reduce, make=distinct),
        "nanvar": one(_moment, _MOMENT_SHAPES, make=_with_nans),
        "nanstd": one(_moment, _MOMENT_SHAPES, make=_with_nans),
        "sinc": one(),
        "median": one(_order, make=distinct),
        "percentile": one(_order_q(100.0), make=distinct),
        "quantile": one(_order_q(1.0), make=distinct),
        "eigvalsh": eigvalsh_case(),
        "polyval": polyval_case(),
        "convolve": convolution_case(),
        "correlate": convolution_case(),
        "kron": kron_case(),
        "cross": cross_case(),
        "nanmin": one(_reduce, make=distinct),
        "ptp": one(_reduce, make=distinct),
        "average": one(_reduce),
        "round": one(lambda d, s: {"decimals": 1}, make=_rounded),
        "norm": norm_case(),
        "det": matrix().map(lambda a: ((a,), {})),
        "inv": matrix().map(lambda a: ((a,), {})),
        "slogdet": matrix().map(lambda a: ((a,), {})),
        "svd": svd_case(),
        "qr": qr_case(),
        "lstsq": lstsq_case(),
        "eigh": st.tuples(matrix(), st.sampled_from(["L", "U"])).map(
            lambda c: ((_separated(c[0]),), {"UPLO": c[1]})),
        "solve": solve_case(),
        "inner": inner_case(),
        "vdot": vdot_case(),
    }


#: Every differentiable op's case: the original families and the breadth ones.
CASES = {**BASE_CASES, **breadth_cases()}
