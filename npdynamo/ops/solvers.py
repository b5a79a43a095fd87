"""Linear algebra beyond contractions: ``np.linalg`` (norm, det, inv, solve, cholesky, pinv,
matrix_power, eigvalsh, svdvals), kron, cross, inner, vdot, with their binders.

``norm`` without ``ord`` is a reduction (sqrt of the sum of squares) that the numba backend
fuses; the rest are opaque NumPy/LAPACK calls. Rules follow ``np.linalg``'s conventions: stacks
of square matrices in the last two axes, float64 computation for integer and boolean input,
float16 refused with the ``TypeError`` NumPy raises, real results for Hermitian eigenvalues and
singular values of complex input. Functions with several results (slogdet, qr, eigh, svd,
lstsq) are in ``decompositions``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.linalg import LinAlgError

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import FUNCTIONS, bound
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import broadcast_shapes, normalize_axes, normalize_axis, to_meta

_F64 = np.dtype(np.float64)


def linalg_dtype(name: str, *metas: ArrayMeta) -> np.dtype:
    """The dtype ``np.linalg`` computes in: inexact inputs kept, others as float64."""
    dts = []
    for m in metas:
        if m.dtype == np.float16:
            raise TypeError(f"{name}: array type float16 is unsupported in linalg")
        dts.append(m.dtype if m.dtype.kind in "fc" else _F64)
    return np.result_type(*dts)


def _real(dtype: np.dtype) -> np.dtype:
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def _square_stack(name: str, meta: ArrayMeta, square: bool = True) -> None:
    if meta.ndim < 2:
        raise LinAlgError(f"{name}: {meta.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if square and meta.shape[-1] != meta.shape[-2]:
        raise LinAlgError(f"{name}: Last 2 dimensions of the array must be square")


def _matrix_rule(name: str, result: Callable[[ArrayMeta, np.dtype], tuple], real: bool = False,
                 square: bool = True):
    def rule(a: object, **static: object) -> ArrayMeta:
        meta = to_meta(name, a)
        _square_stack(name, meta, square)
        dtype = linalg_dtype(name, meta)
        shape = result(meta, **static)
        return ArrayMeta(shape, _real(dtype) if real else dtype, scalar=shape == ())

    return rule


def _solve_rule(a: object, b: object) -> ArrayMeta:
    am, bm = to_meta("solve", a), to_meta("solve", b)
    _square_stack("solve", am)
    dtype = linalg_dtype("solve", am, bm)
    if bm.ndim == 1:
        if bm.shape[0] != am.shape[-1]:
            raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0 "
                             f"({bm.shape[0]} is different from {am.shape[-1]})")
        return ArrayMeta(am.shape[:-1], dtype)
    if bm.ndim < 2 or bm.shape[-2] != am.shape[-1]:
        raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0")
    batch = broadcast_shapes("solve", am.shape[:-2], bm.shape[:-2])
    return ArrayMeta(batch + bm.shape[-2:], dtype)


def _matrix_power_rule(a: object, *, n: int) -> ArrayMeta:
    meta = to_meta("matrix_power", a)
    _square_stack("matrix_power", meta)
    dtype = meta.dtype if n >= 0 else linalg_dtype("matrix_power", meta)
    return ArrayMeta(meta.shape, dtype)


# -- norm -----------------------------------------------------------------------------------

_MATRIX_ORDS = ("fro", 1, -1, np.inf, -np.inf)


def _norm_rule(x: object, *, ord: object = None, axis: object = None,
               keepdims: bool = False) -> ArrayMeta:
    meta = to_meta("norm", x)
    if meta.ndim == 0:
        raise UnsupportedArguments("norm of a 0-d value")
    dtype = _real(meta.dtype if meta.dtype.kind in "fc" else _F64)
    if axis is None and ord is not None and meta.ndim not in (1, 2):
        raise ValueError("norm: Improper number of dimensions to norm.")
    axes_arg = axis if axis is not None or ord is None else tuple(range(meta.ndim))
    axes_tuple = (axes_arg,) if isinstance(axes_arg, int) else axes_arg
    if axes_tuple is not None and len(axes_tuple) > 2:
        raise ValueError("norm: Improper number of dimensions to norm.")
    if axes_tuple is not None:
        for ax in axes_tuple:
            normalize_axis("norm", ax, meta.ndim)
        if len(axes_tuple) == 2 and axes_tuple[0] % meta.ndim == axes_tuple[1] % meta.ndim:
            raise ValueError("norm: Duplicate axes given.")
    axes = normalize_axes("norm", axes_tuple, meta.ndim)
    if ord is not None:
        if meta.size == 0:
            raise UnsupportedArguments("norm with ord= of an empty array")
        if len(axes) == 1 and isinstance(ord, str):
            raise ValueError(f"norm: Invalid norm order '{ord}' for vectors")
        if len(axes) == 2 and ord not in _MATRIX_ORDS:
            raise UnsupportedArguments(f"norm: matrix norm ord={ord!r}")
        if ord not in ("fro",) and np.isinf(ord) or (len(axes) == 2 and ord in (1, -1)):
            if any(meta.shape[i] == 0 for i in axes):
                raise ValueError("norm: zero-size array to reduction operation maximum which "
                                 "has no identity")
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(meta.shape))
    else:
        shape = tuple(d for i, d in enumerate(meta.shape) if i not in axes)
    return ArrayMeta(shape, dtype, scalar=shape == ())


def _norm(x, *, ord=None, axis=None, keepdims=False):
    return np.linalg.norm(x, ord, axis, keepdims)


# -- products -------------------------------------------------------------------------------


def _product_dtype(name: str, a: ArrayMeta, b: ArrayMeta) -> np.dtype:
    return np.multiply.resolve_dtypes((a.dtype, b.dtype, None))[-1]


def _kron_rule(a: object, b: object) -> ArrayMeta:
    am, bm = to_meta("kron", a), to_meta("kron", b)
    nd = max(am.ndim, bm.ndim)
    sa = (1,) * (nd - am.ndim) + am.shape
    sb = (1,) * (nd - bm.ndim) + bm.shape
    shape = tuple(x * y for x, y in zip(sa, sb))
    return ArrayMeta(shape, _product_dtype("kron", am, bm), scalar=shape == ())


def _inner_rule(a: object, b: object) -> ArrayMeta:
    am, bm = to_meta("inner", a), to_meta("inner", b)
    dtype = np.result_type(am.dtype, bm.dtype)
    if am.ndim == 0 or bm.ndim == 0:
        shape = am.shape or bm.shape
        return ArrayMeta(shape, _product_dtype("inner", am, bm), scalar=shape == ())
    if am.shape[-1] != bm.shape[-1]:
        raise ValueError(f"inner: shapes {am.shape} and {bm.shape} not aligned: "
                         f"{am.shape[-1]} (dim {am.ndim - 1}) != {bm.shape[-1]} "
                         f"(dim {bm.ndim - 1})")
    shape = am.shape[:-1] + bm.shape[:-1]
    return ArrayMeta(shape, dtype, scalar=shape == ())


def _vdot_rule(a: object, b: object) -> ArrayMeta:
    am, bm = to_meta("vdot", a), to_meta("vdot", b)
    if am.size != bm.size:
        raise ValueError("vdot: vectors have different lengths")
    return ArrayMeta((), np.result_type(am.dtype, bm.dtype), scalar=True)


def _cross_rule(a: object, b: object, *, axisa: int = -1, axisb: int = -1,
                axisc: int = -1) -> ArrayMeta:
    am, bm = to_meta("cross", a), to_meta("cross", b)
    if am.ndim == 0 or bm.ndim == 0:
        raise ValueError("cross: At least one array has zero dimension")
    ia = normalize_axis("cross", axisa, am.ndim, "axisa")
    ib = normalize_axis("cross", axisb, bm.ndim, "axisb")
    if am.shape[ia] not in (2, 3) or bm.shape[ib] not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product\n(dimension must be "
                         "2 or 3)")
    if am.shape[ia] != 3 or bm.shape[ib] != 3:
        raise UnsupportedArguments("cross: 2-element vectors are deprecated in NumPy 2")
    if am.dtype.kind == "b" or bm.dtype.kind == "b":
        raise UnsupportedArguments("cross: boolean vectors")
    rest_a = am.shape[:ia] + am.shape[ia + 1:]
    rest_b = bm.shape[:ib] + bm.shape[ib + 1:]
    batch = broadcast_shapes("cross", rest_a, rest_b)
    ic = normalize_axis("cross", axisc, len(batch) + 1, "axisc")
    shape = batch[:ic] + (3,) + batch[ic:]
    return ArrayMeta(shape, _product_dtype("cross", am, bm))


def _cross(a, b, *, axisa=-1, axisb=-1, axisc=-1):
    return np.cross(a, b, axisa, axisb, axisc)


def _matrix_power(a, *, n):
    return np.linalg.matrix_power(a, n)


def _same(meta: ArrayMeta) -> tuple:
    return meta.shape


for _op in (
    Op("norm", _norm, _norm_rule, kind="reduction",
       defaults={"ord": None, "axis": None, "keepdims": False}),
    Op("det", np.linalg.det, _matrix_rule("det", lambda m: m.shape[:-2])),
    Op("inv", np.linalg.inv, _matrix_rule("inv", _same)),
    # (differentiable=False: differentiable in principle, but no VJP rule yet)
    Op("cholesky", np.linalg.cholesky, _matrix_rule("cholesky", _same), differentiable=False),
    Op("pinv", np.linalg.pinv,
       _matrix_rule("pinv", lambda m: m.shape[:-2] + m.shape[:-3:-1], square=False),
       differentiable=False),
    Op("eigvalsh", np.linalg.eigvalsh,
       _matrix_rule("eigvalsh", lambda m: m.shape[:-1], real=True)),
    Op("solve", np.linalg.solve, _solve_rule),
    Op("matrix_power", _matrix_power, _matrix_power_rule, differentiable=False,
       defaults={"n": REQUIRED}),
    Op("kron", np.kron, _kron_rule),
    Op("inner", np.inner, _inner_rule, cost="blas"),
    Op("vdot", np.vdot, _vdot_rule, cost="blas"),
    Op("cross", _cross, _cross_rule, defaults={"axisa": -1, "axisb": -1, "axisc": -1}),
):
    register(_op)
if hasattr(np.linalg, "svdvals"):
    register(Op("svdvals", np.linalg.svdvals,
                _matrix_rule("svdvals", lambda m: m.shape[:-2] + (min(m.shape[-2:]),),
                             real=True, square=False), differentiable=False))


# -- binders --------------------------------------------------------------------------------


def linalg(*names: str):
    """Register a binder for each ``np.linalg.<name>`` this NumPy has."""

    def deco(binder):
        for name in names:
            fn = getattr(np.linalg, name, None)
            if fn is not None:
                FUNCTIONS[fn] = bound(f"linalg.{name}", binder)
        return binder

    return deco


def _unary(name: str):
    def binder(a, /):
        return C.canon(REGISTRY[name], [C.operand(name, a)])

    return binder


for _name in ("det", "inv", "svdvals"):
    linalg(_name)(_unary(_name))


@linalg("cholesky")
def _cholesky(a, /, *, upper=False):
    C.require_default("cholesky", upper=(upper, False))
    return C.canon(REGISTRY["cholesky"], [C.operand("cholesky", a)])


@linalg("pinv")
def _pinv(a, rcond=None, hermitian=False, *, rtol=C.NO_VALUE):
    C.require_default("pinv", rcond=(rcond, None), hermitian=(hermitian, False),
                      rtol=(rtol, C.NO_VALUE))
    return C.canon(REGISTRY["pinv"], [C.operand("pinv", a)])


@linalg("eigvalsh")
def _eigvalsh(a, UPLO="L"):
    C.require_default("eigvalsh", UPLO=(UPLO, "L"))
    return C.canon(REGISTRY["eigvalsh"], [C.operand("eigvalsh", a)])


@linalg("solve")
def _solve(a, b):
    return C.canon(REGISTRY["solve"], [C.operand("solve", a), C.operand("solve", b)])


@linalg("matrix_power")
def _matrix_power_binder(a, n):
    C.static("matrix_power", "n", n)
    if n == 1 and not isinstance(a, (list, tuple)):
        # NumPy returns the array itself (no copy): a graph op would give a new array, so a
        # write through the result or an ``is`` test would differ
        raise UnsupportedArguments("matrix_power(a, 1) returns a itself, not a new array")
    return C.canon(REGISTRY["matrix_power"], [C.operand("matrix_power", a)],
                   n=C.as_index(C.static("matrix_power", "n", n), "n"))


@linalg("norm")
def _norm_binder(x, ord=None, axis=None, keepdims=False):
    C.static("norm", "ord", ord)
    if ord is not None and not isinstance(ord, (str, int, float)):
        raise UnsupportedArguments(f"norm: ord={ord!r}")
    if isinstance(ord, float) and ord.is_integer():
        ord = int(ord)
    return C.canon(REGISTRY["norm"], [C.operand("norm", x)], ord=ord,
                   axis=C.axis("norm", axis), keepdims=C.flag("norm", "keepdims", keepdims))


def _binary(name: str):
    def binder(a, b, /):
        return C.canon(REGISTRY[name], [C.operand(name, a), C.operand(name, b)])

    return binder


for _name in ("kron", "inner", "vdot"):
    FUNCTIONS[getattr(np, _name)] = bound(_name, _binary(_name))


def _cross_binder(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    return C.canon(REGISTRY["cross"], [C.operand("cross", a), C.operand("cross", b)],
                   axisa=C.as_index(axisa, "axisa"), axisb=C.as_index(axisb, "axisb"),
                   axisc=C.as_index(axisc, "axisc"))


FUNCTIONS[np.cross] = bound("cross", _cross_binder)


# -- np.linalg's array-API spellings of existing ops ----------------------------------------


@linalg("trace")
def _linalg_trace(x, /, *, offset=0, dtype=None):
    return C.canon(REGISTRY["trace"], [C.operand("trace", x)],
                   offset=C.as_index(offset, "offset"), axis1=-2, axis2=-1,
                   dtype=C.dtype("trace", dtype))


@linalg("diagonal")
def _linalg_diagonal(x, /, *, offset=0):
    return C.canon(REGISTRY["diagonal"], [C.operand("diagonal", x)],
                   offset=C.as_index(offset, "offset"), axis1=-2, axis2=-1)


@linalg("cross")
def _linalg_cross(x1, x2, /, *, axis=-1):
    return _cross_binder(x1, x2, axis=axis)


@linalg("matmul")
def _linalg_matmul(x1, x2, /):
    return C.canon(REGISTRY["matmul"], [C.operand("matmul", x1), C.operand("matmul", x2)])


@linalg("vector_norm")
def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    C.static("vector_norm", "ord", ord)
    axis = C.axis("vector_norm", axis)
    if ord != 2 or (isinstance(axis, tuple) and len(axis) > 2):
        raise UnsupportedArguments("vector_norm: only ord=2 over at most two axes")
    return C.canon(REGISTRY["norm"], [C.operand("vector_norm", x)], axis=axis,
                   keepdims=C.flag("vector_norm", "keepdims", keepdims))


@linalg("matrix_norm")
def _matrix_norm(x, /, *, keepdims=False, ord="fro"):
    C.static("matrix_norm", "ord", ord)
    if ord not in _MATRIX_ORDS:
        raise UnsupportedArguments(f"matrix_norm: ord={ord!r}")
    return C.canon(REGISTRY["norm"], [C.operand("matrix_norm", x)],
                   ord=None if ord == "fro" else ord, axis=(-2, -1),
                   keepdims=C.flag("matrix_norm", "keepdims", keepdims))
