"""Identity: whether two tracked values are one Python object, and the guards that keep the
answer true on later calls.

Part of capture, below the handlers that decide identity (``is``/``is not``, the identity
shortcut of ``in`` and of ``object.__eq__``, ``id()``). What a tracked value stands for
(``referent``) is one of:

* ``fresh``: an object the capture makes (a list or dict built, a graph array, a function made
  by MAKE_FUNCTION). It is no object that existed before, and no other object made here.
* ``read``: an object read from the frame through a source (an argument, a default, a global, a
  class or module attribute, a closure cell, an item of a container passed in):
  ``ValueBuilder.origin`` keeps the very object. Whether it is another value's object is a fact
  about this call: it is guarded, as the same object as / another object than the other's
  source (``ALIAS``/``DISTINCT``), or than a fixed object (``ID``/``NOT_ID``).
* ``fixed``: the same object on every call: a value whose source is guarded by identity (a
  function, a class, a module), a class, function or enum member reached without a source, a
  tuple constant of the code.
* ``constant``: a number, string or other immutable value the code or the capture computed.
  Whether CPython shares such objects is an implementation detail, so ``is`` between two of the
  same type is refused (answered only for the singletons None, True, False, Ellipsis,
  NotImplemented and the empty tuple).
* ``method``: a bound method, which Python makes anew on each attribute read: ``is`` between
  two of them is refused.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from npdynamo.capture.builder import is_constant
from npdynamo.capture.guards import GuardKind, Source
from npdynamo.capture.values import (
    ArrayValue,
    BoundMethodValue,
    Const,
    FunctionValue,
    GuardedConst,
    MethodValue,
    MixedScalarValue,
    TupleValue,
    Value,
)

if TYPE_CHECKING:
    from npdynamo.capture.session import CaptureContext
    from npdynamo.capture.translator import Frame

#: Objects of which CPython has exactly one: ``is`` on them is a fact about values.
SINGLETON_TYPES = (type(None), bool, type(Ellipsis), type(NotImplemented))


@dataclass(frozen=True)
class Referent:
    """What a tracked value stands for: ``kind`` (see the module text), the object itself
    (``read``, ``fixed``, ``constant``) and the source it is read from (``read``, and ``fixed``
    values guarded by identity)."""

    kind: str
    obj: object = None
    source: Source | None = None


def referent(ctx: CaptureContext, value: Value) -> Referent:
    if isinstance(value, MixedScalarValue):  # the winner of max(0.0, h): maybe h itself
        raise ctx.unsupported(f"the identity of a {value.kind()}")
    if isinstance(value, (MethodValue, BoundMethodValue)):
        return Referent("method")
    origin = ctx.builder.origin(value)
    if origin is not None:
        obj, source = origin
        if _is_bound_method(obj):
            return Referent("method")
        if source is None or ctx.guards.has(source, GuardKind.ID):
            return Referent("fixed", obj, source)
        return Referent("read", obj, source)
    if isinstance(value, Const):
        obj = value._value if isinstance(value, GuardedConst) else value.value
        if _is_bound_method(obj):
            return Referent("method")
        return Referent("constant" if is_constant(obj) else "fixed", obj)
    if isinstance(value, FunctionValue) and value.fn is not None:
        return Referent("fixed", value.fn)
    if type(value) is TupleValue and value.length() == 0:
        return Referent("constant", ())  # CPython's one empty tuple
    return Referent("fresh")


def _is_bound_method(obj: object) -> bool:
    if isinstance(obj, (types.MethodType, types.MethodWrapperType)):
        return True
    # builtin functions are BuiltinMethodType too: bound to their module, not to an object
    return isinstance(obj, types.BuiltinMethodType) and not isinstance(
        getattr(obj, "__self__", None), (types.ModuleType, type(None))
    )


def _singleton(r: Referent) -> bool:
    if r.kind == "fresh" or r.kind == "method":
        return False
    return isinstance(r.obj, SINGLETON_TYPES) or (type(r.obj) is tuple and not r.obj)


def same_object(frame: Frame, left: Value, right: Value) -> bool:
    """``left is right`` as CPython answers it; the facts the answer relies on become guards,
    or the question is refused (a graph break) where the answer is CPython's implementation
    detail."""
    ctx = frame.ctx
    a, b = referent(ctx, left), referent(ctx, right)
    if _singleton(a) or _singleton(b):
        return _against_singleton(ctx, (left, a), (right, b))
    if "method" in (a.kind, b.kind):
        # even one tracked value: two reads of ``obj.f`` share it, two objects in Python
        raise frame.unsupported(
            "`is` on a bound method: Python makes a new one each time the attribute is read"
        )
    if left is right:
        return True  # one tracked value is one object
    if "fresh" in (a.kind, b.kind):
        arrays = [isinstance(v, ArrayValue) or isinstance(r.obj, (np.ndarray, np.generic))
                  for v, r in ((left, a), (right, b))]
        if all(arrays):  # a graph array next to another array
            raise frame.unsupported(
                "`is` between a computed array and another array: NumPy may hand back its "
                "input itself (np.asarray, astype(copy=False)), which the graph does not show"
            )
        return False  # an object made here is no other object
    if "constant" in (a.kind, b.kind):
        if type(a.obj) is not type(b.obj):
            _guard_type(ctx, left, a)
            _guard_type(ctx, right, b)
            return False
        raise frame.unsupported(
            "`is` between a number or string and a constant of the code or one computed here"
        )
    return _related(ctx, a, b)


def _related(ctx: CaptureContext, a: Referent, b: Referent) -> bool:
    """Whether two existing objects are one; guarded unless both are fixed."""
    same = a.obj is b.obj
    if a.kind == "read" and b.kind == "read":
        ctx.guard(a.source, GuardKind.ALIAS if same else GuardKind.DISTINCT, b.source)
    elif a.kind == "read" or b.kind == "read":
        read, fixed = (a, b) if a.kind == "read" else (b, a)
        ctx.guard(read.source, GuardKind.ID if same else GuardKind.NOT_ID, fixed.obj)
    return same


def _against_singleton(ctx: CaptureContext, *sides: tuple[Value, Referent]) -> bool:
    """``is`` where one side is None, a bool, Ellipsis, NotImplemented or ``()``: a fact about
    the other side's type (guarded where it was read, or here for a Python number read from
    outside) and, for the same type, its value."""
    (left, a), (right, b) = sides
    if "fresh" in (a.kind, b.kind) or "method" in (a.kind, b.kind):
        return False
    if type(a.obj) is not type(b.obj):
        _guard_type(ctx, left, a)
        _guard_type(ctx, right, b)
        return False
    for value in (left, right):
        if isinstance(value, GuardedConst):
            value.value  # noqa: B018 - installs its value guard: the answer relies on it
    return a.obj is b.obj


def _guard_type(ctx: CaptureContext, value: Value, r: Referent) -> None:
    """A Python number or string read from outside is guarded on its value only when read;
    an answer that relies on its type alone guards that (other kinds are guarded on their type
    or identity where they were read)."""
    if isinstance(value, GuardedConst) and r.source is not None:
        ctx.guard(r.source, GuardKind.TYPE, type(r.obj))


def object_id(frame: Frame, value: Value) -> int:
    """``id(value)``: the address of an object read from outside (its identity is then guarded)
    or fixed; refused for an object made here, whose address only the run knows."""
    r = referent(frame.ctx, value)
    if r.kind == "read":
        frame.ctx.guard(r.source, GuardKind.ID, r.obj)
        return id(r.obj)
    if r.kind == "fixed" or _singleton(r):
        return id(r.obj)
    raise frame.unsupported(
        f"id() of a {value.kind()} made or computed inside the compiled function: its address "
        "is only known when the code runs"
    )
