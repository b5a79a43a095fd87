"""``CompiledFunction``: the object ``compile`` returns, which calls, binds and travels.

Part of the frame hooks, between ``compile`` (which builds it) and the generated dispatcher (which
every call runs). A plain function object cannot say how it pickles (``pickle`` always saves a
function as a reference to ``module.qualname``, and ``fast = compile(f)`` is not ``module.f``), so
the compiled function is an object of its own whose class carries the dispatcher as ``__call__``:
a call costs one slot lookup more than calling the dispatcher itself, and nothing else changes.

Pickling (``pickle``, ``cloudpickle``, ``copy``):

* a compiled function that *is* ``module.qualname`` (decorated at module level) pickles as that
  reference, as any function does;
* any other (assigned ``fast = compile(f)``, or defined in ``__main__`` under ``cloudpickle``)
  pickles as "compile the user's function again with these settings": the user's function goes
  by reference (or by value, where ``cloudpickle`` decides so) and the settings by value. The
  backend travels by its registered name, or as the callable the user passed.

Unpickled in another process, it captures again there (entries hold compiled graphs, guards and
kernels, none of which travel); numba kernels come from the shared on-disk kernel cache.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import CodeType, FunctionType, MethodType
from typing import Any, NamedTuple


class Remake(NamedTuple):
    """How unpickling compiles a user's function again, given by the composition root
    (``npdynamo/api.py``), which owns ``compile``: ``again(user_fn, *settings)`` and, for a
    user function that travelled by value, ``pickled(payload, *settings)``. Both are module
    functions, so pickle saves them by reference."""

    again: Callable[..., Any]
    pickled: Callable[..., Any]


class CompiledFunction:
    """A compiled function: call it as the user's function, bind it as a method, pickle it.

    Each compiled function has a class of its own (a subclass of this one) whose ``__call__`` is
    its dispatcher, so a call goes straight into generated dispatching code. ``__wrapped__`` is
    the user's function; ``functools.update_wrapper`` copied its name, docstring and module.
    """

    __npdynamo_dispatcher__: FunctionType
    __wrapped__: FunctionType

    def __init__(self, user_fn: FunctionType, settings: tuple, remake: Remake) -> None:
        self.__wrapped__ = user_fn
        self._npdynamo_settings = settings  # (backend as given, fullgraph, dynamic)
        self._npdynamo_remake = remake

    @property
    def __signature__(self) -> inspect.Signature:
        # Without it ``inspect`` takes an object with ``__get__`` for a builtin descriptor.
        return inspect.signature(type(self).__npdynamo_dispatcher__)

    @property
    def __code__(self) -> CodeType:
        """The code a call runs: the dispatcher's, or the user's once routed to plain Python."""
        return type(self).__npdynamo_dispatcher__.__code__

    @property
    def __defaults__(self) -> tuple | None:
        return type(self).__npdynamo_dispatcher__.__defaults__

    @property
    def __kwdefaults__(self) -> dict | None:
        return type(self).__npdynamo_dispatcher__.__kwdefaults__

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        # A function defined in a class binds to its instances; so does a compiled one.
        return self if obj is None else MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<npdynamo compiled function {self.__qualname__} at {id(self):#x}>"

    def __copy__(self) -> CompiledFunction:
        return self  # as for functions: a copy would be the same function

    def __deepcopy__(self, memo: dict) -> CompiledFunction:
        return self

    def __reduce__(self) -> str | tuple:
        settings = self._npdynamo_settings
        user_fn = self.__wrapped__
        found = _lookup(sys.modules.get(self.__module__), self.__qualname__)
        cloudpickle = _active_cloudpickle()
        in_main = self.__module__ == "__main__"
        if found is self and not (in_main and cloudpickle is not None):
            return self.__qualname__  # pickle saves it as ``module.qualname``, like a function
        if cloudpickle is not None and (in_main or found is not user_fn) and self not in _PACKING:
            # ``user_fn`` goes by value: pickled once here, so that every task unpickling these
            # bytes in a worker gets one compiled function (and captures once), not one each
            _PACKING.add(self)
            try:
                payload = cloudpickle.dumps(user_fn)
            finally:
                _PACKING.discard(self)
            return (self._npdynamo_remake.pickled, (payload, *settings))
        return (self._npdynamo_remake.again, (user_fn, *settings))


def make_compiled_function(
    dispatcher: FunctionType, user_fn: FunctionType, settings: tuple, remake: Remake
) -> CompiledFunction:
    """The compiled function calling ``dispatcher``: ``user_fn`` compiled with ``settings``
    (``(backend, fullgraph, dynamic)`` as the user gave them), unpickled through ``remake``."""
    kind = type(
        "CompiledFunction",
        (CompiledFunction,),
        {
            # a staticmethod: the call reaches the dispatcher without ``self``
            "__call__": staticmethod(dispatcher),
            "__npdynamo_dispatcher__": dispatcher,
            "__module__": CompiledFunction.__module__,
            "__qualname__": CompiledFunction.__qualname__,
        },
    )
    return kind(user_fn, settings, remake)


def dispatcher_of(obj: object) -> FunctionType | None:
    """The dispatcher behind a compiled function (or its bound method), else ``None``."""
    if isinstance(obj, MethodType):
        obj = obj.__func__
    return type(obj).__npdynamo_dispatcher__ if isinstance(obj, CompiledFunction) else None


def _lookup(module: object, qualname: str) -> object:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _active_cloudpickle() -> Any:
    """The ``cloudpickle`` module when it is the pickler running now, else ``None``.

    ``cloudpickle`` moves ``__main__`` functions by value; a compiled function from ``__main__``
    then travels with its user function, not as a ``__main__`` reference that another process (a
    Dask worker) cannot resolve."""
    module = sys.modules.get("cloudpickle")
    if module is None:
        return None
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").partition(".")[0] == "cloudpickle":
            return module
        frame = frame.f_back
    return None


# Compiled functions whose user function is being pickled by value right now (it may name them).
_PACKING: set[CompiledFunction] = set()
