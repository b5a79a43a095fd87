"""How a NumPy signature is bound: the binder tables and the decorators that fill them.

A binder is a Python function whose signature mirrors one NumPy function or ndarray method and
which returns the canonical ``(op, args, kwargs)``. ``signatures`` and ``normalize`` define the
binders; ``normalize``'s entry points look them up here. Binding errors come out as NumPy's
``TypeError``, prefixed with the NumPy name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.canonical import NO_VALUE
from npdynamo.ops.registry import Op, UnsupportedArguments

Normalized = tuple[Op, tuple, dict]
Binder = Callable[[tuple, dict], Normalized]

FUNCTIONS: dict[Any, Binder] = {}
METHODS: dict[str, Callable[[Any, tuple, dict], Normalized]] = {}


def bound(public: str, binder: Callable[..., Normalized]) -> Binder:
    signature = inspect.signature(binder)

    def call(args: tuple, kwargs: dict) -> Normalized:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{public}() {exc}") from None
        return binder(*bound.args, **bound.kwargs)

    return call


def _numpy_functions(table: dict[Any, Binder], names: tuple[str, ...]):
    """A decorator registering its binder into ``table`` for each ``np.<name>`` this NumPy has."""

    def deco(binder):
        for name in names:
            fn = getattr(np, name, None)
            if fn is not None:
                table[fn] = bound(name, binder)
        return binder

    return deco


def functions(*names: str):
    """Register a binder for each ``np.<name>`` this NumPy has."""
    return _numpy_functions(FUNCTIONS, names)


#: Binders of NumPy functions that return a view of their operand (np.flip, np.rot90,
#: np.atleast_*d), kept out of ``FUNCTIONS``: the capture stage tracks
#: writes through views only for ops that declare it (``Op.view``); until their ops do, calling
#: these functions stays a graph break rather than risk a stale view.
VIEW_FUNCTIONS: dict[Any, Binder] = {}


def view_functions(*names: str):
    """Like ``functions``, into ``VIEW_FUNCTIONS`` (see there)."""
    return _numpy_functions(VIEW_FUNCTIONS, names)


def methods(*names: str):
    """Register a binder whose first parameter receives the array the method is called on."""

    def deco(binder):
        for name in names:
            call = bound(name, binder)
            METHODS[name] = lambda self, args, kwargs, call=call: call((self, *args), kwargs)
        return binder

    return deco


def keepdims_flag(name: str, value: object) -> bool:
    return False if value is NO_VALUE else C.flag(name, "keepdims", value)


def check_device(name: str, device: object) -> None:
    if device not in (None, "cpu"):
        raise UnsupportedArguments(f"{name}: device={device!r} is not supported")
