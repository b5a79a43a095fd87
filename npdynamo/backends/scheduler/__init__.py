"""The inter-operator scheduler: independent ops and kernels of a graph run side by side.

Its place in the pipeline is the end of a backend: the eager backend (its ops) and the numba
backend (its program's kernels and NumPy calls) hand it their serial form, and it returns the
callable to run. In order: ``plan`` (steps, their dependencies with memory effects, streams by
list scheduling), ``runner`` (one generated function per stream, events between them, the
exact fallback to the serial form), ``threads`` (the worker pool, BLAS's pool via
threadpoolctl), ``forms`` (a graph or a numba program as steps), ``gil`` (how much of a call
holds the GIL). Whether a graph runs scheduled is measured by the tuner (``backends/tuning``),
never assumed. ``docs/scheduling.md`` is the user's guide.
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo.backends import tuning
from npdynamo.backends.report import Compiled
from npdynamo.backends.scheduler.forms import (
    Candidate,
    ScheduleReport,
    eager_candidate,
    mode,
    program_candidate,
)
from npdynamo.backends.scheduler.gil import gil_held_fraction

__all__ = ["Candidate", "ScheduleReport", "eager_candidate", "gil_held_fraction", "mode",
           "program_candidate", "tuned_eager"]


def tuned_eager(graph, serial: Callable[..., tuple], aliases, temps=None) -> Compiled:
    """The eager backend's result for ``graph``: ``serial`` itself, or (when the graph has
    independent parts worth running side by side) whichever of ``serial`` and the scheduled
    form the tuner measures faster, reported by a ``ScheduleReport`` for ``explain``.
    ``aliases`` and ``temps``: as ``eager_candidate`` takes them."""
    candidate = eager_candidate(graph, serial, aliases, temps)
    if candidate is None:
        return Compiled(serial)
    report = candidate.report
    if mode() == "always":
        report.decision = "runs scheduled (NPDYNAMO_SCHEDULE=always: not timed)"
        return Compiled(candidate.run, report)
    if not tuning.tuning_enabled():
        report.decision = "runs serially (tuning is off: NPDYNAMO_NUMBA_TUNE=0)"
        return Compiled(serial, report)

    def record(text: str) -> None:
        report.decision = text

    return tuning.fastest_of([tuning.Candidate("serial", serial),
                              tuning.Candidate("scheduled", candidate.run,
                                               side_by_side=True)], record, report=report)
