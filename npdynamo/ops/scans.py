"""Scan ops: cumsum, cumprod (and their nan-ignoring and array-API spellings) and diff.

A scan keeps its operand's shape along the scanned axis (``axis=None`` scans the flattened
array); its dtype is the accumulator dtype of the matching reduction. ``diff`` shortens the axis
by ``n``. All run as NumPy calls inside the graph.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions, methods
from npdynamo.ops.canonical import NO_VALUE as NO
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.reductions import _sum_dtype
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments, register
from npdynamo.ops.rules import is_py_scalar, normalize_axis, scalar_dtype, to_meta
from npdynamo.ops.symbolic import sym_max

SCANS = ("cumsum", "cumprod", "nancumsum", "nancumprod")


def _scan_rule(name: str):
    def rule(a: object, *, axis: int | None = None, dtype: np.dtype | None = None,
             include_initial: bool = False) -> ArrayMeta:
        meta = to_meta(name, a)
        out = _sum_dtype(meta.dtype) if dtype is None else dtype
        if name.startswith("cumulative"):
            if axis is None and meta.ndim > 1:
                raise ValueError(f"{name}: axis must be specified for multi-dimensional arrays.")
            if meta.ndim == 0:
                raise UnsupportedArguments(f"{name} of a 0-d value")
            ax = normalize_axis(name, 0 if axis is None else axis, meta.ndim)
            shape = list(meta.shape)
            shape[ax] += int(include_initial)
            return ArrayMeta(tuple(shape), out)
        if axis is None:
            return ArrayMeta((meta.size,), out)
        if meta.ndim == 0:  # scanned as a 1-element vector
            normalize_axis(name, axis, 1)
            return ArrayMeta((1,), out)
        normalize_axis(name, axis, meta.ndim)
        return ArrayMeta(meta.shape, out)

    return rule


def _diff_rule(a: object, *, n: int = 1, axis: int = -1, prepend: object = None,
               append: object = None) -> ArrayMeta:
    meta = to_meta("diff", a)
    if n == 0:
        raise UnsupportedArguments("diff: n=0 returns the input itself (an alias)")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n!r}")
    if meta.ndim == 0:
        raise ValueError("diff: diff requires input that is at least one dimensional")
    ax = normalize_axis("diff", axis, meta.ndim)
    shape = list(meta.shape)
    dtype = meta.dtype
    for extra in (prepend, append):
        if extra is not None:
            shape[ax] += 1
            dtype = np.result_type(dtype, scalar_dtype(extra))
    shape[ax] = sym_max(0, shape[ax] - n)  # (settled by lower bounds, e.g. of a run-time count)
    if dtype.kind != "b":
        dtype = np.subtract.resolve_dtypes((dtype, dtype, None))[-1]
    return ArrayMeta(tuple(shape), dtype)


def _scan_impl(name: str):
    fn = getattr(np, name)

    def impl(a, *, axis=None, dtype=None, include_initial=False):
        if include_initial:
            return fn(a, axis=axis, dtype=dtype, include_initial=True)
        return fn(a, axis=axis, dtype=dtype)

    return impl


def _diff(a, *, n=1, axis=-1, prepend=None, append=None):
    extra = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(a, n, axis, **extra)


_CUMULATIVE = tuple(n for n in ("cumulative_sum", "cumulative_prod") if hasattr(np, n))

# cumprod and its kin are differentiable in principle but have no VJP rule yet
# (``differentiable=False``: npdynamo.grad raises GradError)
_WITHOUT_VJP = ("cumprod", "nancumprod", *_CUMULATIVE[1:])

for _name in SCANS + _CUMULATIVE:
    register(Op(_name, _scan_impl(_name), _scan_rule(_name),
                differentiable=_name not in _WITHOUT_VJP,
                defaults={"axis": None, "dtype": None, "include_initial": False}))
register(Op("diff", _diff, _diff_rule,
            defaults={"n": 1, "axis": -1, "prepend": None, "append": None}))


# -- binders --------------------------------------------------------------------------------


def _scan_binder(name: str):
    def binder(a, axis=None, dtype=None, out=None):
        C.no_out(name, out)
        return C.canon(REGISTRY[name], [C.operand(name, a)], axis=C.int_axis(name, axis),
                       dtype=C.dtype(name, dtype))

    return binder


for _name in SCANS:
    functions(_name)(_scan_binder(_name))
methods("cumsum")(_scan_binder("cumsum"))
methods("cumprod")(_scan_binder("cumprod"))


def _cumulative_binder(name: str):
    def binder(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        C.no_out(name, out)
        return C.canon(REGISTRY[name], [C.operand(name, x)], axis=C.int_axis(name, axis),
                       dtype=C.dtype(name, dtype),
                       include_initial=C.flag(name, "include_initial", include_initial))

    return binder


for _name in _CUMULATIVE:
    functions(_name)(_cumulative_binder(_name))


def _edge(value: object) -> object:
    if value is NO:
        return None
    C.static("diff", "prepend/append", value)
    if not is_py_scalar(value) or type(value) is complex:
        raise UnsupportedArguments("diff: prepend/append other than a Python number")
    return value


@functions("diff")
def _diff_binder(a, n=1, axis=-1, prepend=NO, append=NO):
    n = C.as_index(n, "n")
    if n == 0:
        raise UnsupportedArguments("diff: n=0 returns the input itself (an alias)")
    return C.canon(REGISTRY["diff"], [C.operand("diff", a)], n=n, axis=C.as_index(axis, "axis"),
                   prepend=_edge(prepend), append=_edge(append))
