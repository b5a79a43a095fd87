"""Handlers for ``import`` statements inside a captured function (IMPORT_NAME, IMPORT_FROM).

An import of a module that is already in ``sys.modules`` does no work but the lookup: CPython's
``import_name`` takes the fast path when the frame's ``__import__`` is the interpreter's own, and
``PyImport_ImportModuleLevelObject`` then returns ``sys.modules[name]`` (or its top-level package
for ``import a.b``) without running any code. So the statement is a constant under two guards:
the module found in ``sys.modules`` is the same object, and ``builtins.__import__`` is still the
builtin. Everything else (a module not imported yet, relative imports, ``__import__`` replaced, a
package whose ``from ... import name`` would import a submodule or run a module ``__getattr__``,
a module still initialising) runs code at import time and breaks the graph.
"""

from __future__ import annotations

import builtins
import sys
import types

from npdynamo.capture.calls import get_attr
from npdynamo.capture.guards import AttrSource, GuardKind, ItemSource, ModuleSource
from npdynamo.capture.registry import handler
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import Const, TupleValue, Value

#: The interpreter's own ``__import__`` (what ``import_name`` compares the frame's against).
_BUILTIN_IMPORT = builtins.__dict__["__import__"]
#: Where a guard reads ``builtins.__import__`` again.
_IMPORT_SOURCE = ItemSource(AttrSource(ModuleSource("builtins"), "__dict__"), "__import__")
_HINT = "import the module at module level"


def _frame_builtins(frame: Frame) -> object:
    """The builtins the frame's function was created with (``function.__builtins__``)."""
    fn = frame.func.fn
    if fn is not None:
        return fn.__builtins__
    found = frame.globals.get("__builtins__", builtins)
    return found.__dict__ if isinstance(found, types.ModuleType) else found


def _imported(frame: Frame, name: str) -> types.ModuleType:
    """``sys.modules[name]`` when importing it runs no code; else the graph break."""
    module = sys.modules.get(name)
    if type(module) is not types.ModuleType:
        raise frame.unsupported(
            f"`import {name}` of a module not imported yet (or not a plain module): importing "
            "it runs code", _HINT, kind="side_effect"
        )
    spec = module.__dict__.get("__spec__")
    if getattr(spec, "_initializing", False):
        raise frame.unsupported(f"`import {name}` while {name} is still initialising", _HINT)
    return module


def _fromlist(fromlist: Value) -> tuple[str, ...] | None:
    """The names of ``from m import a, b`` (() for ``import m``); None for anything else."""
    if isinstance(fromlist, Const) and fromlist.value is None:
        return ()
    if isinstance(fromlist, Const) and type(fromlist.value) is tuple:
        items = list(fromlist.value)
    elif type(fromlist) is TupleValue and all(isinstance(v, Const) for v in fromlist.items):
        items = [v.value for v in fromlist.items]
    else:
        return None
    return tuple(items) if all(type(x) is str for x in items) else None


@handler("IMPORT_NAME")
def _import_name(frame: Frame, ins):
    fromlist, level = frame.pop(), frame.pop()
    name = ins.arg
    if not (isinstance(level, Const) and level.value == 0 and type(level.value) is int):
        raise frame.unsupported("a relative import inside the function", _HINT)
    names = _fromlist(fromlist)
    if names is None:
        raise frame.unsupported("an import with an unusual fromlist", _HINT)
    if _frame_builtins(frame) is not builtins.__dict__ or (
        builtins.__dict__.get("__import__") is not _BUILTIN_IMPORT
    ):
        raise frame.unsupported("an import while builtins.__import__ is replaced", _HINT)
    ctx = frame.ctx
    module = _imported(frame, name)
    if names and hasattr(module, "__path__"):
        # a package: importlib's _handle_fromlist imports each name that is not an attribute
        missing = [x for x in names if x == "*" or x not in module.__dict__]
        if missing:
            raise frame.unsupported(
                f"`from {name} import {missing[0]}`: a name the package does not hold yet "
                "(importing it may run code)", _HINT, kind="side_effect"
            )
    ctx.guard(_IMPORT_SOURCE, GuardKind.ID, _BUILTIN_IMPORT)
    if names or "." not in name:
        frame.push(ctx.builder.wrap(module, ModuleSource(name)))
        return
    ctx.builder.wrap(module, ModuleSource(name))  # `import a.b` needs a.b in sys.modules...
    top = name.partition(".")[0]  # ...and returns a
    frame.push(ctx.builder.wrap(_imported(frame, top), ModuleSource(top)))


@handler("IMPORT_FROM")
def _import_from(frame: Frame, ins):
    module = frame.stack[-1]
    name = ins.arg
    value = module.value if isinstance(module, Const) else None
    # a plain module's attribute lookup is its __dict__; CPython's fallback to
    # sys.modules['pkg.name'] on AttributeError is not followed here
    if type(value) is not types.ModuleType or name not in value.__dict__:
        raise frame.unsupported(f"`from ... import {name}` of a name the module does not hold",
                                _HINT)
    frame.push(get_attr(frame, module, name))
