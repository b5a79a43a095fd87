"""Progress of long compiles on stderr: graphs captured, ops recorded, kernels compiled.

One *compile* is the capture of a function, of the resume functions after its graph breaks,
and the backends compiling their graphs: the capture of another function, or a pause of more
than ``GAP_S`` without capture or backend work, starts a new one. A compile that passes
``THRESHOLD_S`` (1 s; ``NPDYNAMO_PROGRESS_AFTER`` sets another) prints a line such as
``npdynamo: compiling step (model.py:12): graph 2, 4,096 ops captured, kernels 3/7, 1.3 s``,
then one every ``INTERVAL_S`` while it lasts; quick compiles print nothing.
``NPDYNAMO_PROGRESS=0`` turns it off. Whole lines, not a redrawn bar, so that logs and
captured stderr stay readable.

The capture side is one call per recorded op (``op_captured``, from ``CaptureContext.call_op``):
it counts, and looks at the clock every ``_CHECK_EVERY`` ops only. A backend's long step (one
numba kernel can compile for many seconds) is bracketed by ``busy()``: a timer thread prints the
lines due meanwhile. The same thread reports the background compiles of the numba tiers
(``background``): ``npdynamo: compiling f (x.py:3) in the background: kernels 2/7, 4.0 s; the
eager tier runs its calls``, and when the compiled tier takes over, if a line was shown.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref

from npdynamo import config

#: A compile running longer than this starts showing progress.
THRESHOLD_S = 1.0
#: Seconds between two progress lines of one compile.
INTERVAL_S = 2.0
_CHECK_EVERY = 64
_lock = threading.Lock()


def enabled() -> bool:
    """Whether progress is shown (``NPDYNAMO_PROGRESS=0`` turns it off)."""
    return config.environment("NPDYNAMO_PROGRESS", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _threshold() -> float:
    try:
        return float(config.environment("NPDYNAMO_PROGRESS_AFTER", str(THRESHOLD_S)))
    except ValueError:
        return THRESHOLD_S


class Compile:
    """The progress of one compile (see the module docstring)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.graphs = 0
        self.ops = 0
        self.kernels_done = 0
        self.kernels_total = 0
        self.start = self.last = time.perf_counter()
        self.next_line = self.start + _threshold()
        self.busy = 0  # backend steps under way (``busy()``): the timer thread prints for them

    def touch(self, now: float | None = None) -> None:
        """Work happened now (or the timer looked at a busy compile); print a line if due."""
        now = time.perf_counter() if now is None else now
        self.last = now
        if now >= self.next_line and enabled():
            self.next_line = now + INTERVAL_S
            # a backend step with no capture before it (a tier's switch compiling in the
            # caller) has no graph number or ops to count: "graph 0, 0 ops captured" misleads
            parts = [f"graph {self.graphs}", f"{self.ops:,} ops captured"] if self.graphs else []
            if self.kernels_total:
                parts.append(f"kernels {self.kernels_done}/{self.kernels_total}")
            parts.append(f"{now - self.start:.1f} s")
            _write(f"npdynamo: compiling {self.what}: {', '.join(parts)}")


def _write(line: str) -> None:
    with _lock:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken stderr is no reason to fail
            pass


#: Work separated by a longer pause belongs to another compile.
GAP_S = 2.0
_current: Compile | None = None
_capture_ctx: weakref.ref | None = None


def _compile(what: str, new: bool = False) -> Compile:
    global _current
    current = _current
    if new or current is None or time.perf_counter() - current.last > GAP_S:
        current = _current = Compile(what)
    return current


def op_captured(ctx: object) -> None:
    """One more op recorded by the capture ``ctx`` (a ``CaptureContext``)."""
    global _capture_ctx
    current = _current
    if current is None or _capture_ctx is None or _capture_ctx() is not ctx:
        # a resume function continues the compile of its function; any other starts one
        name = getattr(getattr(ctx, "fn", None), "__name__", "")
        current = _compile(_describe(ctx), new=not name.startswith("__resume_at_"))
        current.graphs += 1
        _capture_ctx = weakref.ref(ctx)
    current.ops += 1
    if not current.ops % _CHECK_EVERY:
        current.touch()


def _describe(ctx: object) -> str:
    fn = getattr(ctx, "fn", None)
    code = getattr(fn, "__code__", None)
    where = (f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
             if code is not None else "")
    return f"{getattr(fn, '__qualname__', '?')}{where}"


def end_capture() -> None:
    """The current capture's graph went to a backend."""
    global _capture_ctx
    _capture_ctx = None
    if _current is not None:
        _current.touch()


def current_what() -> str:
    """What the current compile is of (``f (file.py:3)``), for a background compile's lines."""
    return _current.what if _current is not None else "a graph"


class busy:  # noqa: N801 - used as ``with progress.busy():``
    """A backend step that may take long without calling back: the timer prints its lines."""

    def __enter__(self) -> None:
        self.compile = _compile("a graph")
        self.compile.busy += 1
        _ensure_timer()

    def __exit__(self, *exc: object) -> None:
        self.compile.busy -= 1
        self.compile.touch()


class Background:
    """One graph compiling in the background (a numba tier); ``status()`` gives its progress."""

    def __init__(self, what: str, status: object, serving: object = None) -> None:
        self.what = what
        self.status = status
        #: what runs the calls meanwhile (the eager tier, or plain Python), as a phrase
        self.serving = serving or (lambda: "the eager tier runs its calls")
        self.start = time.perf_counter()
        self.next_line = self.start + _threshold()
        self.shown = False

    def tick(self, now: float) -> None:
        if now >= self.next_line and enabled():
            self.next_line = now + INTERVAL_S
            self.shown = True
            _write(f"npdynamo: compiling {self.what} in the background: {self.status()}, "
                   f"{now - self.start:.1f} s; {self.serving()}")

    def finished(self, text: str) -> None:
        """The compiled tier took over (``text`` says when); printed if a line was shown."""
        with _lock:
            _backgrounds.discard(self)
        if self.shown and enabled():
            _write(f"npdynamo: {self.what}: {text}")


_backgrounds: set[Background] = set()
_timer: threading.Thread | None = None
#: Seconds between two looks of the timer thread.
TICK_S = 0.25


def background(what: str, status: object, serving: object = None) -> Background:
    """Show the progress of a background compile of ``what`` until ``finished``; ``serving()``
    says what runs the calls meanwhile."""
    handle = Background(what, status, serving)
    with _lock:
        _backgrounds.add(handle)
    _ensure_timer()
    return handle


def _ensure_timer() -> None:
    global _timer
    with _lock:
        if _timer is None or not _timer.is_alive():
            _timer = threading.Thread(target=_tick, name="npdynamo-progress", daemon=True)
            _timer.start()


def _tick() -> None:
    """The timer thread: prints what is due; ends when nothing is left to watch."""
    global _timer
    while True:
        time.sleep(TICK_S)
        now = time.perf_counter()
        current = _current
        if current is not None and current.busy > 0:
            current.touch(now)
        with _lock:
            watched = list(_backgrounds)
            if not watched and (current is None or current.busy <= 0):
                _timer = None
                return
        for handle in watched:
            handle.tick(now)


def _after_fork_child() -> None:
    global _timer, _lock
    _lock = threading.Lock()
    _timer = None
    _backgrounds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_child)


def kernels(done: int, total: int) -> None:
    """A backend compiled ``done`` of the ``total`` kernels of its graph."""
    current = _compile("a graph")
    if done == 0:
        current.kernels_total += total
    else:
        current.kernels_done += 1
    current.touch()
