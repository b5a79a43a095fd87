"""This process's own background work, and the cores it holds now.

Beside the backends' runtime. The numba backend's compile workers (processes of their own)
starting up or compiling, and a thread of this process importing numba or building a graph's
program, each keep a core busy, and a call made meanwhile shares the machine with them. Two
readers care: the tuner (``tuning``: a choice timed meanwhile is timed again once the work is
over) and the calls made while their graph compiles (``tiers.beside_workers``: BLAS on as many
threads fewer). Whoever starts such work registers a probe once (``register``: the compile pool,
the preparing threads); the readers ask ``cores_held`` or ``busy``, which ask the probes now.
"""

from __future__ import annotations

from collections.abc import Callable

_probes: list[Callable[[], int]] = []


def register(probe: Callable[[], int]) -> None:
    """Count ``probe()`` (the cores one kind of work holds now) in ``cores_held``."""
    _probes.append(probe)


def cores_held() -> int:
    """The cores this process's background work holds now."""
    return sum(probe() for probe in _probes)


def busy() -> bool:
    """Whether any of it runs now (a call timed now may have run without a core)."""
    return any(probe() for probe in _probes)
