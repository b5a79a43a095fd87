"""The region hook, ``enable(backend)``: capture user functions without a decorator.

Frame-hook stage for code called inside ``with npdynamo.enable():``. When a user function starts
for the first time in the block, the hook finds its function object and replaces its
``__code__`` with a generated trampoline (same parameters, same free variables) that calls the
per-code cache, exactly like a ``compile`` wrapper. Pure Python cannot replace a frame that is
already running, so:

* the first call of each function in the block runs natively, uncompiled; its later calls are
  compiled, also after the block has ended (the function stays hooked until ``reset()``);
* only functions with a source file outside the standard library, site-packages and npdynamo
  itself are hooked; never lambdas, comprehensions, generator expressions, generators,
  coroutines, code without a source file (``exec`` strings, ``<stdin>``, zip archives),
  ``disable``d functions, nor anything called while a disabled function runs;
* inside the block, calls made by compiled code (at graph breaks) are hooked like any other;
* a ``reset()`` restores every hooked function's original ``__code__``;
* the function object is found through the frame's globals (module-level functions) or, as a
  last resort, ``gc.get_referrers`` (methods, closures), which takes milliseconds on a large
  heap. A nested function re-created on each call is hooked anew for each new function object,
  up to ``MAX_INSTANCE_LOOKUPS`` times per code object; after that it is left alone;
* a closure gets a cache of its own per function object (its entries may depend on its cells);
* a hooked function's ``__code__`` is the trampoline (``inspect.getsource`` still finds the
  source); ``original_function(fn)`` returns a function running the original code.

Hooks: CPython 3.12+ uses ``sys.monitoring`` PY_START under ``OPTIMIZER_ID``, for every thread,
returning ``DISABLE`` for code it is done with (near-zero cost); if another tool holds that id,
the block runs uncompiled with a warning. CPython 3.11 uses ``sys.settrace`` on the thread that
entered the block, handling 'call' events only and passing every event on to a tracer that was
already installed (a debugger, coverage). Both are removed when the outermost block exits, also
when it raises. Nested blocks hook with the innermost block's backend.
"""

from __future__ import annotations

import gc
import logging
import os
import site
import sys
import sysconfig
import weakref
from pathlib import Path
from types import CodeType, FrameType, FunctionType
from typing import Any

from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE, CO_NESTED, CO_OPTIMIZED, PY
from npdynamo.capture.hooks.cache import (
    NpdynamoWarning,
    cache_for,
    capture_supported,
    forget_owner,
    register_owner,
    warn_unsupported_python,
    warn_user,
)
from npdynamo.capture.hooks.disable import capture_suspended, is_disabled
from npdynamo.capture.hooks.dispatch import (
    forget_original,
    is_generated_code,
    is_original_view,
    make_dispatch_code,
    make_original_view,
    make_python_call,
    original_function,
    register_original,
)

log = logging.getLogger("npdynamo.region")

MAX_INSTANCE_LOOKUPS = 8
_USE_MONITORING = PY >= (3, 12)

_sessions: list[Any] = []  # the compile session of each open block, innermost last
_installed = False
_previous_tracer: Any = None
# Keyed by id (code objects compare by value); _done keeps its code objects alive.
_done: dict[int, CodeType] = {}  # code the hook will not look at again in this region
_lookups: dict[int, int] = {}  # nested code: how many times its function objects were sought
_file_is_user: dict[str, bool] = {}
_skip_dirs: tuple[str, ...] | None = None
_HOOKED: weakref.WeakKeyDictionary[FunctionType, tuple[CodeType, CodeType]] = (
    weakref.WeakKeyDictionary()
)


