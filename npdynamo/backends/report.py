"""What a backend hands back for one graph: ``Compiled``, a callable with its typed report.

A backend returns a ``Compiled`` (or a plain callable, which ``compile_graph`` wraps as one with
no report). ``run`` is the callable that computes the graph; callers that run it often (an
entry's generated code) bind ``run`` itself, not the ``Compiled``, so the warm path is one frame
shorter, and ``follow`` it: a backend that settles on what it runs later (the tuner's winner,
the compiled tier taking over from the eager one) calls ``retarget(new_run)`` and every follower
rebinds its name. ``report`` is a ``BackendReport`` (``NumbaReport``, ``ScheduleReport``,
``AOTReport``) for ``explain``/``inspect``; nothing reads attributes off a callable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class GuardedInput(NamedTuple):
    """What the entry's guards prove about one graph input on every call that reaches the
    compiled graph (``placeholder.meta[GUARDED]``, set by capture): ``type(value) is type``,
    ``value.dtype == dtype`` and ``value.ndim == ndim`` (None: not guarded). Set only where the
    input is a frame argument passed to the graph as that very object, right after the guard
    function accepted it; a backend may then skip testing these again on its warm path."""

    type: type
    dtype: Any = None
    ndim: int | None = None


#: the placeholder meta key of a ``GuardedInput``
GUARDED = "guarded"


class BackendReport:
    """Base of the reports a backend gives about one compiled graph."""


class Compiled:
    """One compiled graph: ``run(*inputs) -> tuple``, its ``report``, and who follows ``run``."""

    __slots__ = ("_followers", "report", "run")

    def __init__(self, run: Callable[..., tuple], report: BackendReport | None = None) -> None:
        self.run = run
        self.report = report
        self._followers: list[Callable[[Callable[..., tuple]], None]] = []

    def __call__(self, *inputs: Any) -> tuple:
        return self.run(*inputs)

    def follow(self, rebind: Callable[[Callable[..., tuple]], None]) -> None:
        """Call ``rebind(run)`` now and again whenever the backend retargets ``run``."""
        rebind(self.run)
        self._followers.append(rebind)

    def on_retarget(self, rebind: Callable[[Callable[..., tuple]], None]) -> None:
        """Like ``follow``, without the call now (the caller already bound ``run``)."""
        self._followers.append(rebind)

    def retarget(self, run: Callable[..., tuple]) -> None:
        """From now on ``run`` computes this graph: tell every follower."""
        self.run = run
        for rebind in list(self._followers):
            rebind(run)

    def with_report(self, report: BackendReport | None) -> Compiled:
        """The same graph under another report (``run`` and its retargets followed)."""
        other = Compiled(self.run, report)
        self.on_retarget(other.retarget)
        return other


def as_compiled(result: Callable[..., tuple] | Compiled) -> Compiled:
    """A backend's result as a ``Compiled`` (a plain callable has no report)."""
    return result if isinstance(result, Compiled) else Compiled(result)

