"""Resume functions at run time: called from a broken frame, captured by the same machinery.

A ``CompileContext`` is what one compiled function's captures share: the backend, ``fullgraph``,
the resume functions' caches, and (for ``explain``) a recorder of every entry built. A broken
frame hands over to ``ResumeCall(cells, *stack, *locals)``; like the frame hook's dispatcher it
runs the first entry whose guards hold, or captures the resume function for these arguments (its
guards and runner take the closure cells as a leading argument, since one resume code serves every
closure).

The hand-over is a trampoline, so a loop with a break costs no stack depth per iteration: a
function's own broken frame calls ``drive(resume, ...)``, which keeps calling while the result is
a ``TailCall``; a resume function's broken frame returns ``TailCall(resume, ...)`` instead of
calling. The generated hand-over sits after all original code, outside every try range, so
returning instead of calling changes no exception handling.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from npdynamo import config
from npdynamo.capture.builder import LOOP_ITERATOR_TYPES
from npdynamo.capture.bytecode_gen import ResumeKey, forget_resume_codes, resume_code
from npdynamo.capture.frames.cache import (
    COMPILE_LOCK,
    RecompileLimitWarning,
    on_reset,
    warn_user,
)
from npdynamo.capture.frames.disable import capture_suspended, suspend_capture


@dataclass
class CompileContext:
    """The shared state of one compiled function's captures."""

    backend: Callable
    fullgraph: bool = False
    recorder: Callable | None = None  # recorder(entry, fn) for explain
    resume_calls: dict = field(default_factory=dict)
    #: ``compile(dynamic=...)``: which input dimensions become symbolic (``dynamic_dims``)
    dynamic: bool | None = None

    def resume_call(self, key: ResumeKey, fn_globals: dict) -> ResumeCall:
        # code objects compare by value: equal code in another module has other globals
        call = self.resume_calls.get((key, id(fn_globals)))
        if call is None:
            call = self.resume_calls[key, id(fn_globals)] = ResumeCall(self, key, fn_globals)
        return call


class TailCall(partial):
    """What a resume function's broken frame returns: ``TailCall(call, *args)`` — call
    ``call(*args)`` next, in my place. A ``partial`` so that making and calling one runs no
    Python code (it is made once per hand-over); its own class, so no user value is one."""

    __slots__ = ()


def drive(call: Callable, *args):
    """Run a resume chain from a function's own frame: no stack growth per resume."""
    result = call(*args)
    while type(result) is TailCall:
        result = result()
    return result


_DEFAULT_CONTEXTS: dict[tuple, CompileContext] = {}


