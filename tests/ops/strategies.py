"""Hypothesis strategies that build canonical calls of every registered op on real values.

``CASES[name]`` draws a ``Case``: the canonical args/kwargs of one call of ``ops.<name>`` with
concrete NumPy values (arrays, NumPy scalars, Python scalars), sometimes deliberately invalid
(bad broadcast, bad axis, bad reshape, mismatched contraction, bad index). The property test
runs the op on them and checks its rule against the result or the exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import strategies as st

MAIN_DTYPES = [np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64")]
EXTRA_DTYPES = [np.dtype(t) for t in ("int8", "uint8", "float16", "complex128")]
PY_INTS = [0, 1, 2, 3, -1, -2, 7, 1000, -129, 255, 2**31, 2**63, 2**64 - 1, -(2**63) - 1, 2**70]
PY_FLOATS = [0.0, 0.5, 1.5, -2.25, 1e300, float("inf"), float("nan")]


@dataclass
class Case:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    unsupported_ok: bool = False  # the rule may refuse it with UnsupportedArguments


def huge_int(x: object) -> bool:
    """A Python int NumPy can only hold in an object array (the rules may refuse it)."""
    return type(x) is int and not -(2**63) <= x < 2**64


dtypes = st.one_of(st.sampled_from(MAIN_DTYPES), st.sampled_from(MAIN_DTYPES + EXTRA_DTYPES))
py_scalars = st.one_of(
    st.sampled_from(PY_INTS),
    st.sampled_from(PY_FLOATS),
    st.booleans(),
    st.integers(-4, 6),
    st.floats(-4, 4, allow_nan=False),
)
small_py_scalars = st.one_of(st.booleans(), st.integers(-3, 5), st.floats(-3, 3, allow_nan=False))
sides = st.one_of(st.integers(1, 3), st.integers(0, 4))
shapes = st.lists(sides, max_size=4).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 3), max_size=4).map(tuple)


def fill(shape: tuple[int, ...], dtype: np.dtype, seed: int, nonneg: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        lo = 0 if nonneg or dtype.kind == "u" else -5
        return rng.integers(lo, 6, size=shape).astype(dtype)
    vals = rng.standard_normal(shape) * 3
    if dtype.kind == "c":
        vals = vals + 1j * rng.standard_normal(shape)
    return vals.astype(dtype)


@st.composite
def arrays(draw, shape=None, dtype=None, nonneg: bool = False, scalar_ok: bool = True):
    """An ndarray; a 0-d shape sometimes gives a NumPy scalar instead."""
    shape = draw(shapes) if shape is None else tuple(shape)
    dtype = draw(dtypes) if dtype is None else np.dtype(dtype)
    arr = fill(shape, dtype, draw(st.integers(0, 2**32 - 1)), nonneg)
    if shape == () and scalar_ok and draw(st.booleans()):
        return arr[()]
    return arr


@st.composite
def operands(draw, shape, nonneg: bool = False, scalars=py_scalars):
    """An array of ``shape``, or (for scalar-compatible slots) a Python scalar."""
    if draw(st.integers(0, 3)) == 0:
        value = draw(scalars)
        if nonneg and isinstance(value, (int, float)) and value < 0:
            value = -value
        return value
    return draw(arrays(shape, nonneg=nonneg))


@st.composite
def broadcast_shapes(draw, n: int, clash: float = 0.1):
    """``n`` shapes that broadcast together, except with probability ``clash``."""
    shapes_ = list(
        draw(
            hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=4, min_side=0, max_side=4)
        ).input_shapes
    )
    if draw(st.floats(0, 1)) < clash:
        i = draw(st.integers(0, n - 1))
        if shapes_[i]:
            j = draw(st.integers(0, len(shapes_[i]) - 1))
            s = list(shapes_[i])
            s[j] += 2
            shapes_[i] = tuple(s)
    return shapes_


def maybe_dtype(p_none: int = 4):
    return st.one_of(*[st.none()] * p_none, dtypes)


# -- elementwise ----------------------------------------------------------------------------


def ufunc_case(name: str, nin: int):
    nonneg = name in ("power", "left_shift", "right_shift", "float_power")

    @st.composite
    def case(draw):
        shapes_ = draw(broadcast_shapes(nin))
        args = tuple(draw(operands(s, nonneg=nonneg)) for s in shapes_)
        kwargs = {}
        if draw(st.integers(0, 6)) == 0:
            kwargs["dtype"] = draw(dtypes)
        # No array operand: NumPy's value-based corner cases may be refused.
        return Case(args, kwargs, unsupported_ok=all(type(a) in (bool, int, float) for a in args))

    return case()


@st.composite
def where_case(draw):
    s = draw(broadcast_shapes(3))
    cond = draw(st.one_of(arrays(s[0], dtype=bool), arrays(s[0]), st.booleans()))
    return Case((cond, draw(operands(s[1])), draw(operands(s[2]))))


@st.composite
def clip_case(draw):
    s = draw(broadcast_shapes(3))
    bound = lambda shape: st.one_of(st.none(), operands(shape))
    return Case((draw(arrays(s[0])), draw(bound(s[1])), draw(bound(s[2]))))


@st.composite
def astype_case(draw):
    x = draw(st.one_of(arrays(), arrays(()), small_py_scalars))
    return Case((x,), {"dtype": draw(dtypes)})


# -- reductions -----------------------------------------------------------------------------


@st.composite
def axis_arg(draw, ndim: int, tuples: bool = True):
    forms = [st.none(), st.integers(-ndim - 1, ndim)]
    if tuples:
        forms.append(
            st.lists(st.integers(-ndim - 1, ndim), max_size=ndim + 1).map(tuple)
            | st.permutations(range(ndim)).flatmap(
                lambda p: st.integers(0, len(p)).map(lambda k: tuple(p[:k]))
            )
        )
    return draw(st.one_of(*forms))


def reduction_case(name: str):
    tuples = name not in ("argmax", "argmin")
    with_dtype = name in ("sum", "prod", "mean", "var", "std")

    @st.composite
    def case(draw):
        x = draw(arrays())
        kwargs: dict[str, Any] = {"axis": draw(axis_arg(np.ndim(x), tuples))}
        if with_dtype:
            kwargs["dtype"] = draw(maybe_dtype())
        if name in ("var", "std"):
            kwargs["ddof"] = draw(st.sampled_from([0, 1, 2]))
        kwargs["keepdims"] = draw(st.booleans())
        return Case((x,), kwargs)

    return case()


# -- contractions ---------------------------------------------------------------------------


@st.composite
def matmul_case(draw):
    n, k, m = (draw(st.integers(0, 3)) for _ in range(3))
    batch_a, batch_b = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, min_side=0, max_side=3)
    ).input_shapes
    a_shape = (k,) if draw(st.booleans()) else batch_a + (n, k)
    b_shape = (k,) if draw(st.booleans()) else batch_b + (k, m)
    if draw(st.integers(0, 8)) == 0:
        a_shape = a_shape[:-1] + (k + 1,)
    if draw(st.integers(0, 12)) == 0:
        a_shape = ()
    kwargs = {"dtype": draw(dtypes)} if draw(st.integers(0, 8)) == 0 else {}
    return Case((draw(arrays(a_shape)), draw(arrays(b_shape))), kwargs)


@st.composite
def dot_case(draw):
    k = draw(st.integers(0, 3))
    a_lead = draw(st.lists(st.integers(0, 3), max_size=2).map(tuple))
    b_shape = draw(st.sampled_from([(k,), (k, 2), (3, k, 2), ()]))
    a_shape = a_lead + (k,) if draw(st.integers(0, 5)) else ()
    if draw(st.integers(0, 8)) == 0 and a_shape:
        a_shape = a_shape[:-1] + (k + 1,)
    b = (
        draw(st.one_of(arrays(b_shape), small_py_scalars))
        if b_shape == ()
        else draw(arrays(b_shape))
    )
    return Case((draw(arrays(a_shape)), b))


@st.composite
def outer_case(draw):
    return Case(
        (
            draw(operands(draw(shapes), scalars=small_py_scalars)),
            draw(operands(draw(shapes), scalars=small_py_scalars)),
        )
    )


@st.composite
def tensordot_case(draw):
    contracted = draw(st.lists(st.integers(0, 3), max_size=2))
    a_free = draw(st.lists(st.integers(0, 3), max_size=2))
    b_free = draw(st.lists(st.integers(0, 3), max_size=2))
    a = draw(arrays(tuple(a_free + contracted)))
    b_contracted = list(contracted)
    if b_contracted and draw(st.integers(0, 8)) == 0:
        b_contracted[0] += 1
    b = draw(arrays(tuple(b_contracted + b_free)))
    nd = len(contracted)
    if draw(st.booleans()):
        axes: Any = nd
    else:
        na = np.ndim(a)
        axes = (tuple(range(na - nd, na)), tuple(range(nd)))
    return Case((a, b), {"axes": axes})


@st.composite
def einsum_case(draw):
    labels = "abcd"
    size = {c: draw(st.integers(0, 3)) for c in labels}
    n_ops = draw(st.integers(1, 3))
    terms, arrays_ = [], []
    use_ellipsis = draw(st.integers(0, 3)) == 0
    ell = draw(hnp.mutually_broadcastable_shapes(num_shapes=n_ops, max_dims=2, max_side=3))
    for i in range(n_ops):
        term = draw(st.lists(st.sampled_from(labels), max_size=3))
        shape = [size[c] for c in term]
        if shape and draw(st.integers(0, 5)) == 0:
            j = draw(st.integers(0, len(shape) - 1))
            shape[j] = draw(st.sampled_from([1, shape[j] + 1]))  # broadcast, or a clash
        text = "".join(term)
        if use_ellipsis and draw(st.booleans()):
            text = "..." + text
            shape = list(ell.input_shapes[i]) + shape
        terms.append(text)
        arrays_.append(draw(arrays(tuple(shape), scalar_ok=False)))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        present = sorted(set("".join(terms)) - {"."})
        out = draw(
            st.permutations(present).flatmap(
                lambda p: st.integers(0, len(p)).map(lambda k: "".join(p[:k]))
            )
        )
        if use_ellipsis and draw(st.integers(0, 4)):
            out = "..." + out
        subscripts += "->" + out
    kwargs = {"dtype": draw(dtypes)} if draw(st.integers(0, 8)) == 0 else {}
    return Case((subscripts, *arrays_), kwargs)


# -- shape ops ------------------------------------------------------------------------------


@st.composite
def reshape_case(draw):
    x = draw(arrays())
    size = int(np.size(x))
    if draw(st.integers(0, 4)) == 0 or size == 0:
        shape = draw(st.lists(st.integers(-1, 4), max_size=4).map(tuple))
    else:
        factors, rest = [], size
        for p in (2, 3, 5, 7):
            while rest % p == 0:
                factors.append(p)
                rest //= p
        dims = draw(st.permutations(factors)) if factors else []
        shape = []
        for d in dims:
            if shape and draw(st.booleans()):
                shape[-1] *= d
            else:
                shape.append(d)
        shape += [1] * draw(st.integers(0, 1))
        if shape and draw(st.booleans()):
            shape[draw(st.integers(0, len(shape) - 1))] = -1
        shape = tuple(shape)
    return Case((x,), {"shape": tuple(shape)})


@st.composite
def transpose_case(draw):
    x = draw(arrays())
    nd = np.ndim(x)
    axes = draw(
        st.one_of(
            st.none(),
            st.permutations(range(nd)).map(tuple),
            st.lists(st.integers(-nd - 1, nd), max_size=nd + 1).map(tuple),
        )
    )
    return Case((x,), {} if axes is None else {"axes": axes})


@st.composite
def expand_dims_case(draw):
    x = draw(arrays())
    nd = np.ndim(x)
    axis = draw(
        st.one_of(
            st.integers(-nd - 2, nd + 1),
            st.lists(st.integers(-nd - 3, nd + 2), max_size=3).map(tuple),
        )
    )
    return Case((x,), {"axis": axis})


@st.composite
def squeeze_case(draw):
    x = draw(arrays(draw(st.lists(st.sampled_from([1, 1, 2, 0]), max_size=4).map(tuple))))
    axis = draw(axis_arg(np.ndim(x)))
    return Case((x,), {} if axis is None else {"axis": axis})


@st.composite
def concatenate_case(draw):
    base = list(draw(shapes))
    n = draw(st.integers(0, 3))
    axis = draw(st.one_of(st.none(), st.integers(-len(base) - 1, len(base))))
    parts = []
    for _ in range(n):
        s = list(base)
        if s and axis is not None and -len(s) <= axis < len(s):
            s[axis] = draw(st.integers(0, 3))
        if draw(st.integers(0, 10)) == 0:
            s = s[:-1] if s and draw(st.booleans()) else s + [2]
        parts.append(draw(arrays(tuple(s))))
    return Case((tuple(parts),), {"axis": axis})


@st.composite
def stack_case(draw):
    base = draw(shapes)
    n = draw(st.integers(0, 3))
    parts = []
    for _ in range(n):
        s = base if draw(st.integers(0, 10)) else base + (1,)
        parts.append(draw(st.one_of(arrays(s), small_py_scalars) if s == () else arrays(s)))
    axis = draw(st.integers(-len(base) - 2, len(base) + 1))
    return Case((tuple(parts),), {"axis": axis})


@st.composite
def broadcast_to_case(draw):
    result = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0, max_side=4)
    )
    x_shape, target = result.input_shapes[0], result.result_shape
    if draw(st.integers(0, 6)) == 0:
        target = draw(shapes)
    return Case((draw(arrays(x_shape)),), {"shape": tuple(target)})


def flat_case():
    return st.builds(lambda x: Case((x,)), arrays())


@st.composite
def array_case(draw):
    x = draw(
        st.one_of(
            arrays(),
            small_py_scalars,
            st.sampled_from(PY_INTS),
            st.lists(st.integers(-3, 3), max_size=3),
            st.lists(st.floats(-2, 2), max_size=2),
        )
    )
    dtype = draw(maybe_dtype(2))
    return Case((x,), {} if dtype is None else {"dtype": dtype}, unsupported_ok=huge_int(x))


@st.composite
def swapaxes_case(draw):
    x = draw(arrays())
    nd = np.ndim(x)
    return Case(
        (x,), {"axis1": draw(st.integers(-nd - 1, nd)), "axis2": draw(st.integers(-nd - 1, nd))}
    )


@st.composite
def moveaxis_case(draw):
    x = draw(arrays())
    nd = np.ndim(x)
    axes = st.one_of(
        st.integers(-nd - 1, nd), st.lists(st.integers(-nd - 1, nd), max_size=3).map(tuple)
    )
    return Case((x,), {"source": draw(axes), "destination": draw(axes)})
