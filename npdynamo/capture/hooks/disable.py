"""Where capture is switched off: ``disable(fn)``, ``is_disabled(obj)`` and per-thread suspension.

Part of the frame hooks. ``disable`` marks a function and its code as never captured: the
translator treats a call to it as a graph break (it checks ``is_disabled``), and the region hook
neither hooks it nor anything it calls while it runs. Capture is also suspended while an entry
is being built, so user code the translator happens to run is never hooked or compiled from
inside the compiler.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Iterator
from types import CodeType, FunctionType, MethodType
from typing import TypeVar

from npdynamo.capture.hooks.dispatch import hashes_by_identity, original_function

F = TypeVar("F", bound=Callable)

_DISABLED_CODE: weakref.WeakValueDictionary[int, CodeType] = weakref.WeakValueDictionary()
_DISABLED_WRAPPERS: weakref.WeakSet[Callable] = weakref.WeakSet()
_state = threading.local()


@contextlib.contextmanager
def suspend_capture() -> Iterator[None]:
    """Inside this block (on this thread) the region hook hooks nothing and misses build nothing."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def capture_suspended() -> bool:
    """True inside ``suspend_capture()`` or a call of a disabled function, on this thread."""
    return getattr(_state, "depth", 0) > 0


def disable(fn: F) -> F:
    """Return a wrapper of ``fn`` that is never captured, nor is anything it calls in the region.

    A compiled function (a wrapper made by ``compile``) is unwrapped first, so
    ``disable(compile(f))`` runs ``f`` in plain Python.
    """
    if not callable(fn):
        raise TypeError(f"npdynamo.disable expects a callable, got {type(fn).__name__} {fn!r}")
    func = fn.__func__ if isinstance(fn, MethodType) else fn
    original = original_function(func)
    if original is not None:
        fn = MethodType(original, fn.__self__) if isinstance(fn, MethodType) else original
        func = original
    if isinstance(func, FunctionType):
        _DISABLED_CODE[id(func.__code__)] = func.__code__

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        _state.depth = getattr(_state, "depth", 0) + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _state.depth -= 1

    _DISABLED_WRAPPERS.add(disabled)
    return disabled  # type: ignore[return-value]


def is_disabled(obj: object) -> bool:
    """True for a wrapper made by ``disable``, the function it wraps, its code, or their methods."""
    if isinstance(obj, MethodType):
        obj = obj.__func__
    if isinstance(obj, CodeType):
        return _DISABLED_CODE.get(id(obj)) is obj
    if not hashes_by_identity(obj):  # never registered; hashing it could run the user's code
        return False
    try:
        if obj in _DISABLED_WRAPPERS:
            return True
    except TypeError:  # no weak reference to it can exist: never registered
        return False
    # A region-hooked function runs a trampoline; its original code carries the mark.
    original = original_function(obj)
    code = getattr(original if original is not None else obj, "__code__", None)
    return isinstance(code, CodeType) and _DISABLED_CODE.get(id(code)) is code
