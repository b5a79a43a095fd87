"""The ``numba`` backend: fusion groups compiled into generated numba kernels, cached on disk.

Importing this package imports numba; ``npdynamo.backends`` registers the backend lazily so that
``import npdynamo`` does not. Modules, in pipeline order: ``fusion`` (partition into groups),
``lowering`` (the op table), ``codegen`` (kernel source), ``approx``/``runtime`` (what kernels
call), ``diskcache`` (kernel files), ``threads`` (parallel policy), ``program`` (the per-graph
function) and ``backend`` (the entry point and its report).
"""

from npdynamo.backends.numba.backend import NumbaFallbackWarning, NumbaReport, numba_backend

__all__ = ["NumbaFallbackWarning", "NumbaReport", "numba_backend"]
