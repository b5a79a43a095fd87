"""Case strategies for the breadth families: reorder, selection, scans, statistics, solvers and
numeric ops (``npdynamo/ops/{reorder,selection,scans,statistics,solvers,numeric}.py``).

Each strategy draws canonical calls with concrete values, valid and invalid (bad axes, negative
counts, mismatched sizes, out-of-range quantiles...), for the property test of the rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.ops.strategies import (
    Case,
    arrays,
    dtypes,
    fill,
    maybe_dtype,
    nonempty_shapes,
    shapes,
    small_py_scalars,
)

_REAL = st.sampled_from([np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64",
                                               "uint8", "float16")])
_LINALG = st.sampled_from([np.dtype(t) for t in ("float32", "float64", "complex128",
                                                 "float16")])
small_ints = st.integers(-3, 3)
_NOT_BOOL = st.sampled_from(["int32", "float32", "float64", "complex128"]).flatmap(
    lambda d: arrays(dtype=d))


def axis(ndim: int, none: bool = True):
    forms = [st.integers(-ndim - 1, ndim)]
    return st.one_of(st.none(), *forms) if none else st.one_of(*forms)


def unary(kwargs_of, x=None, unsupported_ok=False):
    """A call ``op(x, **kwargs_of(draw, x))``."""

    @st.composite
    def case(draw):
        a = draw(x if x is not None else arrays())
        # 0-d operands have NumPy-specific corners some rules refuse (a graph break).
        corner = np.ndim(a) == 0 or np.size(a) == 0
        return Case((a,), kwargs_of(draw, a), unsupported_ok=unsupported_ok or corner)

    return case()


def _nd(a) -> int:
    return np.ndim(a)


def flip_kwargs(draw, a):
    n = _nd(a)
    return {"axis": draw(st.one_of(axis(n), st.lists(st.integers(-n, n - 1) if n else
                                                     st.integers(-1, 0), max_size=2).map(tuple)))}


def roll_kwargs(draw, a):
    n = _nd(a)
    if draw(st.booleans()):
        return {"shift": draw(small_ints), "axis": draw(axis(n))}
    k = draw(st.integers(1, 2))
    return {"shift": tuple(draw(st.lists(small_ints, min_size=k, max_size=k))),
            "axis": tuple(draw(st.lists(st.integers(-n, max(n - 1, 0)), min_size=1,
                                        max_size=2)))}


def rot90_kwargs(draw, a):
    n = max(_nd(a), 1)
    return {"k": draw(st.integers(-2, 5)),
            "axes": tuple(draw(st.lists(st.integers(-n - 1, n), min_size=2, max_size=3)))
            if draw(st.integers(0, 3)) == 0 else tuple(draw(st.permutations(range(n)))[:2])}


def k_kwargs(draw, a):
    return {"k": draw(small_ints)}


def sort_kwargs(kth: bool):
    def kwargs(draw, a):
        out: dict[str, Any] = {"axis": draw(axis(_nd(a)))}
        if kth:
            out["kth"] = draw(st.one_of(st.integers(-4, 4),
                                        st.lists(st.integers(-3, 3), min_size=1,
                                                 max_size=2).map(tuple)))
        elif draw(st.booleans()):
            out["stable"] = True
        return out

    return kwargs


def nan_to_num_kwargs(draw, a):
    return {"nan": draw(st.sampled_from([0.0, 1.5, -2])),
            "posinf": draw(st.sampled_from([None, 9.0])),
            "neginf": draw(st.sampled_from([None, -9]))}


@st.composite
def take_case(draw):
    a = draw(arrays())
    n = _nd(a)
    ax = draw(axis(n))
    size = np.size(a) if ax is None or not -n <= ax < n else np.shape(a)[ax]
    idx = draw(st.one_of(arrays(draw(shapes), dtype=np.intp),
                         st.integers(-3, 3),
                         st.lists(st.integers(-3, 3), max_size=3),
                         arrays((2,), dtype=np.float64)))
    if isinstance(idx, (np.ndarray, np.generic)) and idx.dtype.kind == "i":
        # index arrays in range: out-of-range values are NumPy's runtime check
        idx = idx % size if size else np.zeros((0,), np.intp)
    return Case((a, idx), {"axis": ax}, unsupported_ok=n == 0)


@st.composite
def take_along_axis_case(draw):
    a = draw(arrays(draw(nonempty_shapes), scalar_ok=False))
    n = _nd(a)
    ishape = tuple(draw(st.sampled_from([d, 1, 2])) for d in np.shape(a))
    if draw(st.integers(0, 5)) == 0:
        ishape = ishape[:-1]
    idx = fill(ishape, np.dtype(np.intp), draw(st.integers(0, 99)), nonneg=True)
    idx = idx % max(min(np.shape(a), default=1), 1)
    return Case((a, idx), {"axis": draw(axis(n))})


@st.composite
def searchsorted_case(draw):
    a = draw(arrays(draw(st.sampled_from([(3,), (0,), (2, 2)])), dtype=np.float64))
    v = draw(st.one_of(arrays(draw(shapes), dtype=np.float64), small_py_scalars))
    return Case((np.sort(a, axis=None).reshape(np.shape(a)), v),
                {"side": draw(st.sampled_from(["left", "right"]))})


def repeat_kwargs(draw, a):
    n = _nd(a)
    return {"repeats": draw(st.one_of(st.integers(-1, 3),
                                      st.lists(st.integers(-1, 2), min_size=1,
                                               max_size=3).map(tuple))),
            "axis": draw(axis(n))}


def tile_kwargs(draw, a):
    return {"reps": tuple(draw(st.lists(st.integers(-1, 3), max_size=4)))}


def pad_kwargs(draw, a):
    n = _nd(a)
    width = draw(st.one_of(
        st.integers(-1, 2),
        st.tuples(st.integers(0, 2), st.integers(0, 2)),
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=n,
                 max_size=n).map(tuple)))
    mode = draw(st.sampled_from(["constant", "constant", "edge", "wrap", "reflect",
                                 "symmetric"]))
    out: dict[str, Any] = {"pad_width": width, "mode": mode}
    if mode == "constant":
        out["constant_values"] = draw(st.sampled_from([0, 1.5, 7]))
    return out


def diagonal_kwargs(draw, a):
    n = max(_nd(a), 2)
    return {"offset": draw(small_ints), "axis1": draw(st.integers(-n, n - 1)),
            "axis2": draw(st.integers(-n, n - 1))}


def trace_kwargs(draw, a):
    return {**diagonal_kwargs(draw, a), "dtype": draw(maybe_dtype())}


@st.composite
def stacking_case(draw, name: str):
    base = draw(shapes)
    arrs = []
    for _ in range(draw(st.integers(0, 3))):
        s = list(base)
        if s and draw(st.booleans()):
            s[draw(st.integers(0, len(s) - 1))] = draw(st.integers(0, 3))
        arrs.append(draw(arrays(tuple(s))))
    kwargs = {"dtype": draw(maybe_dtype(3))} if name in ("hstack", "vstack") else {}
    return Case((tuple(arrs),), kwargs)


def scan_kwargs(name: str):
    def kwargs(draw, a):
        out: dict[str, Any] = {"axis": draw(axis(_nd(a))), "dtype": draw(maybe_dtype())}
        if name.startswith("cumulative"):
            out["include_initial"] = draw(st.booleans())
        return out

    return kwargs


def diff_kwargs(draw, a):
    return {"n": draw(st.sampled_from([-1, 1, 2, 3])), "axis": draw(axis(_nd(a), none=False)),
            "prepend": draw(st.sampled_from([None, 0, 1.5, True])),
            "append": draw(st.sampled_from([None, 2]))}


def reduce_kwargs(dtype: bool = False, ddof: bool = False, int_axis: bool = False):
    def kwargs(draw, a):
        n = _nd(a)
        ax = axis(n) if int_axis else st.one_of(
            axis(n), st.lists(st.integers(-n, max(n - 1, 0)), max_size=2).map(tuple))
        out: dict[str, Any] = {"axis": draw(ax), "keepdims": draw(st.booleans())}
        if dtype:
            out["dtype"] = draw(maybe_dtype())
        if ddof:
            out["ddof"] = draw(st.sampled_from([0, 1]))
        return out

    return kwargs


def quantile_kwargs(top: float):
    def kwargs(draw, a):
        out = reduce_kwargs()(draw, a)
        out["q"] = draw(st.one_of(st.sampled_from([0.0, top / 2, float(top), top * 1.5, 0.25]),
                                  st.lists(st.sampled_from([0.0, top / 4, float(top)]), min_size=1,
                                           max_size=3).map(tuple)))
        return out

    return kwargs


def cov_kwargs(draw, a):
    return {"rowvar": draw(st.booleans()), "dtype": draw(st.sampled_from([None, np.float32]))}


@st.composite
def square_stack(draw, dtype=None, square: bool = True):
    n = draw(st.integers(1, 3))
    m = n if square else draw(st.integers(1, 3))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    shape = draw(st.sampled_from([batch + (n, m)] * 6 + [(n,), (n, n + 1), ()]))
    dt = draw(_LINALG) if dtype is None else dtype
    x = fill(shape, np.dtype(dt), draw(st.integers(0, 99)))
    if len(shape) >= 2 and shape[-1] == shape[-2] and x.dtype.kind in "fc":
        # Hermitian positive definite: cholesky, inv and eigvalsh have no data-dependent error
        x = x @ np.conj(np.swapaxes(x, -1, -2)) + 4 * np.eye(shape[-1], dtype=x.dtype)
    return x


@st.composite
def solve_case(draw):
    a = draw(square_stack(np.float64))
    n = np.shape(a)[-1] if np.ndim(a) else 1
    b = draw(st.one_of(arrays((n,), dtype=np.float64), arrays((n, 2), dtype=np.int64),
                       arrays((2, n, 1), dtype=np.float32), arrays((n + 1,))))
    return Case((a, b))


def norm_kwargs(draw, a):
    n = _nd(a)
    ax = draw(st.one_of(st.none(), st.integers(-n, max(n - 1, 0)),
                        st.lists(st.integers(-n, max(n - 1, 0)), min_size=1,
                                 max_size=3).map(tuple)))
    ord_ = draw(st.sampled_from([None, None, 1, 2, np.inf, -np.inf, 0, "fro", "nuc", 3]))
    return {"ord": ord_, "axis": ax, "keepdims": draw(st.booleans())}


@st.composite
def binary_case(draw, same_last: bool = False):
    a = draw(arrays())
    b_shape = draw(shapes)
    if same_last and np.ndim(a) and b_shape and draw(st.booleans()):
        b_shape = b_shape[:-1] + (np.shape(a)[-1],)
    return Case((a, draw(arrays(b_shape))))


@st.composite
def cross_case(draw):
    size = draw(st.sampled_from([3, 3, 3, 2, 4]))
    a = draw(arrays(tuple(draw(st.lists(st.integers(1, 2), max_size=1))) + (size,),
                    dtype=draw(_REAL)))
    b = draw(arrays((3,), dtype=np.float64))
    return Case((a, b), {"axisc": draw(st.integers(-2, 1))}, unsupported_ok=True)


@st.composite
def convolve_case(draw):
    a = draw(arrays(draw(st.sampled_from([(3,), (1,), (0,), (2, 2), ()]))))
    v = draw(arrays(draw(st.sampled_from([(2,), (4,), (0,)]))))
    return Case((a, v), {"mode": draw(st.sampled_from(["full", "same", "valid"]))})


@st.composite
def polyval_case(draw):
    p = draw(st.one_of(arrays((draw(st.integers(0, 3)),)),
                       st.lists(st.integers(-2, 2), max_size=3).map(tuple)))
    return Case((p, draw(st.one_of(arrays(), small_py_scalars))),
                unsupported_ok=isinstance(p, tuple) and not p)


@st.composite
def interp_case(draw):
    n = draw(st.sampled_from([3, 3, 0]))
    xp = np.arange(n, dtype=np.float64)
    fp = draw(arrays((draw(st.sampled_from([n, n, n + 1])),), dtype=draw(_LINALG)))
    x = draw(st.one_of(arrays(dtype=np.float64), small_py_scalars))
    return Case((x, xp, fp), {"left": draw(st.sampled_from([None, -1.0]))},
                unsupported_ok=n == 0)


@st.composite
def isclose_case(draw):
    a, b = draw(binary_case()).args
    return Case((a, b), {"rtol": 1e-3, "equal_nan": draw(st.booleans())})


@st.composite
def append_case(draw):
    a = draw(arrays())
    values = draw(st.one_of(arrays(), small_py_scalars, arrays(np.shape(a))))
    return Case((a, values), {"axis": draw(axis(np.ndim(a)))})


@st.composite
def tri_case(draw):
    return Case((), {"N": draw(st.integers(-1, 3)), "M": draw(st.sampled_from([None, 0, 2])),
                     "k": draw(small_ints), "dtype": draw(dtypes)})


@st.composite
def empty_case(draw):
    return Case((), {"shape": tuple(draw(st.lists(st.integers(-1, 3), max_size=3))),
                     "dtype": draw(dtypes)})


@st.composite
def empty_like_case(draw):
    shape = draw(st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3).map(tuple)))
    return Case((draw(arrays()),), {"dtype": draw(maybe_dtype(2)), "shape": shape})


@st.composite
def histogram_case(draw):
    """Data a few units apart (an autodetected range is never too narrow for the bins: that
    error depends on the data, which rules never see), every dtype kind, ranges reversed, not
    finite or beyond the bin dtype's range, bins not an int, weights never."""
    dtype = draw(st.sampled_from(["float64", "float32", "float16", "int64", "uint8", "int8",
                                  "bool", "complex128"]))
    shape = draw(st.sampled_from([(0,), (5,), (2, 3), ()]))
    a = np.random.default_rng(draw(st.integers(0, 99))).integers(0, 40, shape).astype(dtype)
    edge = st.one_of(st.integers(-300, 300), st.sampled_from([0.5, -1e6, 1e300, float("inf")]))
    kwargs = {"bins": draw(st.one_of(st.integers(-1, 7), st.just(2.0)))}
    if draw(st.booleans()):
        kwargs["range"] = (draw(edge), draw(edge))
    if draw(st.booleans()):
        kwargs["density"] = draw(st.sampled_from([None, False, True]))
    return Case((a,), kwargs, unsupported_ok=True)


