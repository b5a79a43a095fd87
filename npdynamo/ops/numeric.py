"""Numeric helpers: convolve, correlate, polyval, interp, isclose, round, sinc, i0, and the
``empty``/``empty_like`` allocations, with their binders.

All run as NumPy calls inside the graph. ``empty`` and ``empty_like`` allocate zeros: NumPy's
contents are unspecified, and zeros make a read-before-write deterministic on every backend.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import check_device, functions, methods
from npdynamo.ops.creation import _filled_rule, _like_rule
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import (
    broadcast_shapes,
    is_py_scalar,
    output_casting_error,
    shape_of,
    to_meta,
)

_F64 = np.dtype(np.float64)


def _convolution_rule(name: str):
    def rule(a: object, v: object, *, mode: str = "full") -> ArrayMeta:
        am, vm = to_meta(name, a), to_meta(name, v)
        if am.ndim > 1 or vm.ndim > 1:
            raise ValueError(f"{name}: object too deep for desired array")
        if name == "correlate" and 0 in (am.ndim, vm.ndim):
            raise ValueError("correlate: object of too small depth for desired array")
        n, m = am.size, vm.size
        if min(n, m) == 0:
            raise ValueError(f"{name}: a and v cannot be empty")
        size = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}[mode]
        return ArrayMeta((size,), np.result_type(am.dtype, vm.dtype))

    return rule


def _polyval_rule(p: object, x: object) -> ArrayMeta:
    pm, xm = to_meta("polyval", p), to_meta("polyval", x)
    if pm.ndim != 1:
        raise UnsupportedArguments("polyval: coefficients must be one-dimensional")
    if pm.size == 0:
        return ArrayMeta(xm.shape, xm.dtype)
    return ArrayMeta(xm.shape, np.result_type(xm.dtype, pm.dtype), scalar=xm.ndim == 0)


def _interp_rule(x: object, xp: object, fp: object, *, left: float | None = None,
                 right: float | None = None) -> ArrayMeta:
    xm, xpm, fpm = (to_meta("interp", v) for v in (x, xp, fp))
    if xpm.ndim != 1 or fpm.ndim != 1:
        raise ValueError("interp: object too deep for desired array")
    if xpm.size != fpm.size:
        raise ValueError("interp: fp and xp are not of the same length.")
    if xpm.size == 0:
        if xm.size == 0:
            raise UnsupportedArguments("interp: no points and no sample points")
        raise ValueError("interp: array of sample points is empty")
    if xm.dtype.kind == "c" or xpm.dtype.kind == "c":
        raise TypeError("interp: cannot interpolate at complex points")
    dtype = np.dtype(np.complex128) if fpm.dtype.kind == "c" else _F64
    return ArrayMeta(xm.shape, dtype, scalar=xm.ndim == 0)


def _isclose_rule(a: object, b: object, *, rtol: float = 1e-05, atol: float = 1e-08,
                  equal_nan: bool = False) -> ArrayMeta:
    shape = broadcast_shapes("isclose", shape_of(to_meta("isclose", a)),
                             shape_of(to_meta("isclose", b)))
    return ArrayMeta(shape, np.dtype(bool), scalar=shape == ())


def _special_rule(name: str):
    def rule(x: object) -> ArrayMeta:
        meta = to_meta(name, x)
        if name == "i0" and meta.dtype.kind == "c":
            raise TypeError("i0: i0 not supported for complex values")
        dtype = meta.dtype if meta.dtype.kind in "fc" else _F64
        return ArrayMeta(meta.shape, dtype, scalar=meta.ndim == 0 and name == "sinc")

    return rule


def _round_rule(a: object, *, decimals: int = 0) -> ArrayMeta:
    meta = to_meta("round", a)
    if meta.dtype.kind == "b" and decimals:
        raise output_casting_error("multiply", _F64, meta.dtype)
    dtype = np.dtype(np.float16) if meta.dtype.kind == "b" else meta.dtype
    return ArrayMeta(meta.shape, dtype, scalar=meta.ndim == 0)


def _round(a, *, decimals=0):
    return np.round(a, decimals)


def _convolution_impl(name: str):
    fn = getattr(np, name)

    def impl(a, v, *, mode="full"):
        return fn(a, v, mode)

    return impl


def _interp(x, xp, fp, *, left=None, right=None):
    return np.interp(x, xp, fp, left, right)


def _isclose(a, b, *, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(a, b, rtol, atol, equal_nan)


def _tri_rule(*, N: int, M: int | None = None, k: int = 0, dtype: np.dtype = _F64) -> ArrayMeta:
    # built from arange(N) and arange(-k, M - k): a negative size is an empty axis
    return ArrayMeta((max(N, 0), max(N if M is None else M, 0)), dtype)


def _zeros(*, shape, dtype=_F64):
    return np.zeros(shape, dtype)


def _zeros_like(a, *, dtype=None, shape=None):
    return np.zeros_like(a, dtype=dtype, shape=shape)


for _op in (
    Op("convolve", _convolution_impl("convolve"), _convolution_rule("convolve"),
       defaults={"mode": "full"}),
    Op("correlate", _convolution_impl("correlate"), _convolution_rule("correlate"),
       defaults={"mode": "full"}),
    Op("polyval", np.polyval, _polyval_rule),
    Op("interp", _interp, _interp_rule, differentiable=False,  # (no VJP rule yet)
       defaults={"left": None, "right": None}),
    Op("isclose", _isclose, _isclose_rule, differentiable=False,
       defaults={"rtol": 1e-05, "atol": 1e-08, "equal_nan": False}),
    Op("round", _round, _round_rule, defaults={"decimals": 0}),
    Op("sinc", np.sinc, _special_rule("sinc")),
    Op("i0", np.i0, _special_rule("i0"), differentiable=False),  # (no VJP rule yet)
    Op("tri", np.tri, _tri_rule, differentiable=False,
       defaults={"N": REQUIRED, "M": None, "k": 0, "dtype": _F64}, allocates=True),
    Op("empty", _zeros, _filled_rule("empty"), differentiable=False,
       defaults={"shape": REQUIRED, "dtype": _F64}, allocates=True),
    Op("empty_like", _zeros_like, _like_rule("empty_like"), differentiable=False,
       defaults={"dtype": None, "shape": None}, allocates=True),
):
    register(_op)


# -- binders --------------------------------------------------------------------------------


def _convolution_binder(name: str, default: str):
    def binder(a, v, mode=default):
        C.static(name, "mode", mode)
        if mode not in ("full", "same", "valid"):
            raise ValueError(f"{name}: mode must be one of 'valid', 'same', or 'full' "
                             f"(got {mode!r})")
        return C.canon(REGISTRY[name], [C.operand(name, a), C.operand(name, v)], mode=mode)

    return binder


functions("convolve")(_convolution_binder("convolve", "full"))
functions("correlate")(_convolution_binder("correlate", "valid"))


@functions("polyval")
def _polyval_binder(p, x):
    return C.canon(REGISTRY["polyval"], [C.operand("polyval", p), C.operand("polyval", x)])


def _number(name: str, param: str, value: object) -> object:
    C.static(name, param, value)
    if value is None or (is_py_scalar(value) and type(value) is not complex):
        return value
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise UnsupportedArguments(f"{name}: {param}={value!r} is not supported")


@functions("interp")
def _interp_binder(x, xp, fp, left=None, right=None, period=None):
    C.require_default("interp", period=(period, None))
    return C.canon(REGISTRY["interp"], [C.operand("interp", v) for v in (x, xp, fp)],
                   left=_number("interp", "left", left), right=_number("interp", "right", right))


@functions("isclose")
def _isclose_binder(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return C.canon(REGISTRY["isclose"], [C.operand("isclose", a), C.operand("isclose", b)],
                   rtol=_number("isclose", "rtol", rtol), atol=_number("isclose", "atol", atol),
                   equal_nan=C.flag("isclose", "equal_nan", equal_nan))


def _round_binder(a, decimals=0, out=None):
    C.no_out("round", out)
    return C.canon(REGISTRY["round"], [C.operand("round", a)],
                   decimals=C.as_index(C.static("round", "decimals", decimals), "decimals"))


functions("round", "around")(_round_binder)
methods("round")(_round_binder)


def _special_binder(name: str, x):
    return C.canon(REGISTRY[name], [C.operand(name, x)])


for _name in ("sinc", "i0"):
    functions(_name)(partial(_special_binder, _name))  # its signature is ``(x)``, as NumPy's


@functions("tri")
def _tri(N, M=None, k=0, dtype=float, *, like=None):
    C.require_default("tri", like=(like, None))
    dt = C.dtype("tri", dtype)
    return C.canon(REGISTRY["tri"], [], N=C.as_index(N, "N"),
                   M=None if M is None else C.as_index(M, "M"), k=C.as_index(k, "k"),
                   dtype=_F64 if dt is None else dt)


@functions("empty")
def _empty(shape, dtype=float, order="C", *, device=None, like=None):
    C.require_default("empty", order=(order, "C"), like=(like, None))
    check_device("empty", device)
    dt = C.dtype("empty", dtype)
    return C.canon(REGISTRY["empty"], [], shape=C.shape("empty", shape),
                   dtype=_F64 if dt is None else dt)


@functions("empty_like")
def _empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    C.require_default("empty_like", order=(order, "K"), subok=(subok, True))
    check_device("empty_like", device)
    return C.canon(REGISTRY["empty_like"], [C.operand("empty_like", prototype)],
                   dtype=C.dtype("empty_like", dtype),
                   shape=None if shape is None else C.shape("empty_like", shape))
