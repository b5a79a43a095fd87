"""Hypothesis strategies drawing valid float64 calls of every differentiable op.

``CASES[name]`` draws ``(args, kwargs)`` for ``ops.<name>`` with concrete values. Shapes, axes,
keepdims, indices and broadcasting come from hypothesis; array values come from a NumPy
generator seeded by hypothesis, so they avoid kinks and ties (finite differences across a
kink would not match any gradient) while staying reproducible.
"""

from __future__ import annotations

import string

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import strategies as st

F64 = np.dtype(np.float64)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
small_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


def values(draw, shape, lo=-2.0, hi=2.0):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return np.asarray(rng.uniform(lo, hi, shape))


def away_from_zero(draw, shape, lo=0.5, hi=2.0):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return np.asarray(rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape))


UNARY_DOMAINS = {
    **dict.fromkeys("sqrt log log2 log10 reciprocal cbrt".split(), (0.3, 3.0)),
    "log1p": (-0.5, 3.0),
    **dict.fromkeys("arcsin arccos arctanh".split(), (-0.9, 0.9)),
    "arccosh": (1.2, 3.0),
    "tan": (-1.2, 1.2),
}
UNARY = (
    "negative positive absolute fabs sign square sqrt cbrt reciprocal exp exp2 expm1 log log2 "
    "log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh "
    "deg2rad rad2deg floor ceil trunc rint conjugate"
).split()
BINARY = (
    "add subtract multiply divide power float_power maximum minimum fmax fmin arctan2 hypot "
    "logaddexp logaddexp2 copysign fmod remainder"
).split()


def unary(name):
    lo, hi = UNARY_DOMAINS.get(name, (-2.0, 2.0))

    @st.composite
    def case(draw):
        return (values(draw, draw(shapes), lo, hi),), {}

    return case()


def _binary_operand(draw, name, which, shape):
    if name in ("power", "float_power", "scalar_power") and which == 0:
        return values(draw, shape, 0.5, 2.0)
    if which == 1 and name in ("divide", "fmod", "remainder"):
        return away_from_zero(draw, shape)
    if which == 1 and name == "copysign":
        return away_from_zero(draw, shape, 0.1, 2.0)
    return values(draw, shape)


def binary(name):
    @st.composite
    def case(draw):
        if name == "scalar_power":  # ** between NumPy scalars: 0-d operands only
            s = hnp.BroadcastableShapes(((), ()), ())
        else:
            s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
        a = _binary_operand(draw, name, 0, s.input_shapes[0])
        b = _binary_operand(draw, name, 1, s.input_shapes[1])
        scalar = draw(st.sampled_from([None, 0, 1]))
        if scalar is not None:  # one operand a Python float
            a, b = (float(a.flat[0]), b) if scalar == 0 else (a, float(b.flat[0]))
        return (a, b), {}

    return case()


@st.composite
def where_case(draw):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    cond = values(draw, s.input_shapes[0]) > 0
    return (cond, values(draw, s.input_shapes[1]), values(draw, s.input_shapes[2])), {}


@st.composite
def clip_case(draw):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    a = values(draw, s.input_shapes[0])
    kinds = draw(st.sampled_from([("arr", "arr"), ("arr", None), (None, "arr"), ("f", "f"),
                                  ("arr", "f"), (None, "f")]))
    lo = {"arr": values(draw, s.input_shapes[1], -1.5, -0.2), "f": -0.7, None: None}[kinds[0]]
    hi = {"arr": values(draw, s.input_shapes[2], 0.2, 1.5), "f": 0.6, None: None}[kinds[1]]
    return (a, lo, hi), {}


def axis_choice(draw, ndim):
    if ndim == 0:
        return None
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


