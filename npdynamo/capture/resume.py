"""Resume functions at run time: called from a broken frame, captured by the same machinery.

A ``CompileContext`` is what one compiled function's captures share: the backend, ``fullgraph``,
the resume functions' caches, and (for ``explain``) a recorder of every entry built. A broken
frame calls ``ResumeCall(cells, *stack, *locals)``; like the frame hook's dispatcher it runs the
first entry whose guards hold, or captures the resume function for these arguments (its guards and
runner take the closure cells as a leading argument, since one resume code serves every closure).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo import config
from npdynamo.capture.bytecode_gen import ResumeKey, resume_code


@dataclass
class CompileContext:
    """The shared state of one compiled function's captures."""

    backend: Callable
    fullgraph: bool = False
    recorder: Callable | None = None  # recorder(entry, fn) for explain
    resume_calls: dict = field(default_factory=dict)

    def resume_call(self, key: ResumeKey, fn_globals: dict) -> ResumeCall:
        call = self.resume_calls.get(key)
        if call is None:
            call = self.resume_calls[key] = ResumeCall(self, key, fn_globals)
        return call


_DEFAULT_CONTEXTS: dict[tuple, CompileContext] = {}


def default_context(backend: Callable, fullgraph: bool) -> CompileContext:
    """The context shared by every function compiled with this backend and ``fullgraph``."""
    key = (id(backend), fullgraph)
    context = _DEFAULT_CONTEXTS.get(key)
    if context is None or context.backend is not backend:
        context = _DEFAULT_CONTEXTS[key] = CompileContext(backend, fullgraph)
    return context


def reset_contexts() -> None:
    _DEFAULT_CONTEXTS.clear()


class ResumeCall:
    """The callable a broken frame's trampoline calls: guarded, compiled resume entries."""

    def __init__(self, context: CompileContext, key: ResumeKey, fn_globals: dict) -> None:
        self.context = context
        self.key = key
        self.code = resume_code(key)
        self.globals = fn_globals
        self.entries: list = []
        self.limit_warned = False
        self.__name__ = self.code.co_name

    def function(self, cells: tuple) -> types.FunctionType:
        return types.FunctionType(self.code, self.globals, self.code.co_name, None, cells or None)

    def __call__(self, cells: tuple, *args):
        for entry in self.entries:
            if entry.check(cells, *args):
                return entry.run(cells, *args)
        return self.miss(cells, args)

    def miss(self, cells: tuple, args: tuple):
        from npdynamo.capture.entry import build_entry

        if len(self.entries) >= config.cache_size_limit:
            if not self.limit_warned:
                self.limit_warned = True
                reason = self.entries[0].miss_reason(cells, *args) if self.entries else ""
                warnings.warn(
                    f"npdynamo: the code after a graph break in {self.key.code.co_qualname} "
                    f"({self.key.code.co_filename}) reached npdynamo.config.cache_size_limit "
                    f"({config.cache_size_limit}) compiled entries; further cases run in Python. "
                    f"Last reason: {reason}. Raise npdynamo.config.cache_size_limit to allow more.",
                    stacklevel=3,
                )
            return self.function(cells)(*args)
        entry = build_entry(
            self.function(cells),
            args,
            backend=self.context.backend,
            fullgraph=self.context.fullgraph,
            context=self.context,
            cells_as_argument=True,
        )
        self.entries.append(entry)
        return entry.run(cells, *args)


def _register_reset() -> None:
    from npdynamo.capture.frames.cache import on_reset

    on_reset(reset_contexts)


_register_reset()
