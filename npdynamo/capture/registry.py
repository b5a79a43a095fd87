"""The tables the translator looks things up in, filled by the modules that implement them.

A leaf of the capture package. The translator runs each instruction through ``HANDLERS`` and a
call of a builtin through ``BUILTINS`` without importing the modules that implement them: the
opcode handlers (``opcodes/``), the builtins (``builtin_calls.py``) and gradients inside a
capture (``autodiff.py``) register here when they are imported, and the capture session imports
them once (``entry.py``). So no layer below them needs to know them, and none of them imports
the translator back for anything but the ``Frame`` type.

* ``HANDLERS``: opcode name -> ``handler(frame, ins)``, registered with the Python versions it
  applies to (``@handler("NAME", since=..., until=...)``). Where an opcode's stack layout differs
  by version, the difference sits in the handler or in ``opcodes/layout.py``, so the rest of the
  translator sees one canonical call. An opcode with no handler for the running version is an
  unsupported construct (a graph break), never a crash.
* ``BUILTINS``: Python callable -> ``handler(frame, target, args, kwargs)``; ``target`` is the
  callable called (one handler serves several: ``tuple``/``list``/``set``).
* ``VALUE_CALLS``: tracked value kind -> ``call(frame, value, args, kwargs)``, for callables the
  translator models itself (a ``grad`` function).
* ``OBJECT_METHODS``: exact type of an object from outside (``np.random.Generator``) ->
  ``(attribute(frame, obj, name), call(frame, obj, name, args, kwargs))``: the methods the
  translator models on it (``random_calls.py``); either returns None for other names.
* ``VALUE_METHODS``: tracked value kind -> ``(names, call(frame, value, name, args, kwargs))``:
  the methods the translator models on a value of its own (``x[mask].sum()``: ``masked.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from npdynamo.capture.bytecode.code import PY

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

HANDLERS: dict[str, Callable] = {}
BUILTINS: dict[object, Callable] = {}
VALUE_CALLS: dict[type, Callable] = {}
OBJECT_METHODS: dict[type, tuple[Callable, Callable]] = {}
VALUE_METHODS: dict[type, tuple[frozenset, Callable]] = {}


def handler(*names: str, since=(3, 11), until=(3, 13)):
    """Register an opcode handler for ``names`` if the running Python is in [since, until]."""

    def register(fn):
        if since <= PY <= until:
            for name in names:
                HANDLERS[name] = fn
        return fn

    return register


def builtin(*targets, keywords: tuple[str, ...] | None = ()):
    """Register a handler for the callables ``targets``. ``keywords``: the keyword arguments it
    implements (``None``: any); a call passing another one is a graph break, never a dropped
    argument."""

    def register(fn):
        def checked(frame: Frame, target, args, kwargs):
            unknown = [k for k in kwargs if keywords is not None and k not in keywords]
            if unknown:
                raise frame.unsupported(
                    f"{target.__name__}() with the keyword argument {unknown[0]}= is not supported"
                )
            return fn(frame, target, args, kwargs)

        for target in targets:
            BUILTINS[target] = checked
        return fn

    return register
