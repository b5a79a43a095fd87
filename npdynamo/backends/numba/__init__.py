"""The ``numba`` backend: fusion groups compiled into generated numba kernels, cached on disk.

Importing this package does not import numba (its names below load ``backend`` on first use),
so that the tiered front (``front``: the eager tier and the compile workers) answers a graph's
first call without numba; ``npdynamo.backends`` registers the backend lazily too. Modules, in
pipeline order: ``fusion`` (partition into groups), ``lowering`` (the op table), ``codegen``
(kernel source), ``approx``/``runtime`` (what kernels call), ``diskcache`` (kernel files),
``threads`` (parallel policy), ``program`` (the per-graph function), ``backend`` (the entry
point), ``report`` (its report); the tiers: ``front``, ``tiering``, ``workers``,
``compile_worker``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NumbaFallbackWarning", "NumbaReport", "numba_backend"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from npdynamo.backends.numba import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
