"""The methods of a ufunc under capture: ``np.add.outer``, ``.reduce``, ``.accumulate``,
``.reduceat``, ``.at``.

Called by ``calls.call_method`` for a method of a NumPy ufunc. Each method is spelt with the
canonical ops that compute exactly what it computes, so the passes, the VJP rules and the numba
fusion treat it as they treat those ops:
- ``u.outer(A, B)`` is ``u(A.reshape(A.shape + (1,) * B.ndim), B)`` for arrays and NumPy
  scalars (NumPy converts both operands to arrays first; so a Python number, which the ufunc
  itself would take as a weak scalar, is a graph break here);
- ``u.reduce(a, axis, dtype, keepdims)`` is the reduction NumPy's own ``np.sum``/``np.prod``/
  ``np.max``/``np.min`` forward to (``add``, ``multiply``, ``maximum``, ``minimum``), with the
  method's default ``axis=0``;
- ``u.accumulate(a, axis, dtype)`` is ``np.cumsum``/``np.cumprod`` for ``add``/``multiply`` on
  arrays of at least one dimension along one int axis, ``axis=0`` by default.
Anything else (other ufuncs' reductions, ``out=``, ``initial=``, ``where=``, ``reduceat``, the
in-place ``at``) is a graph break that says why; the call then runs in Python.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import numpy as np

from npdynamo import ops
from npdynamo.capture.opcalls import normalize, normalized_op_call, op_call, raw, raw_sizes
from npdynamo.capture.values import ArrayValue, Const, Value

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

_NOT_GIVEN = object()

#: ufunc -> the NumPy function whose reduction is ``ufunc.reduce`` (NumPy forwards to it)
REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}
#: ufunc -> the NumPy function whose scan is ``ufunc.accumulate``
SCANS = {np.add: np.cumsum, np.multiply: np.cumprod}


def _reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=_NOT_GIVEN,
            where=True):
    """The signature of ``ufunc.reduce``."""


def _accumulate(array, axis=0, dtype=None, out=None):
    """The signature of ``ufunc.accumulate``."""


SIGNATURES = {"reduce": inspect.signature(_reduce), "accumulate": inspect.signature(_accumulate)}
WHY_NOT = {
    "reduceat": "np.{u}.reduceat (reductions over index ranges) has no graph op",
    "at": "np.{u}.at updates its first argument in place, element by element (repeated "
          "indices accumulate); it has no graph op",
}


def ufunc_method(frame: Frame, ufunc: np.ufunc, name: str, args: list[Value],
                 kwargs: dict[str, Value]) -> Value:
    """``ufunc.<name>(*args, **kwargs)`` as graph ops, or a graph break with the reason."""
    label = f"np.{ufunc.__name__}.{name}"
    if name == "outer":
        return _outer(frame, ufunc, label, args, kwargs)
    if name in SIGNATURES:
        try:
            bound = SIGNATURES[name].bind(*args, **kwargs)
        except TypeError:
            raise frame.unsupported(f"{label} with these arguments") from None
        bound.apply_defaults()
        given = bound.arguments
        for param, default in (("out", None), ("initial", _NOT_GIVEN), ("where", True)):
            if param in given and not _is(given[param], default):
                raise frame.unsupported(f"{label} with {param}= is not captured")
        table = REDUCTIONS if name == "reduce" else SCANS
        target = table.get(ufunc)
        array = given["array"]
        if target is None:
            raise frame.unsupported(f"{label} has no graph op (only "
                                    f"{', '.join(u.__name__ for u in table)} do)")
        if not isinstance(array, ArrayValue) or (name == "accumulate" and array.meta.ndim == 0):
            raise frame.unsupported(f"{label} of a {array.kind()}: only of a NumPy array")
        call = {"axis": given["axis"]}
        if name == "accumulate":
            axis = raw(given["axis"])
            if axis is None and array.meta.ndim == 1:
                call["axis"] = Const(0)
            elif isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
                # NumPy refuses axis=None (of 2 dimensions or more) and tuples here, where
                # cumsum would flatten
                raise frame.unsupported(f"{label} with axis={axis!r}")
        if not _is(given["dtype"], None):
            call["dtype"] = given["dtype"]
        if name == "reduce" and not _is(given["keepdims"], False):
            call["keepdims"] = given["keepdims"]
        normalized = normalize(frame, ops.normalize_call, target, (array,),
                               {k: raw(v) for k, v in call.items()})
        return normalized_op_call(frame, normalized)
    why = WHY_NOT.get(name, "np.{u}.{m} is not captured")
    raise frame.unsupported(why.format(u=ufunc.__name__, m=name), "call it outside the "
                            "compiled function, or accept the graph break")


def _outer(frame: Frame, ufunc: np.ufunc, label: str, args: list[Value],
           kwargs: dict[str, Value]) -> Value:
    if kwargs or len(args) != 2 or ufunc.nin != 2 or ufunc.nout != 1:
        raise frame.unsupported(f"{label} with these arguments")
    a, b = args
    if not (_is_array(a) and _is_array(b)):
        raise frame.unsupported(
            f"{label} of a {a.kind()} and a {b.kind()}: only of NumPy arrays and scalars "
            "(outer converts Python numbers to arrays, where the ufunc keeps them weak)")
    if _ndim(a) and _ndim(b):  # a 0-d operand broadcasts as it is
        shape = tuple(a.meta.shape) + (1,) * b.meta.ndim
        a = op_call(frame, ops.REGISTRY["reshape"], (a,), {"shape": raw_sizes(Const(shape))})
    normalized = normalize(frame, ops.normalize_call, ufunc, (raw(a), raw(b)), {})
    return normalized_op_call(frame, normalized)


def _is_array(value: Value) -> bool:
    return isinstance(value, ArrayValue) or (
        isinstance(value, Const) and isinstance(value.value, np.generic))


def _ndim(value: Value) -> int:
    return value.meta.ndim if isinstance(value, ArrayValue) else 0


def _is(value: Value, constant: object) -> bool:
    """Whether ``value`` is the Python constant ``constant`` (a default left as it is)."""
    if constant is _NOT_GIVEN:
        return value is _NOT_GIVEN
    return value is constant or (isinstance(value, Const) and value.value is constant)
