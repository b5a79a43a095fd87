"""Creation ops: zeros, ones, full, the ``*_like`` family, arange, eye and linspace.

Their sizes are static parameters (canonical keywords), so a graph can build arrays without
inputs. ``full``/``full_like`` take their fill value as a data operand, which may be a graph
value. ``empty`` is deliberately absent: its contents are not deterministic.
"""

from __future__ import annotations

import math

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REQUIRED, Op, UnsupportedArguments, register
from npdynamo.ops.rules import (
    assignment_shape_check,
    check_python_int,
    check_python_scalar_assignment,
    is_py_scalar,
    operand,
    to_meta,
)
from npdynamo.ops.symbolic import SymInt, floordiv, sym_max

_FLOAT64 = np.dtype(np.float64)
_MAX_BYTES = 2**63 - 1


def _check_shape(name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimensions are not allowed, got shape {shape}")
    return shape


def _fill_check(name: str, fill: object, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """What NumPy checks when it copies ``fill`` into a new array (unsafe casting)."""
    if type(fill) is int:
        check_python_int(name, fill, dtype)
    elif not is_py_scalar(fill):
        assignment_shape_check(name, to_meta(name, fill).shape, shape)


def _filled_rule(name: str):
    def rule(*, shape: tuple[int, ...], dtype: np.dtype = _FLOAT64) -> ArrayMeta:
        return ArrayMeta(_check_shape(name, shape), dtype)

    return rule


def _full_rule(fill_value: object, *, shape: tuple[int, ...],
               dtype: np.dtype | None = None) -> ArrayMeta:
    _check_shape("full", shape)
    fill = operand("full", fill_value)
    dtype = dtype if dtype is not None else to_meta("full", fill).dtype
    _fill_check("full", fill, shape, dtype)
    return ArrayMeta(shape, dtype)


def _like_rule(name: str):
    def rule(a: object, *, dtype: np.dtype | None = None,
             shape: tuple[int, ...] | None = None) -> ArrayMeta:
        meta = to_meta(name, a)
        out_shape = meta.shape if shape is None else _check_shape(name, shape)
        return ArrayMeta(out_shape, meta.dtype if dtype is None else dtype)

    return rule


def _full_like_rule(a: object, fill_value: object, *, dtype: np.dtype | None = None,
                    shape: tuple[int, ...] | None = None) -> ArrayMeta:
    out = _like_rule("full_like")(a, dtype=dtype, shape=shape)
    _fill_check("full_like", operand("full_like", fill_value), out.shape, out.dtype)
    return out


def _arange_rule(*, start: float = 0, stop: float, step: float = 1,
                 dtype: np.dtype | None = None) -> ArrayMeta:
    bounds = (start, stop, step)
    if any(isinstance(v, SymInt) for v in bounds):
        return _symbolic_arange(start, stop, step, dtype)
    if not all(type(v) in (bool, int, float) for v in bounds):
        raise UnsupportedArguments("arange: start, stop and step must be Python ints or floats")
    try:
        # The same arithmetic NumPy does on the Python objects: true division, then ceil.
        n = max(math.ceil((stop - start) / step), 0)
    except ZeroDivisionError:
        raise ZeroDivisionError("arange: division by zero (step is 0)") from None
    except ValueError:
        raise ValueError("arange: cannot compute length") from None
    except OverflowError:
        raise ValueError("arange: Maximum allowed size exceeded") from None
    if dtype is None:
        dtype = _FLOAT64 if any(type(v) is float for v in bounds) else np.dtype(np.int_)
    if dtype.kind == "b" and n > 2:
        raise TypeError(
            "arange() is only supported for booleans when the result has at most length 2."
        )
    if n * dtype.itemsize > _MAX_BYTES:
        raise ValueError(f"arange: Maximum allowed size exceeded ({n} elements)")
    # NumPy stores the first two values from Python numbers, then extends them in `dtype`.
    for value in (start, start + step)[: min(n, 2)]:
        check_python_scalar_assignment("arange", value, dtype)
    return ArrayMeta((n,), dtype)


def _symbolic_arange(start: object, stop: object, step: object,
                     dtype: np.dtype | None) -> ArrayMeta:
    """``arange`` with a symbolic bound (``np.arange(x.shape[0])``): integer bounds and a
    constant integer step only; the length is ``ceil((stop - start) / step)``, at least 0."""
    if not all(type(v) is int or isinstance(v, SymInt) for v in (start, stop)) \
            or type(step) is not int:
        raise UnsupportedArguments(
            "arange with a symbolic size needs integer start/stop and a constant integer step")
    if step == 0:
        raise ZeroDivisionError("arange: division by zero (step is 0)")
    if dtype is not None and (dtype.kind not in "iuf" or dtype.itemsize < 8):
        # narrower dtypes check each value against their range: not known for any size
        raise UnsupportedArguments(f"arange with a symbolic size and dtype {dtype}")
    span = stop - start if step > 0 else start - stop  # type: ignore[operator]
    n = sym_max(floordiv(span + abs(step) - 1, abs(step)), 0)
    return ArrayMeta((n,), dtype or np.dtype(np.int_))


def _eye_rule(*, N: int, M: int | None = None, k: int = 0,
              dtype: np.dtype = _FLOAT64) -> ArrayMeta:
    return ArrayMeta(_check_shape("eye", (N, N if M is None else M)), dtype)


def _linspace_rule(*, start: float, stop: float, num: int = 50, endpoint: bool = True,
                   dtype: np.dtype | None = None) -> ArrayMeta:
    if not (is_py_scalar(start) and is_py_scalar(stop)):
        raise UnsupportedArguments("linspace: start and stop must be Python numbers")
    if num < 0:
        raise ValueError(f"linspace: Number of samples, {num}, must be non-negative.")
    if dtype is None:
        dtype = np.result_type(start, stop, 1.0)
    return ArrayMeta((num,), dtype)


def _zeros(*, shape, dtype=_FLOAT64):
    return np.zeros(shape, dtype)


def _ones(*, shape, dtype=_FLOAT64):
    return np.ones(shape, dtype)


def _full(fill_value, *, shape, dtype=None):
    return np.full(shape, fill_value, dtype)


def _arange(*, start=0, stop, step=1, dtype=None):
    return np.arange(start, stop, step, dtype=dtype)


_SHAPE_DTYPE = {"shape": REQUIRED, "dtype": _FLOAT64}
_LIKE = {"dtype": None, "shape": None}
#: A new array of its own (``Op`` traits), cheap enough for a backward to redo.
_NEW = {"allocates": True, "recomputable": True}

for _op in (
    Op("zeros", _zeros, _filled_rule("zeros"), differentiable=False, defaults=_SHAPE_DTYPE, **_NEW),
    Op("ones", _ones, _filled_rule("ones"), differentiable=False, defaults=_SHAPE_DTYPE, **_NEW),
    Op("full", _full, _full_rule, defaults={"shape": REQUIRED, "dtype": None}, **_NEW),
    Op("zeros_like", np.zeros_like, _like_rule("zeros_like"), differentiable=False,
       defaults=_LIKE, **_NEW, shape_only=True),
    Op("ones_like", np.ones_like, _like_rule("ones_like"), differentiable=False, defaults=_LIKE,
       **_NEW, shape_only=True),
    Op("full_like", np.full_like, _full_like_rule, defaults=_LIKE, **_NEW),
    Op("arange", _arange, _arange_rule, differentiable=False,
       defaults={"start": 0, "stop": REQUIRED, "step": 1, "dtype": None}, **_NEW),
    Op("eye", np.eye, _eye_rule, differentiable=False,
       defaults={"N": REQUIRED, "M": None, "k": 0, "dtype": _FLOAT64}, **_NEW),
    Op("linspace", np.linspace, _linspace_rule, differentiable=False,
       defaults={"start": REQUIRED, "stop": REQUIRED, "num": 50, "endpoint": True,
                 "dtype": None}, **_NEW),
):
    register(_op)