class Region:
    """The context manager returned by ``enable``; re-enterable and nestable. ``session`` is the
    compile session (``CompileSession``) functions hooked in the block capture in; the
    composition root (``npdynamo/api.py: enable``) makes it with the block's backend."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._entered: list[bool] = []  # per open ``with``: did it push a session?

    def __enter__(self) -> Region:
        if not capture_supported():
            warn_unsupported_python()
            self._entered.append(False)
            return self
        _sessions.append(self.session)
        self._entered.append(True)
        if len(_sessions) == 1:
            _install()
        return self

    def __exit__(self, *exc_info: object) -> bool:
        if self._entered.pop():
            _sessions.pop()
            if not _sessions:
                _uninstall()
        return False


def _install() -> None:
    global _installed, _previous_tracer
    if _USE_MONITORING:
        monitoring = sys.monitoring
        tool = monitoring.OPTIMIZER_ID
        try:
            monitoring.use_tool_id(tool, "npdynamo")
        except ValueError:
            warn_user(
                f"npdynamo.enable(): sys.monitoring tool id {tool} (OPTIMIZER_ID) is held by "
                f"{monitoring.get_tool(tool)!r}, so this block runs uncompiled. Use "
                "@npdynamo.compile on the functions instead.",
                NpdynamoWarning,
            )
            return
        monitoring.register_callback(tool, monitoring.events.PY_START, _on_py_start)
        monitoring.set_events(tool, monitoring.events.PY_START)
        # Code disabled in an earlier region must report its next start again.
        monitoring.restart_events()
    else:
        _previous_tracer = sys.gettrace()
        sys.settrace(_trace_calls)
    _installed = True


def _uninstall() -> None:
    global _installed, _previous_tracer
    try:
        if _installed and _USE_MONITORING:
            monitoring = sys.monitoring
            tool = monitoring.OPTIMIZER_ID
            try:
                monitoring.set_events(tool, monitoring.events.NO_EVENTS)
                monitoring.register_callback(tool, monitoring.events.PY_START, None)
            finally:
                monitoring.free_tool_id(tool)
        elif _installed:
            sys.settrace(_previous_tracer)
    finally:
        _installed = False
        _previous_tracer = None
        _done.clear()
        _lookups.clear()


def _on_py_start(code: CodeType, instruction_offset: int) -> Any:
    if id(code) in _done:
        return sys.monitoring.DISABLE
    return sys.monitoring.DISABLE if _consider(code, sys._getframe(1)) else None


def _trace_calls(frame: FrameType, event: str, arg: Any) -> Any:
    code = frame.f_code
    if event == "call" and id(code) not in _done:
        _consider(code, frame)
    previous = _previous_tracer
    return previous(frame, event, arg) if previous is not None else None


def _consider(code: CodeType, frame: FrameType) -> bool:
    """Hook the function(s) running ``code`` if it qualifies; True: never look at it again."""
    if capture_suspended() or not _sessions:
        return False
    try:
        if not _qualifies(code):
            _done[id(code)] = code
            return True
        session = _sessions[-1]
        for fn in _find_functions(code, frame):
            _hook(fn, code, session)
        if code.co_flags & CO_NESTED:
            # Defined inside a function: a new function object may run this code next time.
            count = _lookups[id(code)] = _lookups.get(id(code), 0) + 1
            if count < MAX_INSTANCE_LOOKUPS:
                return False
        _done[id(code)] = code
        return True
    except Exception:  # an exception here would surface in the user's call
        log.debug("region hook failed on %s", code.co_qualname, exc_info=True)
        _done[id(code)] = code
        return True


def _qualifies(code: CodeType) -> bool:
    flags = code.co_flags
    if not flags & CO_OPTIMIZED or flags & CO_GENERATOR_LIKE:
        return False
    if code.co_name.startswith("<") or is_generated_code(code) or is_disabled(code):
        return False
    return _user_file(code.co_filename)


def _user_file(filename: str) -> bool:
    verdict = _file_is_user.get(filename)
    if verdict is None:
        # No real file (exec strings, generated code, zip archives): nothing the user wrote here.
        verdict = (
            not filename.startswith("<")
            and os.path.isfile(filename)
            and not os.path.realpath(filename).startswith(_library_dirs())
        )
        _file_is_user[filename] = verdict
    return verdict


def is_library_file(filename: str) -> bool:
    """A real file of the standard library or an installed package (not the user's code)."""
    return (not filename.startswith("<") and os.path.isfile(filename)
            and os.path.realpath(filename).startswith(_library_dirs()))


def _library_dirs() -> tuple[str, ...]:
    global _skip_dirs
    if _skip_dirs is None:
        paths = sysconfig.get_paths()
        dirs = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
        dirs += site.getsitepackages() + [site.getusersitepackages()]
        dirs.append(str(Path(__file__).resolve().parents[2]))  # the npdynamo package
        _skip_dirs = tuple({os.path.join(os.path.realpath(d), "") for d in dirs})
    return _skip_dirs


def _find_functions(code: CodeType, frame: FrameType) -> list[FunctionType]:
    candidate = frame.f_globals.get(code.co_name)
    if type(candidate) is FunctionType and candidate.__code__ is code:
        return [candidate]
    return [
        ref for ref in gc.get_referrers(code) if type(ref) is FunctionType and ref.__code__ is code
    ]


def _hook(fn: FunctionType, code: CodeType, session: Any) -> None:
    if is_disabled(fn) or original_function(fn) is not None or is_original_view(fn):
        return
    view = make_original_view(fn, code)
    cache = cache_for(fn, code, session)
    miss = cache.miss_handler(view, make_python_call(fn, code))
    trampoline = make_dispatch_code(code, cache.pairs, miss, keep_freevars=True)
    fn.__code__ = trampoline
    register_owner(fn, cache, code)
    register_original(fn, view)
    _HOOKED[fn] = (code, trampoline)
    log.debug("hooked %s", fn.__qualname__)


def unhook_all() -> None:
    """Restore every hooked function's code (part of ``npdynamo.reset()``)."""
    for fn, (code, trampoline) in list(_HOOKED.items()):
        if fn.__code__ is trampoline:
            fn.__code__ = code
        forget_owner(fn)
        forget_original(fn)
    _HOOKED.clear()
    # A reset inside an open block: restored functions must be found again on their next call.
    _done.clear()
    _lookups.clear()
    if _installed and _USE_MONITORING:
        sys.monitoring.restart_events()


def hooked_functions() -> list[FunctionType]:
    """The functions whose ``__code__`` the region hook has replaced (until ``reset()``)."""
    return list(_HOOKED.keys())