def reduced_size(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


def reduction(name):
    @st.composite
    def case(draw):
        shape = draw(shapes)
        axis = axis_choice(draw, len(shape))
        kwargs = {"axis": axis, "keepdims": draw(st.booleans())}
        if name == "prod":
            x = values(draw, shape, 0.5, 1.5)
            x[values(draw, shape) > 1.2] = 0.0  # exact zeros: prod's special cases
        else:
            x = values(draw, shape)
        if name in ("var", "std"):
            ddof = draw(st.sampled_from([0, 1]))
            if reduced_size(shape, axis) - ddof < 1 or (name == "std" and
                                                         reduced_size(shape, axis) < 2):
                ddof = 0
                if name == "std":
                    x = values(draw, shape)
                    kwargs["axis"] = None
                    if x.size < 2:
                        x = values(draw, (2,) + shape)
            kwargs["ddof"] = ddof
        return (x,), kwargs

    return case()


@st.composite
def matmul_case(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    a_nd, b_nd = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    a_shape = (k,) if a_nd == 1 else batch.input_shapes[0][: a_nd - 2] + (n, k)
    b_shape = (k,) if b_nd == 1 else batch.input_shapes[1][: b_nd - 2] + (k, m)
    return (values(draw, a_shape), values(draw, b_shape)), {}


@st.composite
def dot_case(draw):
    n, k, m, j = (draw(st.integers(1, 3)) for _ in range(4))
    a_nd, b_nd = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    a_shape = {0: (), 1: (k,), 2: (n, k), 3: (j, n, k)}[a_nd]
    if a_nd == 0:
        b_shape = draw(small_shapes)
    elif b_nd <= 1:
        b_shape = () if b_nd == 0 else (k,)
    else:
        b_shape = (k, m) if b_nd == 2 else (j, k, m)
    return (values(draw, a_shape), values(draw, b_shape)), {}


@st.composite
def outer_case(draw):
    return (values(draw, draw(shapes)), values(draw, draw(shapes))), {}


@st.composite
def tensordot_case(draw):
    a_shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    if draw(st.booleans()):
        n = draw(st.integers(0, len(a_shape)))
        b_shape = a_shape[len(a_shape) - n:] + draw(hnp.array_shapes(min_dims=0, max_dims=2,
                                                                     max_side=3))
        return (values(draw, a_shape), values(draw, b_shape)), {"axes": n}
    axes_a = draw(st.lists(st.integers(0, len(a_shape) - 1), min_size=1, max_size=len(a_shape),
                           unique=True))
    extra = list(draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)))
    b_dims = extra + [a_shape[i] for i in axes_a]
    order = draw(st.permutations(range(len(b_dims))))
    b_shape = tuple(b_dims[i] for i in order)
    axes_b = [order.index(len(extra) + t) for t in range(len(axes_a))]
    return (values(draw, a_shape), values(draw, b_shape)), {"axes": (tuple(axes_a),
                                                                     tuple(axes_b))}


EINSUM_SPECS = [
    ("ij,jk->ik", "ij,jk"), ("ij->", "ij"), ("ii->i", "ii"), ("ii", "ii"), ("ij->ji", "ij"),
    ("...ij,...jk->...ik", "bij,bjk"), ("i,i->", "i,i"), ("ij,ij->ij", "ij,ij"),
    ("bij,bjk->bik", "bij,bjk"), ("ijk->kj", "ijk"), ("i,j->ij", "i,j"), ("ij", "ij"),
    ("ji", "ij"), ("ii->", "ii"), ("iij->ij", "iij"), ("ij,jk,kl->il", "ij,jk,kl"),
    ("...i,...i->...", "abi,bi"), ("i...->...", "ixy"), ("ij,j", "ij,j"),
]


@st.composite
def einsum_case(draw):
    spec, dims = draw(st.sampled_from(EINSUM_SPECS))
    sizes = {c: draw(st.integers(1, 3)) for c in string.ascii_lowercase}
    operands = []
    for term in dims.split(","):
        shape = tuple(sizes[c] for c in term)
        if "..." in spec and draw(st.booleans()) and len(shape) > 1:
            shape = (1,) + shape[1:]  # a broadcast ellipsis dimension
        operands.append(values(draw, shape))
    return (spec, *operands), {}


def _split_shape(draw, size):
    dims = []
    rest = size
    for _ in range(draw(st.integers(0, 2))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    dims.append(rest)
    if draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@st.composite
def reshape_case(draw):
    x = values(draw, draw(shapes))
    return (x,), {"shape": _split_shape(draw, x.size)}


@st.composite
def transpose_case(draw):
    x = values(draw, draw(shapes))
    if draw(st.booleans()):
        return (x,), {}
    perm = draw(st.permutations(range(x.ndim)))
    return (x,), {"axes": tuple(p - x.ndim if draw(st.booleans()) else p for p in perm)}


@st.composite
def expand_dims_case(draw):
    x = values(draw, draw(shapes))
    n = draw(st.integers(1, 2))
    axes = draw(st.lists(st.integers(0, x.ndim + n - 1), min_size=n, max_size=n, unique=True))
    return (x,), {"axis": axes[0] if n == 1 else tuple(axes)}


@st.composite
def squeeze_case(draw):
    shape = list(draw(shapes))
    for _ in range(draw(st.integers(1, 2))):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    x = values(draw, tuple(shape))
    ones = [i for i, d in enumerate(shape) if d == 1]
    if draw(st.booleans()):
        return (x,), {}
    return (x,), {"axis": tuple(draw(st.lists(st.sampled_from(ones), min_size=1, unique=True)))}


@st.composite
def plain_case(draw):
    return (values(draw, draw(shapes)),), {}


@st.composite
def astype_case(draw):
    # float64 -> float64 here; casts between float widths are checked exactly in test_tape.
    return (values(draw, draw(shapes)),), {"dtype": F64}


@st.composite
def swapaxes_case(draw):
    x = values(draw, draw(small_shapes))
    a = draw(st.integers(-x.ndim, x.ndim - 1))
    return (x,), {"axis1": a, "axis2": draw(st.integers(-x.ndim, x.ndim - 1))}


@st.composite
def moveaxis_case(draw):
    x = values(draw, draw(small_shapes))
    n = draw(st.integers(1, x.ndim))
    src = draw(st.lists(st.integers(0, x.ndim - 1), min_size=n, max_size=n, unique=True))
    dst = draw(st.lists(st.integers(0, x.ndim - 1), min_size=n, max_size=n, unique=True))
    if n == 1:
        return (x,), {"source": src[0], "destination": dst[0] - x.ndim}
    return (x,), {"source": tuple(src), "destination": tuple(dst)}


@st.composite
def broadcast_to_case(draw):
    shape = draw(shapes)
    target = tuple(draw(st.integers(1, 3)) if d == 1 else d for d in shape)
    target = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)) + target
    return (values(draw, shape),), {"shape": target}


