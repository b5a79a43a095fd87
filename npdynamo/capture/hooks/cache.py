"""Per-code-object cache of compiled entries, the recompilation limit and the compile lock.

Part of the frame hooks, between the generated dispatchers (which read ``FrameCache.pairs``) and
the capture stage (the ``build_entry`` of the session a cache is made for, called on a miss).
``EntryCache`` holds the policy below; resume functions' caches share it. A cache belongs to one
code object and one ``(backend, fullgraph, dynamic)`` setting; functions without a closure share
it, a closure gets its own (its entries may depend on its cells, which guards do not see). The
session (``CompileSession``, made per ``compile()`` by the composition root, ``npdynamo/api.py``)
is opaque here: this layer reads its settings and calls its ``build_entry``.

On a miss the first entry's ``miss_reason`` is recorded as the recompile reason (logged on
``npdynamo.recompiles``), a new entry is built, appended and run.

The limit is a final decision. The first call that misses once the cache holds
``config.cache_size_limit`` entries works out its reason (once), logs it, warns once
(``RecompileLimitWarning``) and routes the code object to Python for good, until ``reset()``:
every front serving the cache (a decorator's dispatcher, a region-hooked function) gets the
user's original code as its ``__code__``, so later calls run exactly as plain Python, with no
dispatcher, guard or miss handler in between. The entries stay in ``entries`` for ``explain``
and inspection, but nothing iterates them (``pairs`` is emptied). Why not keep serving the
entries that match: a call that matches none would still run every entry's guard function
before reaching Python (microseconds for 8 entries, several times a tiny function's cost), and a
function that needed more than ``cache_size_limit`` specialisations keeps changing what its
guards see; a predictable plain-Python speed is worth more than the chance of a hit. Raising the
limit takes effect for code objects not yet routed, and for all after ``reset()``.

Captures are serialised by one process-wide re-entrant lock (the translator's tables are not
made for concurrent use). A thread that misses waits for the lock, then checks the entries again
before capturing, so concurrent first calls with the same inputs build one entry and all run it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from types import CodeType, FunctionType, MethodType
from typing import Any

from npdynamo import config
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE, PY, SUPPORTED_PYTHON, python_supported
from npdynamo.capture.hooks.disable import capture_suspended, suspend_capture
from npdynamo.capture.hooks.dispatch import EntryList, is_generated_code, original_function
from npdynamo.errors import (  # noqa: F401 - NpdynamoWarning: hooks re-exports it
    NpdynamoWarning,
    RecompileLimitWarning,
    Unsupported,
    UnsupportedPythonWarning,
)

recompiles_log = logging.getLogger("npdynamo.recompiles")
graph_breaks_log = logging.getLogger("npdynamo.graph_breaks")

# Module attribute, not a constant, so tests can pretend to run on another version.
_python = PY
_python_warned = False


def capture_supported() -> bool:
    """True when the running CPython is one whose bytecode npdynamo understands."""
    return python_supported(_python)


_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "")


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn, attributing the warning to the first caller outside npdynamo and its generated code."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR) or is_generated_code(frame.f_code)
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


def warn_unsupported_python() -> None:
    """Warn once per process that nothing will be compiled on this Python."""
    global _python_warned
    if _python_warned:
        return
    _python_warned = True
    supported = ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED_PYTHON)
    warn_user(
        f"npdynamo captures CPython {supported} bytecode only; this is Python "
        f"{_python[0]}.{_python[1]}, so compiled functions and npdynamo.enable() regions run "
        "as plain, uncompiled Python.",
        UnsupportedPythonWarning,
    )


def describe_code(code: CodeType) -> str:
    """``qualname (file:line)``: how messages name a function."""
    return f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"


#: Held while an entry is built, by every cache (captures are not made for concurrent use).
COMPILE_LOCK = threading.RLock()


_FROZEN_AT_IMPORT = gc.get_freeze_count()


@contextlib.contextmanager
def gc_paused():
    """The garbage collector paused while a miss looks up and captures an entry: a capture
    allocates many objects that live on (values, graphs, decoded bytecode), so CPython's
    collector would run often (on every allocation under ``gc.set_threshold(1)``, with the
    user's ``gc.callbacks`` each time) and now and then walk the user's whole heap. Nothing of
    the user's runs in between. At the end the capture's own cycles, which still hold the
    user's objects it saw, are freed, so an object dies where Python frees it; they are all
    young (nothing was collected meanwhile): a cheap pass. The user's objects are frozen out of
    that pass: it would untrack their young tuples of atoms, which Python's next collection
    does only later (3.13 test_itertools.test_pairwise_result_gc: ``gc.is_tracked(next(it))``
    after a break was False); unfrozen, they join the oldest generation."""
    if not gc.isenabled():
        yield
        return
    # objects the user froze (after importing npdynamo) would be unfrozen with ours: then the
    # pass sees everything. 3.12 starts with a few hundred of its own frozen.
    freeze = gc.get_freeze_count() in (0, _FROZEN_AT_IMPORT)
    if freeze:
        gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
        if freeze:
            gc.unfreeze()


class EntryCache:
    """Compiled entries of one code object, tried in order, and the policy every cache shares.

    A miss takes the compile lock and looks again once it has it (another thread may have built
    the entry), records and logs why the first entry missed, and captures a new entry. At
    ``config.cache_size_limit`` entries the decision is final: the reason is worked out once,
    logged, warned once, and the code runs as plain Python until ``reset()``. The frame hook's
    ``FrameCache`` and a resume point's ``ResumeCall`` are the two kinds."""

    def __init__(self, code: CodeType) -> None:
        self.code = code
        self.pairs = EntryList()  # (check, run) per entry, iterated by the dispatchers
        self.entries: list[Any] = []
        #: why calls now run as plain Python (the limit or a refusal); final until ``reset()``
        self.python_only: str | None = None
        self.limit_warned = False

    def describe(self) -> str:
        """How messages name the code this cache serves."""
        return f"function {describe_code(self.code)}"

    def changed(self) -> None:
        """``pairs`` changed (a subclass regenerates code that inlines them)."""

    def run_or_capture(
        self, python: Callable[..., Any], args: tuple, build: Callable[[tuple], Any],
        run: bool = True,
    ) -> Any:
        """Run the entry ``build(args)`` captures for ``args``, or ``python`` (plain Python).
        With ``run=False``, return what would run instead: a caller that passes the arguments
        on itself keeps no tuple of them alive while they run."""
        if self.python_only is not None or capture_suspended():
            chosen = python
        else:
            with COMPILE_LOCK, gc_paused():
                chosen = self.lookup(args)
                if chosen is None:
                    # Nothing the guards or the translator call may be hooked or compiled
                    # meanwhile.
                    with suspend_capture():
                        try:
                            chosen = self._compile(args, build)
                        except RecursionError:
                            # the capture ran out of stack (deep user code, or a lowered
                            # sys.setrecursionlimit): this call runs in Python, as written
                            chosen = None
                    chosen = chosen or python
        return chosen(*args) if run else chosen

    def lookup(self, args: tuple) -> Callable | None:
        """The runner of the first entry whose guards hold for ``args``."""
        for check, run in self.pairs:
            if check(*args):
                return run
        return None

    def runner(self, entry: Any) -> Callable[..., Any]:
        """What runs the calls ``entry`` accepts: its ``run`` (``FrameCache``: see there)."""
        return entry.run

    def _compile(self, args: tuple, build: Callable[[tuple], Any]) -> Callable[..., Any] | None:
        """The runner of a new entry built for ``args`` (None: the call runs in Python)."""
        if self.python_only is not None:
            return None
        limit = config.cache_size_limit
        reason = self._miss_reason(args)
        if len(self.entries) >= limit:
            message = self._limit_message(limit, reason)
            recompiles_log.info("%s", message)
            if not self.limit_warned:
                self.limit_warned = True
                warn_user(message, RecompileLimitWarning)
            self.route_to_python(f"cache_size_limit ({limit}) reached; last reason: {reason}")
            return None
        if reason is not None:
            _REASONS.setdefault(id(self.code), (self.code, []))[1].append(reason)
            recompiles_log.info("Recompiling %s\n    triggered by: %s", self.describe(), reason)
        entry = build(args)
        if entry is None:
            return None
        run = self.runner(entry)
        self.entries.append(entry)
        self.pairs.append((entry.check, run))
        self.changed()
        return run

    def route_to_python(self, why: str) -> None:
        """From now until ``reset()`` every call of this code runs as plain Python."""
        self.python_only = why
        self.pairs.clear()  # a dispatcher already running goes straight to its miss handler
        self.changed()

    def clear(self) -> None:
        """Drop every entry and forget refusals and warnings (``reset()``)."""
        self.pairs.clear()
        self.entries.clear()
        self.python_only = None
        self.limit_warned = False
        self.changed()

    def _miss_reason(self, args: tuple) -> str | None:
        if not self.entries:
            return None
        try:
            return self.entries[0].miss_reason(*args)
        except Exception as exc:  # a reason is diagnostics: never fail the user's call for it
            return f"a guard failed (its reason could not be computed: {exc!r})"

    def _limit_message(self, limit: int, reason: str | None) -> str:
        return (
            f"npdynamo: {self.describe()} reached npdynamo.config.cache_size_limit ({limit}) "
            "compiled entries. It keeps being recompiled, so from now on it runs as plain "
            "Python (its compiled entries are kept for inspection only). "
            f"Last recompile reason: {reason or 'none recorded'}. "
            "To allow more entries, raise npdynamo.config.cache_size_limit (then call "
            "npdynamo.reset() to compile it again); to see every reason, enable the "
            "'npdynamo.recompiles' logger (NPDYNAMO_LOGS=recompiles)."
        )


class FrameCache(EntryCache):
    """The entries of one code object for one backend, ``fullgraph`` and ``dynamic`` setting.

    ``session`` is the compile session it was made for (``capture/breaks/resume.py:
    CompileSession``): a miss captures through its ``build_entry``, and its resume functions'
    caches live in it."""

    def __init__(self, code: CodeType, session: Any) -> None:
        super().__init__(code)
        self.session = session
        self.backend: Callable = session.backend
        self.fullgraph: bool = session.fullgraph
        #: which input dimensions become symbolic (``dynamic_dims``)
        self.dynamic: bool | None = session.dynamic
        self.refused: str | None = None  # why the translator refused this code, if it did
        # front function -> (its dispatching code, the code it runs once routed to Python)
        self._fronts: weakref.WeakKeyDictionary[FunctionType, tuple[CodeType, CodeType]] = (
            weakref.WeakKeyDictionary()
        )

    def add_front(self, front: FunctionType, python_code: CodeType) -> None:
        """``front`` (running dispatching code now) serves this cache; ``python_code`` is the
        user's code with the same parameters and free variables, run once routed to Python."""
        if (front.__code__.co_flags ^ python_code.co_flags) & CO_GENERATOR_LIKE:
            # A generator's code in a plain function is deprecated (3.13): such a front keeps
            # dispatching, to an empty ``pairs``, and its miss handler runs the user's code in
            # Python.
            return
        self._fronts[front] = (front.__code__, python_code)
        if self.python_only is not None:
            front.__code__ = python_code

    def clear(self) -> None:
        if self.python_only is not None:  # the fronts this cache routed dispatch again
            for front, (dispatching, python_code) in list(self._fronts.items()):
                if front.__code__ is python_code:
                    front.__code__ = dispatching
        super().clear()
        self.refused = None

    def runner(self, entry: Any) -> Callable[..., Any]:
        """A frame's entry whose graph waits for its compiled tier may run the frame as plain
        Python meanwhile (``CompiledEntry.serve``); its pair gets ``entry.run`` back at the
        switch. (Resume functions' entries keep ``run``: their runners own their arguments.)"""
        return entry.serve(functools.partial(self._rebind, entry.check))

    def _rebind(self, check: Callable[..., bool], run: Callable[..., Any]) -> None:
        for i, pair in enumerate(self.pairs):
            if pair[0] is check:
                if pair[1] is not run:
                    self.pairs[i] = (check, run)
                    self.changed()
                return

    def miss_handler(self, fn: FunctionType, python: FunctionType) -> Callable[..., Any]:
        """What a dispatcher calls when no entry accepts its frame arguments."""
        return functools.partial(self.miss, fn, python)

    def miss(self, fn: FunctionType, python: FunctionType, *frame_args: Any) -> Any:
        """Compile an entry for ``frame_args`` and run it, or run ``python`` in Python."""
        return self.run_or_capture(python, frame_args, functools.partial(self._build, fn))

    def _build(self, fn: FunctionType, frame_args: tuple) -> Any:
        try:
            return self.session.build_entry(
                fn, frame_args, backend=self.backend, fullgraph=self.fullgraph,
                dynamic=self.dynamic, context=self.session,
            )
        except Unsupported as exc:
            # build_entry turns what a graph cannot hold into graph breaks; it raises only
            # under fullgraph=True, or when the frame cannot be captured at all.
            if self.fullgraph:
                raise
            self.refused = str(exc)
            graph_breaks_log.info(
                "Not capturing %s, it runs in Python: %s", describe_code(self.code), exc
            )
            self.route_to_python(f"not capturable: {exc}")
            return None

    def route_to_python(self, why: str) -> None:
        super().route_to_python(why)
        for front, (dispatching, python_code) in list(self._fronts.items()):
            if front.__code__ is dispatching:
                front.__code__ = python_code


_SHARED: dict[tuple, FrameCache] = {}
_PER_FUNCTION: weakref.WeakKeyDictionary[FunctionType, dict[tuple, FrameCache]] = (
    weakref.WeakKeyDictionary()
)
_ALL: weakref.WeakSet[FrameCache] = weakref.WeakSet()
_OWNERS: weakref.WeakKeyDictionary[object, FrameCache] = weakref.WeakKeyDictionary()
# Keyed by id (code objects compare by value); the code is kept so the id stays its own.
_REASONS: dict[int, tuple[CodeType, list[str]]] = {}


def cache_for(fn: FunctionType, code: CodeType, session: Any) -> FrameCache:
    """The cache serving calls of ``fn`` (whose original code is ``code``) compiled in
    ``session``. Sessions with the same settings share it, as compiling a function twice with
    the same settings shares its entries; it captures through the first one's ``build_entry``."""
    # The cache holds the backend, so its id stays valid while the key exists.
    options = (id(session.backend), session.fullgraph, session.dynamic)
    with COMPILE_LOCK:  # region hooks may run on several threads at once
        if fn.__closure__ is None:
            table, key = _SHARED, (id(code), *options)
        else:
            table, key = _PER_FUNCTION.setdefault(fn, {}), options
        cache = table.get(key)
        if cache is None:
            cache = table[key] = FrameCache(code, session)
            _ALL.add(cache)
        return cache


def register_owner(front: FunctionType, cache: FrameCache, python_code: CodeType) -> None:
    """Record that calls of ``front`` (a dispatcher or hooked function) are served by ``cache``;
    ``python_code`` is what ``front`` runs once the cache routes its code object to Python."""
    _OWNERS[front] = cache
    cache.add_front(front, python_code)


def register_alias(alias: object, cache: FrameCache) -> None:
    """Record that ``alias`` (a compiled function object, whose dispatcher is its front) is served
    by ``cache``, for ``cache_of`` and ``compiled_entries``."""
    _OWNERS[alias] = cache


def forget_owner(front: FunctionType) -> None:
    """Undo ``register_owner`` (the region hook restored ``front``'s code)."""
    _OWNERS.pop(front, None)


def cache_of(obj: object) -> FrameCache | None:
    """The cache behind a compiled function or a region-hooked function, if any."""
    if isinstance(obj, MethodType):
        obj = obj.__func__
    try:
        return _OWNERS.get(obj)
    except TypeError:
        return None


def compiled_entries(obj: object) -> list[Any]:
    """The compiled entries currently serving ``obj`` (a compiled or region-hooked function)."""
    cache = cache_of(obj)
    return list(cache.entries) if cache is not None else []


def recompile_reasons(obj: object) -> list[str]:
    """Every recompile reason recorded for ``obj``'s code since the last ``reset()``."""
    if isinstance(obj, MethodType):
        obj = obj.__func__
    original = original_function(obj)
    if original is not None:
        obj = original
    code = obj if isinstance(obj, CodeType) else getattr(obj, "__code__", None)
    record = _REASONS.get(id(code))
    return list(record[1]) if record is not None and record[0] is code else []


def forget_entries() -> None:
    """Drop every compiled entry, recompile record and refusal (part of ``npdynamo.reset()``,
    which the composition root runs under ``COMPILE_LOCK``)."""
    for cache in list(_ALL):
        cache.clear()
    _SHARED.clear()
    _PER_FUNCTION.clear()
    _REASONS.clear()
