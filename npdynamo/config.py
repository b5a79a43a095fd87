"""Knobs read by every stage (``npdynamo.config``); plain module attributes, set them directly."""

from __future__ import annotations

import os
import warnings


def _renamed(old: str, new: str) -> bool:
    """True when the variable's old name ``old`` is set: honoured, with a warning to use ``new``
    (a renamed switch that went silent would leave a user debugging with it off)."""
    if not os.environ.get(old):
        return False
    warnings.warn(f"{old} is renamed {new}; set {new} instead", FutureWarning, stacklevel=2)
    return True


#: Compiled entries kept per code object; past this the function runs without new compiles.
cache_size_limit: int = 8

#: A dimension that changed size across a recompile is captured as symbolic from then on (one
#: entry serves every size >= 2 of it), and a Python int/float that changed value becomes a graph
#: input (a dynamic scalar); ``compile(dynamic=True/False)`` overrides this.
automatic_dynamic_shapes: bool = True

#: A ``while`` loop whose test is an array value (``while err > tol:``) and whose body can be
#: captured whole becomes one in-graph ``while_loop`` node; False: a graph break at its test.
capture_while_loops: bool = True

#: A ``for <name> in range(a, b):`` loop of at least ``for_loop_min_trips`` iterations whose body
#: can be captured whole becomes one in-graph ``fori_loop`` node (its trip count a value of the
#: loop, not a specialisation); False, or fewer iterations: the loop is unrolled.
capture_for_loops: bool = True
for_loop_min_trips: int = 16

#: An ``if`` statement whose test is an array value and whose branches can be captured whole
#: becomes one in-graph ``cond`` node (both branches compiled, no recompile to take the other
#: one); False: a graph break at its test, each side continuing in its own resume function.
capture_if_branches: bool = True

#: The numba backend's tiers: a new graph runs on the eager tier (its NumPy calls) from its first
#: call while worker processes compile its kernels into the disk cache, and switches to them at
#: a call boundary once they are there (``npdynamo.synchronize()`` waits for that). False (or
#: ``NPDYNAMO_TIERED=0``): the first call compiles the kernels itself, as a blocking compile.
tiered: bool = os.environ.get("NPDYNAMO_TIERED", "1").strip().lower() not in (
    "0", "false", "off", "no")

#: While a graph's compiled tier is not ready, an entry whose eager tier measured slower than
#: the frame run as plain Python (its first calls alternate the two, each call running exactly
#: one) runs plain Python until the switch (``backends/tiers.py: WhileCompiling``). False: the
#: eager tier runs every call until the switch.
plain_while_compiling: bool = True

#: Compile worker processes at most; ``None``: one per core, bounded by the memory available.
compile_workers: int | None = None

#: Debugging / testing: every capture runs the frame in plain Python instead of a graph.
force_python: bool = bool(os.environ.get("NPDYNAMO_FORCE_PYTHON")) or _renamed(
    "NPDYNAMO_FORCE_FALLBACK", "NPDYNAMO_FORCE_PYTHON")

#: Debugging: compile worker processes (the numba backend's tiers) print their errors to stderr
#: instead of discarding them.
verbose: bool = bool(os.environ.get("NPDYNAMO_VERBOSE"))

#: Every ``NPDYNAMO_*`` environment variable the package reads, and what it sets. The knobs above
#: read theirs once, at import; the others are read at each use through ``environment`` (so a
#: test or a long-running program may change them between calls). Only this module reads them.
ENVIRONMENT: dict[str, str] = {
    "NPDYNAMO_TIERED": "0: no tiers (``tiered``)",
    "NPDYNAMO_FORCE_PYTHON": "set: every capture runs in Python (``force_python``)",
    "NPDYNAMO_FORCE_FALLBACK": "the old name of NPDYNAMO_FORCE_PYTHON (read with a warning)",
    "NPDYNAMO_VERBOSE": "set: compile workers print their errors (``verbose``)",
    "NPDYNAMO_CACHE_DIR": "the kernel cache directory (default ~/.cache/npdynamo)",
    "NPDYNAMO_LOGS": "comma-separated log topics to show (``logs``)",
    "NPDYNAMO_PROGRESS": "0: no progress lines for slow compiles (``progress``)",
    "NPDYNAMO_PROGRESS_AFTER": "seconds before a compile shows progress (``progress``)",
    "NPDYNAMO_NUMBA_TUNE": "0: no tuning of a graph's forms on its first calls (``tuning``)",
    "NPDYNAMO_NUMBA_PARALLEL": "never / always / auto: numba's parallel kernels",
    "NPDYNAMO_SCHEDULE": "never / always / auto: the inter-operator scheduler",
    "NPDYNAMO_SCHEDULE_STREAMS": "the scheduler's streams at most (>= 2)",
}


def environment(name: str, default: str = "") -> str:
    """The environment variable ``name`` (one of ``ENVIRONMENT``), read now; ``default`` when
    it is not set."""
    if name not in ENVIRONMENT:
        raise KeyError(f"{name} is not one of npdynamo's environment variables")
    return os.environ.get(name, default)


def _passed_on(name: str) -> bool:
    # XDG_CACHE_HOME: where the kernel cache is when NPDYNAMO_CACHE_DIR is not set
    return name.startswith("NPDYNAMO_") or name == "XDG_CACHE_HOME"


def worker_environment() -> dict[str, str]:
    """The variables a compile worker takes from this process as they are now (a warm worker
    was started under earlier ones): every ``NPDYNAMO_*`` set, and ``XDG_CACHE_HOME``."""
    return {k: v for k, v in os.environ.items() if _passed_on(k)}


def adopt_worker_environment(environ: dict[str, str], **overrides: str) -> None:
    """In a compile worker: make ``environ`` (``worker_environment()`` of the parent, with
    ``overrides``) the variables it passes on, dropping its own."""
    for name in [k for k in os.environ if _passed_on(k)]:
        del os.environ[name]
    os.environ.update(environ, **overrides)


def switch(name: str) -> str:
    """A ``never / always / auto`` variable of ``ENVIRONMENT``, read now: ``"never"`` for
    0/never/false/off/no, ``"always"`` for 1/always/true/on/yes, else ``"auto"``."""
    value = environment(name, "auto").strip().lower()
    if value in ("0", "never", "false", "off", "no"):
        return "never"
    if value in ("1", "always", "true", "on", "yes"):
        return "always"
    return "auto"