@st.composite
def concatenate_case(draw):
    shape = list(draw(small_shapes))
    count = draw(st.integers(1, 3))
    if draw(st.booleans()):
        parts = [values(draw, draw(shapes)) for _ in range(count)]
        return (tuple(parts),), {"axis": None}
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(count):
        shape[axis] = draw(st.integers(1, 3))
        parts.append(values(draw, tuple(shape)))
    if draw(st.booleans()):
        parts.append(np.ones(tuple(shape), dtype=np.int64))  # a part without gradient
    return (tuple(parts),), {"axis": axis}


@st.composite
def stack_case(draw):
    shape = draw(shapes)
    parts = tuple(values(draw, shape) for _ in range(draw(st.integers(1, 3))))
    return (parts,), {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}


@st.composite
def full_case(draw):
    shape = draw(small_shapes)
    fill = values(draw, shape[len(shape) - draw(st.integers(0, len(shape))):])
    return (fill,), {"shape": shape}


@st.composite
def full_like_case(draw):
    shape = draw(small_shapes)
    fill = values(draw, shape[len(shape) - draw(st.integers(0, len(shape))):])
    return (values(draw, shape), fill), {}


@st.composite
def index_case(draw, allow_repeats=True):
    """(array shape, index): basic and integer-array indexing, repeats included."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    items = []
    array_shape = (draw(st.integers(1, 4)),)
    for size in shape:
        kind = draw(st.sampled_from(["int", "slice", "array", "list", "all", "none"]))
        if kind == "none":
            items.append(None)
            kind = "all"
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size, size)))
            stop = draw(st.one_of(st.none(), st.integers(-size, size)))
            items.append(slice(start, stop, draw(st.sampled_from([None, 1, 2, -1]))))
        elif kind in ("array", "list"):
            idx = draw(st.lists(st.integers(-size, size - 1), min_size=array_shape[0],
                                max_size=array_shape[0], unique=not allow_repeats))
            if len(idx) != array_shape[0]:
                items.append(slice(None))
            else:
                items.append(np.array(idx, dtype=np.intp) if kind == "array" else idx)
        else:
            items.append(slice(None))
    if draw(st.booleans()) and len(items) > 1:
        items[draw(st.integers(0, len(items) - 1))] = Ellipsis
        if sum(i is Ellipsis for i in items) > 1:
            items = [i for i in items if i is not Ellipsis] + [Ellipsis]
    return shape, tuple(items)


@st.composite
def getitem_case(draw):
    shape, index = draw(index_case())
    return (values(draw, shape), index), {}


def _value_for(draw, selection_shape):
    if draw(st.integers(0, 3)) == 0:
        return 0.5
    trim = draw(st.integers(0, len(selection_shape)))
    vshape = tuple(1 if draw(st.booleans()) else d for d in selection_shape[trim:])
    return values(draw, vshape)


@st.composite
def setitem_case(draw):
    shape, index = draw(index_case())
    x = values(draw, shape)
    return (x, index, _value_for(draw, x[index].shape)), {}


CASES = {
    **{name: unary(name) for name in UNARY},
    **{name: binary(name) for name in (*BINARY, "scalar_power")},
    "where": where_case(),
    "clip": clip_case(),
    "astype": astype_case(),
    **{name: reduction(name) for name in "sum mean prod max min var std".split()},
    "matmul": matmul_case(),
    "dot": dot_case(),
    "outer": outer_case(),
    "tensordot": tensordot_case(),
    "einsum": einsum_case(),
    "reshape": reshape_case(),
    "transpose": transpose_case(),
    "expand_dims": expand_dims_case(),
    "squeeze": squeeze_case(),
    **{name: plain_case() for name in ("ravel", "flatten", "copy", "array", "asarray")},
    "chosen": plain_case().map(lambda case: ((np.True_, *case[0]), case[1])),
    "swapaxes": swapaxes_case(),
    "moveaxis": moveaxis_case(),
    "broadcast_to": broadcast_to_case(),
    "broadcast_view": broadcast_to_case(),
    "concatenate": concatenate_case(),
    "stack": stack_case(),
    "full": full_case(),
    "full_like": full_like_case(),
    "getitem": getitem_case(),
    "setitem": setitem_case(),
    "index_add": setitem_case(),
}
