"""The decorator entry, ``compile``: the frame hook's main entry, which sees every call.

First stage of the pipeline for decorated functions. ``compile(fn)`` returns a generated
dispatcher with ``fn``'s own signature (see ``dispatch``) that serves calls from the per-code
cache (see ``cache``) and builds a new entry with the translator on a miss.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from types import FunctionType, MethodType
from typing import Any

from npdynamo.backends import lookup_backend
from npdynamo.capture.frames.cache import (
    cache_for,
    capture_supported,
    register_alias,
    register_owner,
    warn_unsupported_python,
)
from npdynamo.capture.frames.compiled_function import (
    CompiledFunction,
    install_compile,
    make_compiled_function,
)
from npdynamo.capture.frames.disable import is_disabled
from npdynamo.capture.frames.dispatch import (
    make_dispatch_code,
    make_fallback,
    make_original_view,
    original_function,
    register_original,
)
from npdynamo.errors import InvalidArgument, NpdynamoError, user_location

# Each compiled function's user function (its ``__wrapped__``, which callers may overwrite).
_USER_FUNCTIONS: weakref.WeakKeyDictionary[CompiledFunction, FunctionType] = (
    weakref.WeakKeyDictionary()
)


class NotCompilable(NpdynamoError, TypeError):
    """``compile`` was given something that is not a Python function or method."""


def compile(
    fn: Callable | None = None,
    *,
    backend: str | Callable = "eager",
    fullgraph: bool = False,
    dynamic: bool | None = None,
) -> Any:
    """Compile ``fn``: usable as ``@compile`` and ``@compile(backend=..., fullgraph=...)``.

    Returns a compiled function (``CompiledFunction``: it calls as ``fn``, with its signature
    and metadata, binds as a method and pickles). Each call runs the first compiled
    entry whose guards accept the arguments; otherwise a new entry is captured and compiled.
    ``backend`` is a registered name or a callable ``backend(gm, example_inputs)``; an unknown
    name raises ``InvalidBackend`` here. ``fullgraph=True`` turns graph breaks into errors.
    ``dynamic``: ``None`` (shapes are specialised on the first call; a dimension that changes
    size on a later call is symbolic from then on), ``True`` (every dimension of size >= 2 is
    symbolic from the first call) or ``False`` (always specialised). ``mark_dynamic`` and
    ``mark_static`` decide for one array's dimension, whatever this says.
    """
    backend_fn = lookup_backend(backend)
    if not isinstance(fullgraph, bool):
        raise InvalidArgument(
            f"{user_location()}: npdynamo.compile(fullgraph=...) takes True or False, not "
            f"{fullgraph!r}"
        )
    if dynamic is not None and not isinstance(dynamic, bool):
        raise InvalidArgument(
            f"{user_location()}: npdynamo.compile(dynamic=...) takes None (automatic), True or "
            f"False, not {dynamic!r}"
        )
    options = {"backend": backend, "fullgraph": fullgraph, "dynamic": dynamic}
    if fn is None:
        return functools.partial(_compile, backend_fn=backend_fn, **options)
    return _compile(fn, backend_fn=backend_fn, **options)


def _compile(
    obj: Any,
    *,
    backend: str | Callable,
    backend_fn: Callable,
    fullgraph: bool,
    dynamic: bool | None,
) -> Any:
    options = {"backend": backend, "backend_fn": backend_fn, "fullgraph": fullgraph,
               "dynamic": dynamic}
    if isinstance(obj, staticmethod):
        return staticmethod(_compile(obj.__func__, **options))
    if isinstance(obj, classmethod):
        return classmethod(_compile(obj.__func__, **options))
    if isinstance(obj, MethodType) and isinstance(obj.__func__, (FunctionType, CompiledFunction)):
        return MethodType(_compile(obj.__func__, **options), obj.__self__)
    # compiling a compiled function: start from the user's function
    obj = _USER_FUNCTIONS.get(obj, obj) if isinstance(obj, CompiledFunction) else obj
    if not isinstance(obj, FunctionType):
        raise NotCompilable(_not_compilable_message(obj))
    if is_disabled(obj):
        return obj
    if not capture_supported():
        warn_unsupported_python()
        return obj
    on_compile = getattr(backend_fn, "on_compile", None)  # a backend's start ahead of calls
    if on_compile is not None:
        on_compile()
    fn = obj
    # A region-hooked function runs a trampoline; its original code is kept by its view.
    code = (original_function(fn) or fn).__code__
    view = make_original_view(fn, code)
    cache = cache_for(fn, code, backend_fn, fullgraph, dynamic)
    miss = cache.miss_handler(view, make_fallback(fn, code))
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
    compiled = make_compiled_function(dispatcher, fn, backend, fullgraph, dynamic)
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


install_compile(compile)
