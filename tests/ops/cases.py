"""Case strategies for indexing and creation ops, and ``CASES``: one strategy per registered op.

The property test draws from ``CASES[name]``; a registered op without an entry here fails the
coverage test, so a new op cannot slip in without being checked against NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from npdynamo.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS
from npdynamo.ops.scalar_ops import BINARY, UNARY
from tests.ops.cases_breadth import breadth_cases
from tests.ops.cases_decompositions import decomposition_cases
from tests.ops.higher_order_cases import CONTROL_FLOW_CASES
from tests.ops.strategies import (
    Case,
    array_case,
    arrays,
    astype_case,
    broadcast_to_case,
    clip_case,
    concatenate_case,
    dot_case,
    dtypes,
    einsum_case,
    expand_dims_case,
    flat_case,
    huge_int,
    matmul_case,
    maybe_dtype,
    moveaxis_case,
    outer_case,
    py_scalars,
    reduction_case,
    reshape_case,
    shapes,
    small_py_scalars,
    squeeze_case,
    stack_case,
    swapaxes_case,
    tensordot_case,
    transpose_case,
    ufunc_case,
    where_case,
)

# -- indexing -------------------------------------------------------------------------------

_ITEM_KINDS = (
    ["int"] * 3
    + ["slice"] * 3
    + ["newaxis", "ellipsis", "array", "array", "list", "int0d", "pybool"]
)
_CONSUMING = ("int", "slice", "array", "list", "int0d", "boolarray")


@st.composite
def slices(draw):
    bound = st.one_of(st.none(), st.integers(-6, 6))
    step = st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2]), st.just(0))
    return slice(draw(bound), draw(bound), draw(step) if draw(st.integers(0, 20)) else 0)


@st.composite
def indices(draw, shape: tuple[int, ...], bool_arrays: bool = True):
    """An index tuple for an array of ``shape`` whose array items hold in-range values."""
    ndim = len(shape)
    kinds = draw(
        st.lists(
            st.sampled_from(_ITEM_KINDS + (["boolarray"] if bool_arrays else [])), max_size=ndim + 2
        )
    )
    if kinds.count("ellipsis") > 1 and draw(st.integers(0, 3)):
        first = kinds.index("ellipsis")
        kinds = [k for i, k in enumerate(kinds) if k != "ellipsis" or i == first]
    consumed = sum(k in _CONSUMING for k in kinds)
    span = max(ndim - consumed, 0) if "ellipsis" in kinds else 0
    adv_base = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    items: list[Any] = []
    dim = 0
    for kind in kinds:
        size = shape[dim] if dim < ndim else 1
        if kind in ("array", "list", "int0d") and size == 0:
            kind = "slice"
        if kind == "int":
            hi = size + (2 if draw(st.integers(0, 8)) == 0 else 0)
            items.append(draw(st.integers(-hi, max(hi - 1, -hi))))
        elif kind == "slice":
            items.append(draw(slices()))
        elif kind == "newaxis":
            items.append(None)
        elif kind == "ellipsis":
            items.append(Ellipsis)
            dim += span
            continue
        elif kind == "pybool":
            items.append(draw(st.booleans()))
            continue
        elif kind == "array":
            ashape = tuple(d if draw(st.integers(0, 3)) else 1 for d in adv_base)
            ashape = ashape[draw(st.integers(0, len(ashape))) :]
            if draw(st.integers(0, 12)) == 0:
                ashape = ashape + (4,)
            rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
            dtype = draw(st.sampled_from([np.intp, np.int32, np.uint8]))
            lo = 0 if dtype == np.uint8 else -size
            items.append(rng.integers(lo, size, size=ashape).astype(dtype))
        elif kind == "list":
            hi = size - 1 + (3 if draw(st.integers(0, 10)) == 0 else 0)  # sometimes out of range
            items.append(draw(st.lists(st.integers(-size, hi), max_size=3)))
        elif kind == "int0d":
            v = draw(st.integers(-size, size - 1))
            items.append(np.int64(v) if draw(st.booleans()) else np.array(v))
        elif kind == "boolarray":
            rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
            items.append(rng.random(size) < 0.5)
        if kind in _CONSUMING:
            dim += 1
    if len(items) == 1 and draw(st.booleans()):
        return items[0]  # a bare item: canonical forms wrap it, rules must accept both
    return tuple(items)


@st.composite
def getitem_case(draw):
    x = draw(arrays())
    index = draw(indices(np.shape(x)))
    return Case((x, index), unsupported_ok=True)


@st.composite
def setitem_case(draw):
    x = draw(arrays(scalar_ok=draw(st.integers(0, 10)) == 0))
    index = draw(indices(np.shape(x), bool_arrays=False))
    try:
        selected = x[index]
        target, element = np.shape(selected), isinstance(selected, np.generic)
    except Exception:
        target, element = draw(shapes), False
    form = draw(st.integers(0, 5))
    if form == 0:
        value: Any = draw(py_scalars)
    elif form == 1:
        value = (
            draw(
                st.lists(
                    st.integers(-3, 3),
                    min_size=target[-1:] and target[-1],
                    max_size=target[-1:] and target[-1],
                )
            )
            if target
            else [1]
        )
    else:
        vshape = list(target)
        if vshape and draw(st.booleans()):
            vshape[draw(st.integers(0, len(vshape) - 1))] = 1
        vshape = vshape[draw(st.integers(0, len(vshape))) :] if draw(st.booleans()) else vshape
        if draw(st.integers(0, 6)) == 0:
            vshape = [1] + vshape
        if draw(st.integers(0, 8)) == 0:
            vshape = vshape + [5]
        value = draw(arrays(tuple(vshape)))
    return Case((x, index, value), unsupported_ok=element and isinstance(value, list))


# -- creation -------------------------------------------------------------------------------

sizes = st.one_of(st.integers(0, 4), st.integers(-1, 4))
shape_args = st.one_of(
    st.lists(sizes, max_size=3).map(tuple), st.integers(0, 4).map(lambda n: (n,))
)


@st.composite
def filled_case(draw):
    kwargs: dict[str, Any] = {"shape": draw(shape_args)}
    if draw(st.booleans()):
        kwargs["dtype"] = draw(dtypes)
    return Case((), kwargs)


@st.composite
def fill_value(draw, shape):
    target = tuple(d for d in shape if d >= 0)
    tail = target[draw(st.integers(0, len(target))) :]
    return draw(st.one_of(py_scalars, arrays(tail), arrays(())))


@st.composite
def full_case(draw):
    shape = draw(shape_args)
    fill, dtype = draw(fill_value(shape)), draw(maybe_dtype(2))
    return Case(
        (fill,), {"shape": shape, "dtype": dtype}, unsupported_ok=dtype is None and huge_int(fill)
    )


@st.composite
def like_case(draw):
    a = draw(st.one_of(arrays(), small_py_scalars))
    kwargs = {"dtype": draw(maybe_dtype(2)), "shape": draw(st.one_of(st.none(), shape_args))}
    return Case((a,), kwargs)


@st.composite
def full_like_case(draw):
    case = draw(like_case())
    shape = case.kwargs["shape"] if case.kwargs["shape"] is not None else np.shape(case.args[0])
    return Case((case.args[0], draw(fill_value(shape))), case.kwargs)


@st.composite
def arange_case(draw):
    number = st.one_of(
        st.integers(-5, 10), st.floats(-5, 10, allow_nan=False), st.sampled_from([True, 0.1, 2.5])
    )
    kwargs: dict[str, Any] = {"stop": draw(number)}
    if draw(st.booleans()):
        kwargs["start"] = draw(number)
    if draw(st.booleans()):
        kwargs["step"] = draw(
            st.one_of(
                st.sampled_from([1, 2, -1, 0.5, -0.25, 3]),
                st.just(0) if draw(st.integers(0, 20)) == 0 else st.just(1),
            )
        )
    kwargs["dtype"] = draw(maybe_dtype(3))
    return Case((), kwargs)


@st.composite
def eye_case(draw):
    kwargs: dict[str, Any] = {
        "N": draw(sizes),
        "M": draw(st.one_of(st.none(), sizes)),
        "k": draw(st.integers(-3, 3)),
    }
    if draw(st.booleans()):
        kwargs["dtype"] = draw(dtypes)
    return Case((), kwargs)


@st.composite
def linspace_case(draw):
    number = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))
    return Case(
        (),
        {
            "start": draw(number),
            "stop": draw(number),
            "num": draw(st.integers(-1, 6)),
            "endpoint": draw(st.booleans()),
            "dtype": draw(maybe_dtype(2)),
        },
    )


# -- Python arithmetic on scalars --------------------------------------------------------------

_PY_NUMBERS = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-5, 5),
                        st.complex_numbers(max_magnitude=5))


def python_scalar_case(nargs: int) -> st.SearchStrategy[Case]:
    # int ** negative int and float ** fraction have value-dependent types: the rule may refuse
    return st.tuples(*[_PY_NUMBERS] * nargs).map(lambda a: Case(a, unsupported_ok=True))


@st.composite
def scalar_power_case(draw):
    # ``a ** b`` between NumPy scalars and Python numbers; integer results are left to Python
    # (at least one NumPy scalar: the op is only made for one, and huge Python ints would make
    # Python compute a huge power)
    numpy_scalar = st.builds(lambda d, v: np.asarray(v).astype(d)[()], dtypes,
                             st.floats(-4, 4, allow_nan=False))
    a, b = draw(numpy_scalar), draw(st.one_of(numpy_scalar, small_py_scalars))
    if draw(st.booleans()):
        a, b = b, a
    integral = all(np.asarray(x).dtype.kind in "biu" for x in (a, b))
    return Case((a, b), unsupported_ok=integral)


@st.composite
def chosen_case(draw):
    # a test that holds (a failing one raises at run time: no rule can know), or a malformed one
    test = draw(st.sampled_from([np.True_, np.array(True), np.array([True]), np.float64(1.0),
                                 True]))
    value = draw(st.one_of(arrays(draw(shapes)), arrays(()).map(lambda a: a[()])))
    return Case((test, value))


@st.composite
def asserted_case(draw):
    # an assert that holds (a failing one raises at run time: no rule can know), or a malformed
    # test (capture gives it only graph values: no Python bool)
    test = draw(st.sampled_from([np.True_, np.array(True), np.array([True]), np.float64(1.0)]))
    return Case((test,))


def to_python_case() -> st.SearchStrategy[Case]:
    # float()/int()/.item() of a 0-d array, a NumPy scalar, or a small array; the rule refuses
    # what stays Python's (complex, a bool's item, arrays that are not 0-d)
    return st.one_of(arrays(()), arrays((1,)), arrays((2,))).map(
        lambda a: Case((a,), unsupported_ok=True))


def sqrt_case() -> st.SearchStrategy[Case]:
    # math.sqrt of a value that is not negative (a negative one raises ValueError when the graph
    # runs: no rule can know, as for a failing assert)
    def not_negative(case: Case) -> bool:
        with np.errstate(invalid="ignore"):
            return not np.any(np.real(case.args[0]) < 0)

    return to_python_case().filter(not_negative)


CASES: dict[str, st.SearchStrategy[Case]] = {
    **{name: ufunc_case(name, 1) for name in UNARY_UFUNCS},
    **{name: ufunc_case(name, 2) for name in BINARY_UFUNCS},
    "where": where_case(),
    "scalar_power": scalar_power_case(),
    "chosen": chosen_case(),
    "asserted": asserted_case(),
    "clip": clip_case(),
    "astype": astype_case(),
    **{
        name: reduction_case(name)
        for name in "sum prod mean max min any all var std argmax argmin".split()
    },
    "matmul": matmul_case(),
    "dot": dot_case(),
    "outer": outer_case(),
    "tensordot": tensordot_case(),
    "einsum": einsum_case(),
    "reshape": reshape_case(),
    "transpose": transpose_case(),
    "expand_dims": expand_dims_case(),
    "squeeze": squeeze_case(),
    "concatenate": concatenate_case(),
    "stack": stack_case(),
    "broadcast_to": broadcast_to_case(),
    "ravel": flat_case(),
    "flatten": flat_case(),
    "copy": flat_case(),
    "array": array_case(),
    "asarray": array_case(),
    "swapaxes": swapaxes_case(),
    "moveaxis": moveaxis_case(),
    "getitem": getitem_case(),
    "setitem": setitem_case(),
    "zeros": filled_case(),
    "ones": filled_case(),
    "full": full_case(),
    "zeros_like": like_case(),
    "ones_like": like_case(),
    "full_like": full_like_case(),
    "arange": arange_case(),
    "eye": eye_case(),
    "linspace": linspace_case(),
    **breadth_cases(),
    **decomposition_cases(),
    **{name: python_scalar_case(2) for name in BINARY},
    **{name: python_scalar_case(1) for name in UNARY},
    **{name: to_python_case() for name in ("py_float", "py_int", "py_item")},
    "py_sqrt": sqrt_case(),
    **CONTROL_FLOW_CASES,
    # projections of decompositions' named tuples and of control-flow results
    "tuple_item": st.one_of(decomposition_cases()["tuple_item"],
                            CONTROL_FLOW_CASES["tuple_item"]),
}

__all__ = ["CASES", "Case"]
