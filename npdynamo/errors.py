"""The error hierarchy every stage raises into: each message says what happened and what to do."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NpdynamoError(Exception):
    """Root of every error npdynamo raises on purpose."""


class Unsupported(NpdynamoError):
    """Code the translator cannot put into a graph (a graph break under ``fullgraph=True``)."""


class BackendCompilerFailed(NpdynamoError):
    """A backend could not compile a graph."""


class InvalidBackend(NpdynamoError):
    """A backend name that is not registered, or an object that is not a backend."""


class GradError(NpdynamoError):
    """A gradient that cannot be computed (non-scalar output, non-differentiable op, ...)."""


class InvalidArgument(NpdynamoError, TypeError, ValueError):
    """An npdynamo function was called with an argument it cannot take (a wrong type or an
    unknown name). Also a ``TypeError`` and a ``ValueError``, so code that caught the built-in
    error Python would have raised keeps working."""


# -- warnings: every one npdynamo emits on purpose derives from NpdynamoWarning, so that
# ``warnings.filterwarnings("ignore", category=npdynamo.NpdynamoWarning)`` silences them all;
# defined here, below every stage, so ``npdynamo`` exports them without importing the stages


class NpdynamoWarning(UserWarning):
    """Root of the warnings npdynamo emits on purpose."""


class RecompileLimitWarning(NpdynamoWarning):
    """A function reached ``config.cache_size_limit`` entries; new cases now run in Python."""


class UnsupportedPythonWarning(NpdynamoWarning):
    """The running Python is not one npdynamo can capture; everything runs uncompiled."""


class BackendFallbackWarning(NpdynamoWarning):
    """A backend raised while compiling a graph; the graph runs on the eager backend."""


class NumbaFallbackWarning(NpdynamoWarning):
    """A graph runs on the eager backend because the numba backend could not compile it."""


class CompileWorkerWarning(NpdynamoWarning):
    """A compile worker failed; the graph's kernels compile in the caller's process instead."""


class KernelCacheWarning(NpdynamoWarning):
    """A damaged or foreign kernel cache entry was discarded and rebuilt."""


def user_location() -> str:
    """``file:line`` of the innermost caller outside npdynamo (where the user's mistake is)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"
