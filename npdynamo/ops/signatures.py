"""Binders mirroring the signatures of NumPy's functions and ndarray methods, one per spelling.

Each binder takes exactly the arguments NumPy's callable takes, refuses the ones a graph cannot
express (``out=``, ``where=``, ``order=``...) with ``UnsupportedArguments`` and returns the
canonical ``(op, args, kwargs)`` for the op registry. Importing this module fills the tables in
``binding``; ``normalize`` does that and adds the operators and indexing.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import (
    FUNCTIONS,
    Binder,
    Normalized,
    check_device,
    functions,
    keepdims_flag,
    methods,
)
from npdynamo.ops.canonical import NO_VALUE as NO
from npdynamo.ops.composite import Composite, nested_array
from npdynamo.ops.elementwise import UFUNC_OPS
from npdynamo.ops.nonzero_indices import canon_nonzero
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments
from npdynamo.ops.symbolic import SymInt

# -- ufuncs (and the matmul gufunc) ---------------------------------------------------------

_UFUNC_KWARGS = {"where": True, "casting": "same_kind", "order": "K", "subok": True,
                 "signature": None}
_GUFUNC_KWARGS = {"axes": None, "axis": None, "keepdims": False}


def _ufunc_binder(op: Op, ufunc: np.ufunc) -> Binder:
    nin, nout, name = ufunc.nin, ufunc.nout, ufunc.__name__
    neutral = {**_UFUNC_KWARGS, **(_GUFUNC_KWARGS if ufunc.signature else {})}

    def call(args: tuple, kwargs: dict) -> Normalized:
        if not nin <= len(args) <= nin + nout:
            raise TypeError(
                f"{name}() takes from {nin} to {nin + nout} positional arguments but "
                f"{len(args)} were given"
            )
        for key in kwargs:
            if key not in neutral and key not in ("out", "dtype"):
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
        if len(args) > nin:
            if "out" in kwargs:
                raise TypeError(
                    f"{name}() cannot specify 'out' as both a positional and keyword argument"
                )
            C.no_out(name, tuple(args[nin:]))
        C.no_out(name, kwargs.get("out"))
        C.require_default(name, **{k: (v, neutral[k]) for k, v in kwargs.items() if k in neutral})
        operands = [C.operand(name, a) for a in args[:nin]]
        return C.canon(op, operands, dtype=C.dtype(name, kwargs.get("dtype")))

    return call


def _register_ufuncs() -> None:
    ufunc_ops = {**UFUNC_OPS, "matmul": REGISTRY["matmul"]}
    # Aliases (np.abs, np.mod, np.acos, np.pow...) are the same ufunc objects. vars(), not
    # dir()+getattr: the latter would trigger NumPy's deprecated lazy attributes.
    for ufunc in list(vars(np).values()):
        if isinstance(ufunc, np.ufunc) and ufunc.__name__ in ufunc_ops:
            FUNCTIONS[ufunc] = _ufunc_binder(ufunc_ops[ufunc.__name__], ufunc)
    # Distinct ufunc objects computing exactly what an op computes (same loops).
    for ufunc, opname in ((np.degrees, "rad2deg"), (np.radians, "deg2rad")):
        FUNCTIONS[ufunc] = _ufunc_binder(ufunc_ops[opname], ufunc)


_register_ufuncs()


@functions("where")
def _where(condition, x=NO, y=NO, /):
    if x is NO and y is NO:  # np.nonzero(condition): results of a size known at run time
        return canon_nonzero("where", condition)
    if x is NO or y is NO:
        raise ValueError("where: either both or neither of x and y should be given")
    return C.canon(REGISTRY["where"], [C.operand("where", v) for v in (condition, x, y)])


def _clip_canon(a, lo, hi, out, kwargs):
    for key in kwargs:
        if key not in _UFUNC_KWARGS:
            raise TypeError(f"clip() got an unexpected keyword argument '{key}'")
    C.no_out("clip", out)
    C.require_default("clip", **{k: (v, _UFUNC_KWARGS[k]) for k, v in kwargs.items()})
    return C.canon(REGISTRY["clip"], [C.operand("clip", v) for v in (a, lo, hi)])


@functions("clip")
def _clip(a, a_min=NO, a_max=NO, out=None, *, min=NO, max=NO, **kwargs):
    if a_min is NO and a_max is NO:
        a_min = None if min is NO else min
        a_max = None if max is NO else max
    elif a_min is NO or a_max is NO:
        missing = "a_min" if a_min is NO else "a_max"
        raise TypeError(f"clip() missing 1 required positional argument: '{missing}'")
    elif min is not NO or max is not NO:
        raise ValueError(
            "clip: Passing `min` or `max` keyword argument when `a_min` and `a_max` are "
            "provided is forbidden."
        )
    return _clip_canon(a, a_min, a_max, out, kwargs)


@methods("clip")
def _clip_method(self, min=None, max=None, out=None, **kwargs):
    return _clip_canon(self, min, max, out, kwargs)


def _astype_dtype(dtype: object) -> np.dtype | None:
    return C.dtype("astype", float if dtype is None else dtype)  # astype(None) means float64


@functions("astype")
def _astype(x, dtype, /, *, copy=True, device=None):
    C.require_default("astype", copy=(copy, True))
    check_device("astype", device)
    return C.canon(REGISTRY["astype"], [x], dtype=_astype_dtype(dtype))


@methods("astype")
def _astype_method(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    C.require_default("astype", order=(order, "K"), casting=(casting, "unsafe"),
                      subok=(subok, True), copy=(copy, True))
    return C.canon(REGISTRY["astype"], [self], dtype=_astype_dtype(dtype))


# -- reductions -----------------------------------------------------------------------------


def _reduction(name: str, a, axis, out, keepdims, int_axis: bool = False, **static):
    C.no_out(name, out)
    ax = C.int_axis(name, axis) if int_axis else C.axis(name, axis)
    operand = C.operand(name, a)
    return C.canon(REGISTRY[name], [operand], axis=ax, keepdims=keepdims_flag(name, keepdims),
                   **static)


def _accumulating(name: str):
    def binder(a, axis=None, dtype=None, out=None, keepdims=NO, initial=NO, where=NO):
        C.require_default(name, initial=(initial, NO), where=(where, True))
        return _reduction(name, a, axis, out, keepdims, dtype=C.dtype(name, dtype))

    return binder


def _mean_binder(a, axis=None, dtype=None, out=None, keepdims=NO, *, where=NO):
    C.require_default("mean", where=(where, True))
    return _reduction("mean", a, axis, out, keepdims, dtype=C.dtype("mean", dtype))


def _extremum(name: str):
    def binder(a, axis=None, out=None, keepdims=NO, initial=NO, where=NO):
        C.require_default(name, initial=(initial, NO), where=(where, True))
        return _reduction(name, a, axis, out, keepdims)

    return binder


def _logical(name: str):
    def binder(a, axis=None, out=None, keepdims=NO, *, where=NO):
        C.require_default(name, where=(where, True))
        return _reduction(name, a, axis, out, keepdims)

    return binder


def _moment(name: str):
    def binder(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO, *, where=NO, mean=NO,
               correction=NO):
        C.require_default(name, where=(where, True), mean=(mean, NO))
        if correction is not NO:
            if ddof != 0:
                raise ValueError(f"{name}: ddof and correction can't be provided simultaneously.")
            ddof = correction
        return _reduction(name, a, axis, out, keepdims, dtype=C.dtype(name, dtype),
                          ddof=C.static(name, "ddof", ddof))

    return binder


def _arg(name: str):
    def binder(a, axis=None, out=None, *, keepdims=NO):
        return _reduction(name, a, axis, out, keepdims, int_axis=True)

    return binder


for _name, _binder in {
    "sum": _accumulating("sum"), "prod": _accumulating("prod"), "mean": _mean_binder,
    "max": _extremum("max"), "min": _extremum("min"), "any": _logical("any"),
    "all": _logical("all"), "var": _moment("var"), "std": _moment("std"),
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
}.items():
    functions(_name)(_binder)
    methods(_name)(_binder)
functions("amax")(_extremum("max"))
functions("amin")(_extremum("min"))


# -- contractions ---------------------------------------------------------------------------


@functions("dot")
def _dot(a, b, out=None):
    C.no_out("dot", out)
    return C.canon(REGISTRY["dot"], [C.operand("dot", a), C.operand("dot", b)])


@methods("dot")
def _dot_method(self, other, /, out=None):
    return _dot(self, other, out)


@functions("outer")
def _outer(a, b, out=None):
    C.no_out("outer", out)
    return C.canon(REGISTRY["outer"], [C.operand("outer", a), C.operand("outer", b)])


@functions("tensordot")
def _tensordot(a, b, axes=2):
    C.static("tensordot", "axes", axes)
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError("tensordot: axes must be an int or a pair of axis sequences")
        axes = tuple(
            C.as_index(ax) if not isinstance(ax, (list, tuple)) else tuple(map(C.as_index, ax))
            for ax in axes
        )
    else:
        axes = C.as_index(axes)
    operands = [C.operand("tensordot", a), C.operand("tensordot", b)]
    return C.canon(REGISTRY["tensordot"], operands, axes=axes)


@functions("einsum")
def _einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedArguments("einsum: only the subscripts-string form is supported")
    C.no_out("einsum", out)
    C.require_default("einsum", optimize=(optimize, False), order=(order, "K"),
                      casting=(casting, "safe"))
    subscripts = operands[0].replace(" ", "")
    arrays = [C.operand("einsum", x) for x in operands[1:]]
    return C.canon(REGISTRY["einsum"], [subscripts, *arrays], dtype=C.dtype("einsum", dtype))


# -- shape ops ------------------------------------------------------------------------------


def _reshape_canon(a, shape, order, copy):
    C.require_default("reshape", order=(order, "C"), copy=(copy, None))
    if shape is None:
        raise UnsupportedArguments("reshape: shape=None is not supported")
    return C.canon(REGISTRY["reshape"], [C.operand("reshape", a)],
                   shape=C.shape("reshape", shape))


@functions("reshape")
def _reshape(a, /, shape, order="C", *, copy=None):
    return _reshape_canon(a, shape, order, copy)


@methods("reshape")
def _reshape_method(self, *shape, order="C", copy=None):
    if not shape:
        raise TypeError("reshape() takes exactly 1 argument (0 given)")
    return _reshape_canon(self, shape[0] if len(shape) == 1 else shape, order, copy)


@functions("transpose", "permute_dims")
def _transpose(a, axes=None):
    axes = C.axis("transpose", axes)
    axes = (axes,) if isinstance(axes, int) else axes
    return C.canon(REGISTRY["transpose"], [C.operand("transpose", a)], axes=axes)


@methods("transpose")
def _transpose_method(self, *axes):
    return _transpose(self, axes[0] if len(axes) == 1 else (axes or None))


@functions("expand_dims")
def _expand_dims(a, axis):
    return C.canon(REGISTRY["expand_dims"], [C.operand("expand_dims", a)],
                   axis=C.axis("expand_dims", axis))


@functions("squeeze")
@methods("squeeze")
def _squeeze(a, axis=None):
    return C.canon(REGISTRY["squeeze"], [C.operand("squeeze", a)], axis=C.axis("squeeze", axis))


def _joined(name: str, arrays, axis, out, dtype, casting):
    C.no_out(name, out)
    C.require_default(name, dtype=(dtype, None), casting=(casting, "same_kind"))
    ax = C.int_axis(name, axis) if name == "concatenate" else C.as_index(axis, "axis")
    return C.canon(REGISTRY[name], [C.operand_sequence(name, arrays)], axis=ax)


@functions("concatenate", "concat")
def _concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return _joined("concatenate", arrays, axis, out, dtype, casting)


@functions("stack")
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    return _joined("stack", arrays, axis, out, dtype, casting)


@functions("broadcast_to")
def _broadcast_to(array, shape, subok=False):
    C.require_default("broadcast_to", subok=(subok, False))
    return C.canon(REGISTRY["broadcast_to"], [C.operand("broadcast_to", array)],
                   shape=C.shape("broadcast_to", shape))


def _flat(name: str):
    def binder(a, order="C"):
        C.require_default(name, order=(order, "C"))
        return C.canon(REGISTRY[name], [C.operand(name, a)])

    return binder


functions("ravel")(_flat("ravel"))
methods("ravel")(_flat("ravel"))
methods("flatten")(_flat("flatten"))
methods("copy")(_flat("copy"))


@functions("copy")
def _np_copy(a, order="K", subok=False):
    # np.copy always returns an ndarray (a NumPy scalar becomes 0-d): that is ops.array.
    C.require_default("copy", order=(order, "K"), subok=(subok, False))
    return C.canon(REGISTRY["array"], [C.operand("copy", a)])


@functions("array")
def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, ndmax=0,
           like=None):
    C.require_default("array", copy=(copy, True), order=(order, "K"), subok=(subok, False),
                      ndmin=(ndmin, 0), ndmax=(ndmax, 0), like=(like, None))
    stacked = _array_of_arrays("array", object, dtype)
    if stacked is not None:
        return stacked
    return C.canon(REGISTRY["array"], [C.operand("array", object)],
                   dtype=C.dtype("array", dtype))


def _holds_array_value(items: list | tuple) -> bool:
    return any(_holds_array_value(v) if isinstance(v, (list, tuple)) else C.is_array_value(v)
               for v in items)


def _array_of_arrays(name: str, items, dtype) -> Normalized | Composite | None:
    """``np.array([a, b, ...])`` of graph values (and numbers): ``np.stack`` of the items, which
    makes the same new array (same shape, same dtype: each item converts on its own first)."""
    if not isinstance(items, (list, tuple)) or not _holds_array_value(items):
        return None
    if dtype is not None:
        raise UnsupportedArguments(f"{name}: dtype= with a list of arrays")
    if any(isinstance(v, (list, tuple)) for v in items):
        return nested_array(name, items)
    return C.canon(REGISTRY["stack"], [tuple(items)])


@functions("asarray")
def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    C.require_default("asarray", order=(order, None), copy=(copy, None), like=(like, None))
    check_device("asarray", device)
    stacked = _array_of_arrays("asarray", a, dtype)
    if stacked is not None:
        return stacked
    return C.canon(REGISTRY["asarray"], [C.operand("asarray", a)],
                   dtype=C.dtype("asarray", dtype))


@functions("swapaxes")
@methods("swapaxes")
def _swapaxes(a, axis1, axis2):
    return C.canon(REGISTRY["swapaxes"], [C.operand("swapaxes", a)],
                   axis1=C.as_index(axis1, "axis1"), axis2=C.as_index(axis2, "axis2"))


@functions("moveaxis")
def _moveaxis(a, source, destination):
    return C.canon(REGISTRY["moveaxis"], [C.operand("moveaxis", a)],
                   source=C.axis("moveaxis", source),
                   destination=C.axis("moveaxis", destination))


# -- creation -------------------------------------------------------------------------------

_F64 = np.dtype(np.float64)


def _dtype_or_f64(name: str, dtype: object) -> np.dtype:
    # Not `C.dtype(...) or _F64`: a dtype without fields has len() 0 and is falsy.
    dt = C.dtype(name, dtype)
    return _F64 if dt is None else dt


def _filled(name: str):
    def binder(shape, dtype=None, order="C", *, device=None, like=None):
        C.require_default(name, order=(order, "C"), like=(like, None))
        check_device(name, device)
        return C.canon(REGISTRY[name], [], shape=C.shape(name, shape),
                       dtype=_dtype_or_f64(name, dtype))

    return binder


functions("zeros")(_filled("zeros"))
functions("ones")(_filled("ones"))


@functions("full")
def _full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    C.require_default("full", order=(order, "C"), like=(like, None))
    check_device("full", device)
    return C.canon(REGISTRY["full"], [C.operand("full", fill_value)],
                   shape=C.shape("full", shape), dtype=C.dtype("full", dtype))


def _like_static(name: str, dtype, order, subok, shape, device) -> dict:
    C.require_default(name, order=(order, "K"), subok=(subok, True))
    check_device(name, device)
    return {"dtype": C.dtype(name, dtype),
            "shape": None if shape is None else C.shape(name, shape)}


def _like(name: str):
    def binder(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        static = _like_static(name, dtype, order, subok, shape, device)
        return C.canon(REGISTRY[name], [C.operand(name, a)], **static)

    return binder


functions("zeros_like")(_like("zeros_like"))
functions("ones_like")(_like("ones_like"))


@functions("full_like")
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    static = _like_static("full_like", dtype, order, subok, shape, device)
    operands = [C.operand("full_like", a), C.operand("full_like", fill_value)]
    return C.canon(REGISTRY["full_like"], operands, **static)


def _number(name: str, param: str, value: object) -> int | float:
    C.static(name, param, value)
    if isinstance(value, (np.integer, np.bool_)) or type(value) is bool:
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if type(value) in (int, float):
        return value  # type: ignore[return-value]
    raise UnsupportedArguments(f"{name}: {param}={value!r} is not supported")


@functions("arange")
def _arange(*args, start=NO, stop=NO, step=NO, dtype=None, device=None, like=None):
    if len(args) > 3:
        raise TypeError(
            f"arange() takes from 1 to 3 positional arguments but {len(args)} were given"
        )
    # A lone positional argument is the stop, unless stop is also passed by keyword.
    names = ("stop",) if len(args) == 1 and stop is NO else ("start", "stop", "step")
    given = dict(zip(names, args))
    for key, value in (("start", start), ("stop", stop), ("step", step)):
        if value is not NO:
            if key in given:
                raise TypeError(f"arange() got multiple values for argument '{key}'")
            given[key] = value
    if given.get("stop") is None:  # arange(5) spelled arange(start=5) or arange(5, None)
        if given.get("start") is None:
            raise TypeError("arange() requires stop to be specified.")
        given["stop"] = given.pop("start")
    if given.get("step") is None:
        given.pop("step", None)
    C.require_default("arange", like=(like, None))
    check_device("arange", device)
    # a symbolic size (``np.arange(x.shape[0])`` under dynamic shapes) has a length rule
    static = {k: v if isinstance(v, SymInt) else _number("arange", k, v)
              for k, v in given.items() if v is not None}
    return C.canon(REGISTRY["arange"], [], **static, dtype=C.dtype("arange", dtype))


@functions("eye")
def _eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    C.require_default("eye", order=(order, "C"), like=(like, None))
    check_device("eye", device)
    return C.canon(REGISTRY["eye"], [], N=C.as_index(N, "N"),
                   M=None if M is None else C.as_index(M, "M"), k=C.as_index(k, "k"),
                   dtype=_dtype_or_f64("eye", dtype))


@functions("identity")
def _identity(n, dtype=None, *, like=None):
    return _eye(n, dtype=dtype, like=like)


@functions("linspace")
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
              device=None):
    C.require_default("linspace", retstep=(retstep, False))
    if axis not in (0, -1):
        raise UnsupportedArguments(f"linspace: axis={axis!r} is not supported")
    check_device("linspace", device)
    return C.canon(REGISTRY["linspace"], [], start=_number("linspace", "start", start),
                   stop=_number("linspace", "stop", stop), num=C.as_index(num, "num"),
                   endpoint=C.flag("linspace", "endpoint", endpoint),
                   dtype=C.dtype("linspace", dtype))