def default_context(
    backend: Callable, fullgraph: bool, dynamic: bool | None = None
) -> CompileContext:
    """The context shared by every function compiled with these settings."""
    key = (id(backend), fullgraph, dynamic)
    context = _DEFAULT_CONTEXTS.get(key)
    if context is None or context.backend is not backend:
        context = _DEFAULT_CONTEXTS[key] = CompileContext(backend, fullgraph, dynamic=dynamic)
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
        self.pairs: list = []  # (check, run) of each entry: the hot loop reads only these
        self.python_only: str | None = None  # why this resume point runs in Python for good
        #: step loop iterators natively (set once a loop came back here: it breaks every time)
        self.opaque_iterators = False
        self.__name__ = self.code.co_name
        self.arity = sum(kind == "V" for kind in key.stack) + len(key.locals)
        #: what the broken frames' hand-overs call (``dispatch(cells, *args)``): the entries'
        #: checks and runners unrolled into one generated function, rebuilt when they change
        self.dispatch: Callable = self._dispatcher()

    def function(self, cells: tuple) -> types.FunctionType:
        return types.FunctionType(self.code, self.globals, self.code.co_name, None, cells or None)

    def __call__(self, cells: tuple, *args):
        return self.dispatch(cells, *args)

    def _dispatcher(self) -> Callable:
        """``dispatch(C, a0, a1, ...)``: the first entry whose guards hold runs, else ``miss``.
        Fixed arity and inlined runners: this runs once per hand-over, in every loop
        iteration that breaks, so each Python call it saves counts."""
        params = "".join(f", a{i}" for i in range(self.arity))[2:]
        args = f"C, {params}" if params else "C"
        env: dict = {"miss": self.miss}
        lines = [f"def dispatch({args}):"]
        for i, (check, run) in enumerate(self.pairs):
            env[f"check{i}"] = check
            lines.append(f"    if check{i}({args}):")
            parts = getattr(run, "shared_parts", None)
            if parts is None:
                env[f"run{i}"] = run
                lines.append(f"        return run{i}({args})")
                continue
            env[f"shared{i}"], env[f"fallback{i}"], env[f"failed{i}"] = parts
            lines += [
                "        try:",
                f"            return shared{i}({params})",
                f"        except failed{i}:",
                f"            return fallback{i}({args})",
            ]
        lines.append(f"    return miss(C, ({params}{',' if params else ''}))")
        exec(compile("\n".join(lines), f"<npdynamo-dispatch-{self.code.co_name}>", "exec"), env)
        return env["dispatch"]

    def miss(self, cells: tuple, args: tuple):
        """Capture an entry for these arguments and run it; past the limit, run Python.

        The same policy as the frame cache (``frames/cache.py``): captures hold the compile
        lock and look again once they have it (another thread may have built the entry), and
        the cache limit routes this resume point to Python for good (``python_only``)."""
        if self.python_only is not None or capture_suspended():
            return self.function(cells)(*args)
        with COMPILE_LOCK:
            run = self._find(cells, args)
            if run is None:
                with suspend_capture():
                    run = self._compile(cells, args)
        return run(cells, *args)

    def _find(self, cells: tuple, args: tuple) -> Callable | None:
        for check, run in self.pairs:
            if check(cells, *args):
                return run
        return None

    def _compile(self, cells: tuple, args: tuple) -> Callable:
        from npdynamo.capture.entry import build_entry

        if not self.opaque_iterators and _loops_back(args, self.entries):
            # a loop that breaks in its body came back: an entry per remaining item count
            # would recompile every iteration, so its iterator is stepped natively from now on
            self.opaque_iterators = True
            self.entries.clear()
            self.pairs.clear()
            self.dispatch = self._dispatcher()
        if len(self.entries) >= config.cache_size_limit:
            self._route_to_python(cells, args)
            return lambda cells, *args: self.function(cells)(*args)
        entry = build_entry(
            self.function(cells),
            args,
            backend=self.context.backend,
            fullgraph=self.context.fullgraph,
            context=self.context,
            cells_as_argument=True,
            opaque_iterators=self.opaque_iterators,
        )
        self.entries.append(entry)
        self.pairs.append((entry.check, entry.run))
        self.dispatch = self._dispatcher()
        return entry.run

    def _route_to_python(self, cells: tuple, args: tuple) -> None:
        try:
            reason = self.entries[0].miss_reason(cells, *args) if self.entries else ""
        except Exception as exc:  # a reason is diagnostics: never fail the user's call for it
            reason = f"a guard failed (its reason could not be computed: {exc!r})"
        self.python_only = reason
        self.pairs.clear()
        self.dispatch = self._dispatcher()
        note = getattr(self.context.recorder, "python_from_now_on", None)
        if note is not None:
            note(self.code.co_name, f"cache_size_limit reached, later cases run in "
                 f"Python (last reason: {reason})")
        warn_user(
            f"npdynamo: the code after a graph break in {self.key.code.co_qualname} "
            f"({self.key.code.co_filename}) reached npdynamo.config.cache_size_limit "
            f"({config.cache_size_limit}) compiled entries; from now on it runs as plain "
            f"Python. Last reason: {reason}. Raise npdynamo.config.cache_size_limit (then call "
            "npdynamo.reset()) to allow more.",
            RecompileLimitWarning,
        )


#: Loops with more items left than this are not unrolled by a resume function even once.
UNROLL_ITEMS_LIMIT = 2000


def _loops_back(args: tuple, entries: list) -> bool:
    loops = [a for a in args if type(a) in LOOP_ITERATOR_TYPES]
    if not loops:
        return False
    return bool(entries) or any(operator.length_hint(a) > UNROLL_ITEMS_LIMIT for a in loops)


on_reset(reset_contexts)
on_reset(forget_resume_codes)
