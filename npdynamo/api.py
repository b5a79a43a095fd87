"""The composition root: ``compile``, ``enable`` and ``reset``, where the stages are put together.

Above capture in the import layers (beside ``introspection`` and ``export``); ``npdynamo``
imports it on first use of one of its names. ``compile(fn, backend=..., fullgraph=...,
dynamic=...)`` checks its options once and makes one **session** (``CompileSession``, through
``capture.new_session``) with everything bound at construction: the backend, the options,
``build_entry`` (how a frame, and each resume function, is captured) and ``compile_callee`` (how
a user function called natively at a graph break is compiled: with the same backend, as a PEP 523
hook would do). The frame hook's cache is made for that session and captures through it on a
miss, as early TorchDynamo's ``optimize(backend)`` closed over ``convert_frame(backend)``:
nothing is installed into a module or filled in later.

``reset`` is the one list of what the stages forget; unpickling compiles again through
``_compile_again``/``_compile_pickled`` (a compiled function carries them, as ``REMAKE``).
"""

from __future__ import annotations

import functools
import pickle
import weakref
from collections.abc import Callable
from typing import Any

from npdynamo.backends import lookup_backend
from npdynamo.backends.registry import compile_hook
from npdynamo.capture import dynamic_dims
from npdynamo.capture.breaks.resume import CompileSession
from npdynamo.capture.bytecode.break_code import forget_break_codes
from npdynamo.capture.bytecode.generate import forget_resume_codes
from npdynamo.capture.compile_frame import new_session
from npdynamo.capture.hooks.cache import COMPILE_LOCK, forget_entries
from npdynamo.capture.hooks.compiled_function import CompiledFunction, Remake
from npdynamo.capture.hooks.decorator import compile_with
from npdynamo.capture.hooks.disable import disable
from npdynamo.capture.hooks.region import Region, unhook_all
from npdynamo.errors import InvalidArgument, user_location


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
    session = make_session(backend_fn, fullgraph, dynamic)
    settings = (backend, fullgraph, dynamic)
    if fn is None:
        return functools.partial(compile_with, session=session, settings=settings, remake=REMAKE)
    return compile_with(fn, session, settings, REMAKE)


def make_session(
    backend_fn: Callable,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    *,
    recorder: Callable | None = None,
) -> CompileSession:
    """The session of one ``compile()``. A user function called natively at one of its graph
    breaks is compiled as ``compile(fn, backend=...)`` would, in a session of its own with the
    same backend and recorder (the conformance runner records every capture this way)."""

    def compile_callee(fn: Callable) -> Any:
        callee = make_session(backend_fn, recorder=recorder)
        return compile_with(fn, callee, (backend_fn, False, None), REMAKE)

    return new_session(backend_fn, fullgraph, dynamic, recorder=recorder,
                       compile_callee=compile_callee, on_compile=compile_hook(backend_fn))


def enable(backend: str | Callable = "eager") -> Region:
    """Context manager: user functions called in the block are compiled from their 2nd call on.

    ``backend`` is a registered name or a callable; an unknown name raises ``InvalidBackend``.
    """
    return Region(make_session(lookup_backend(backend)))


#: What ``reset()`` forgets, stage by stage: compiled entries, recompile records and refusals;
#: region-hooked functions (their code restored); resume functions' and broken frames'
#: generated code; what automatic dynamic shapes learnt.
_FORGET: tuple[Callable[[], None], ...] = (
    forget_entries, unhook_all, forget_resume_codes, forget_break_codes, dynamic_dims.forget,
)


def reset() -> None:
    """Drop every compiled entry, recompile record and refusal; un-hook region-hooked functions."""
    with COMPILE_LOCK:
        for forget in _FORGET:
            forget()


# What unpickling made, so unpickling the same thing again gives the same compiled function.
_AGAIN: weakref.WeakKeyDictionary[Callable, dict[tuple, CompiledFunction]] = (
    weakref.WeakKeyDictionary()
)
_PICKLED: dict[tuple, CompiledFunction] = {}
_PICKLED_KEPT = 64  # payloads remembered; the oldest is forgotten first


def _compile_again(
    user_fn: Callable, backend: str | Callable, fullgraph: bool, dynamic: bool | None
) -> Any:
    """Unpickling: the user's function compiled with the pickled settings (once per process)."""
    key = (backend, fullgraph, dynamic)
    with COMPILE_LOCK:  # tasks of one worker may unpickle on several threads at once
        made = _AGAIN.setdefault(user_fn, {})
        if key not in made:
            made[key] = compile(user_fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
        return made[key]


def _compile_pickled(
    payload: bytes, backend: str | Callable, fullgraph: bool, dynamic: bool | None
) -> Any:
    """Unpickling a compiled function whose user function travelled by value, as ``payload``."""
    key = (payload, backend, fullgraph, dynamic)
    with COMPILE_LOCK:
        if key not in _PICKLED:
            if len(_PICKLED) >= _PICKLED_KEPT:
                del _PICKLED[next(iter(_PICKLED))]
            user_fn = pickle.loads(payload)
            _PICKLED[key] = compile(user_fn, backend=backend, fullgraph=fullgraph,
                                    dynamic=dynamic)
        return _PICKLED[key]


REMAKE = Remake(_compile_again, _compile_pickled)

__all__ = ["compile", "disable", "enable", "make_session", "reset"]
