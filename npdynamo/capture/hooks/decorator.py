"""The decorator's frame hook: what ``npdynamo.compile`` makes of a function, in a session.

First stage of the pipeline for decorated functions. ``compile_with(fn, session, ...)`` (called
by ``npdynamo/api.py: compile``, which makes the session) returns a compiled function whose
generated dispatcher, with ``fn``'s own signature (see ``dispatch``), serves calls from the
per-code cache (see ``cache``), which builds a new entry with the session on a miss.
"""

from __future__ import annotations

import functools
import weakref
from types import FunctionType, MethodType
from typing import Any

from npdynamo.capture.hooks.cache import (
    cache_for,
    capture_supported,
    register_alias,
    register_owner,
    warn_unsupported_python,
)
from npdynamo.capture.hooks.compiled_function import (
    CompiledFunction,
    Remake,
    make_compiled_function,
)
from npdynamo.capture.hooks.disable import is_disabled
from npdynamo.capture.hooks.dispatch import (
    make_dispatch_code,
    make_original_view,
    make_python_call,
    original_function,
    register_original,
)
from npdynamo.errors import NpdynamoError

# Each compiled function's user function (its ``__wrapped__``, which callers may overwrite).
_USER_FUNCTIONS: weakref.WeakKeyDictionary[CompiledFunction, FunctionType] = (
    weakref.WeakKeyDictionary()
)


class NotCompilable(NpdynamoError, TypeError):
    """``compile`` was given something that is not a Python function or method."""


def compile_with(obj: Any, session: Any, settings: tuple, remake: Remake) -> Any:
    """``obj`` (a function, method, staticmethod or classmethod) compiled in ``session``.

    ``session`` (``CompileSession``) holds the backend and options, bound once by the
    composition root (``npdynamo/api.py: compile``); ``settings`` are the options as the user
    gave them (what a pickled compiled function carries), ``remake`` how unpickling compiles
    again."""
    if isinstance(obj, staticmethod):
        return staticmethod(compile_with(obj.__func__, session, settings, remake))
    if isinstance(obj, classmethod):
        return classmethod(compile_with(obj.__func__, session, settings, remake))
    if isinstance(obj, MethodType) and isinstance(obj.__func__, (FunctionType, CompiledFunction)):
        return MethodType(compile_with(obj.__func__, session, settings, remake), obj.__self__)
    # compiling a compiled function: start from the user's function
    obj = _USER_FUNCTIONS.get(obj, obj) if isinstance(obj, CompiledFunction) else obj
    if not isinstance(obj, FunctionType):
        raise NotCompilable(_not_compilable_message(obj))
    if is_disabled(obj):
        return obj
    if not capture_supported():
        warn_unsupported_python()
        return obj
    if session.on_compile is not None:  # the backend's start ahead of calls, bound by api.py
        session.on_compile()
    fn = obj
    # A region-hooked function runs a trampoline; its original code is kept by its view.
    code = (original_function(fn) or fn).__code__
    view = make_original_view(fn, code)
    cache = cache_for(fn, code, session)
    miss = cache.miss_handler(view, make_python_call(fn, code))
    # The dispatcher carries fn's closure (its code lists the free variables, unused), so that
    # once the cache routes this code to Python the dispatcher can run the user's code itself.
    dispatcher = FunctionType(
        make_dispatch_code(code, cache.pairs, miss, keep_freevars=True),
        fn.__globals__,
        fn.__name__,
        fn.__defaults__,
        fn.__closure__,
    )
    dispatcher.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    functools.update_wrapper(dispatcher, fn)
    register_owner(dispatcher, cache, code)
    register_original(dispatcher, view)
    compiled = make_compiled_function(dispatcher, fn, settings, remake)
    functools.update_wrapper(compiled, fn)
    register_alias(compiled, cache)
    register_original(compiled, view)
    _USER_FUNCTIONS[compiled] = fn
    return compiled


def _not_compilable_message(obj: Any) -> str:
    if isinstance(obj, str):
        return (
            f"npdynamo.compile got the string {obj!r} where a function was expected; pass the "
            f"backend by keyword: @npdynamo.compile(backend={obj!r})."
        )
    if isinstance(obj, type):
        return (
            f"npdynamo.compile cannot compile the class {obj.__qualname__}: compile one of its "
            "methods instead (@npdynamo.compile on the def, or npdynamo.compile(obj.method))."
        )
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    message = (
        f"npdynamo.compile cannot compile {name!r} (of type {type(obj).__name__}): it compiles "
        "Python functions (def or lambda), methods, staticmethods and classmethods, whose "
        "bytecode it reads."
    )
    if any(isinstance(k.__dict__.get("__call__"), FunctionType) for k in type(obj).__mro__):
        return message + " For a callable object, compile its method: compile(obj.__call__)."
    return message + f" Call {name} from a Python function and compile that function."