@st.composite
def nonzero_case(draw):
    """Data with zeros, NaN and negative zeros among it, every dtype kind (complex refused),
    every rank (0-d refused: NumPy's error)."""
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "uint8", "bool", "complex128"]))
    shape = draw(st.sampled_from([(0,), (5,), (2, 3), (2, 0, 3), ()]))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    a = np.where(rng.random(shape) < 0.5, 0.0, rng.normal(0, 3, shape))
    if dtype.startswith("float"):
        a[rng.random(shape) < 0.1] = np.nan
    return Case((a.astype(dtype) if dtype != "bool" else a != 0,), {}, unsupported_ok=True)


def breadth_cases() -> dict[str, st.SearchStrategy[Case]]:
    real = arrays(dtype=None)
    cases: dict[str, st.SearchStrategy[Case]] = {
        "flip": unary(flip_kwargs),
        "roll": unary(roll_kwargs, unsupported_ok=True),
        "rot90": unary(rot90_kwargs),
        "tril": unary(k_kwargs),
        "triu": unary(k_kwargs),
        "sort": unary(sort_kwargs(False)),
        "argsort": unary(sort_kwargs(False)),
        "partition": unary(sort_kwargs(True)),
        "argpartition": unary(sort_kwargs(True)),
        "nan_to_num": unary(nan_to_num_kwargs, st.one_of(real, small_py_scalars)),
        "take": take_case(),
        "take_along_axis": take_along_axis_case(),
        "searchsorted": searchsorted_case(),
        "histogram": histogram_case(),
        "nonzero": nonzero_case(),
        "repeat": unary(repeat_kwargs),
        "tile": unary(tile_kwargs),
        "pad": unary(pad_kwargs, unsupported_ok=True),
        "diag": unary(k_kwargs),
        "diagflat": unary(k_kwargs),
        "append": append_case(),
        "ediff1d": unary(lambda draw, a: {}),
        "tri": tri_case(),
        "diagonal": unary(diagonal_kwargs),
        "trace": unary(trace_kwargs),
        **{f"atleast_{n}d": unary(lambda draw, a: {}) for n in (1, 2, 3)},
        **{n: stacking_case(n) for n in ("hstack", "vstack", "dstack", "column_stack")},
        **{n: unary(scan_kwargs(n)) for n in ("cumsum", "cumprod", "nancumsum", "nancumprod",
                                              "cumulative_sum", "cumulative_prod")},
        "diff": unary(diff_kwargs),
        **{n: unary(reduce_kwargs(dtype=True)) for n in ("nansum", "nanprod", "nanmean")},
        **{n: unary(reduce_kwargs()) for n in ("nanmax", "nanmin", "count_nonzero", "ptp",
                                               "average", "median", "nanmedian")},
        **{n: unary(reduce_kwargs(dtype=True, ddof=True)) for n in ("nanvar", "nanstd")},
        **{n: unary(reduce_kwargs(int_axis=True)) for n in ("nanargmax", "nanargmin")},
        **{n: unary(quantile_kwargs(100), _NOT_BOOL) for n in ("percentile", "nanpercentile")},
        **{n: unary(quantile_kwargs(1), _NOT_BOOL) for n in ("quantile", "nanquantile")},
        "cov": unary(cov_kwargs, st.sampled_from([(3,), (2, 3), (1, 4), (0, 2), (), (2, 2, 2)])
                     .flatmap(lambda s: arrays(s, dtype=np.float64))),
        "norm": unary(norm_kwargs, unsupported_ok=True),
        **{n: unary(lambda draw, a: {}, square_stack())
           for n in ("det", "inv", "cholesky", "eigvalsh")},
        **{n: unary(lambda draw, a: {}, square_stack(square=False)) for n in ("pinv", "svdvals")},
        "matrix_power": unary(lambda draw, a: {"n": draw(st.integers(-1, 3))}, square_stack()),
        "solve": solve_case(),
        "kron": binary_case(),
        "inner": binary_case(same_last=True),
        "vdot": binary_case(),
        "cross": cross_case(),
        "convolve": convolve_case(),
        "correlate": convolve_case(),
        "polyval": polyval_case(),
        "interp": interp_case(),
        "isclose": isclose_case(),
        "round": unary(lambda draw, a: {"decimals": draw(st.integers(-1, 2))}),
        "sinc": unary(lambda draw, a: {}),
        "i0": unary(lambda draw, a: {}),
        "empty": empty_case(),
        "empty_like": empty_like_case(),
    }
    cases["corrcoef"] = cases["cov"]
    return cases
