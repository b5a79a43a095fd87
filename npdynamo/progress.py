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
it counts, and looks at the clock every ``_CHECK_EVERY`` ops only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref

#: A compile running longer than this starts showing progress.
THRESHOLD_S = 1.0
#: Seconds between two progress lines of one compile.
INTERVAL_S = 2.0
_CHECK_EVERY = 64
_lock = threading.Lock()


def enabled() -> bool:
    """Whether progress is shown (``NPDYNAMO_PROGRESS=0`` turns it off)."""
    return os.environ.get("NPDYNAMO_PROGRESS", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _threshold() -> float:
    try:
        return float(os.environ.get("NPDYNAMO_PROGRESS_AFTER", THRESHOLD_S))
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

    def touch(self) -> None:
        """Work happened now; print a line if one is due."""
        now = self.last = time.perf_counter()
        if now >= self.next_line and enabled():
            self.next_line = now + INTERVAL_S
            parts = [f"graph {self.graphs}", f"{self.ops:,} ops captured"]
            if self.kernels_total:
                parts.append(f"kernels {self.kernels_done}/{self.kernels_total}")
            parts.append(f"{now - self.start:.1f} s")
            text = f"npdynamo: compiling {self.what}: {', '.join(parts)}\n"
            with _lock:
                try:
                    sys.stderr.write(text)
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


def kernels(done: int, total: int) -> None:
    """A backend compiled ``done`` of the ``total`` kernels of its graph."""
    current = _compile("a graph")
    if done == 0:
        current.kernels_total += total
    else:
        current.kernels_done += 1
    current.touch()
