"""Frame hooks: the first stage of a compiled call (decorator, region hook, entry cache).

``npdynamo.compile`` and ``npdynamo.enable`` (``npdynamo/api.py``, the composition root) route
calls of user functions through generated dispatchers (``decorator.compile_with``,
``region.Region``) into the per-code cache of compiled entries; a miss calls the ``build_entry``
of the session the cache was made for (this package never imports the capture above it).
"""

from npdynamo.capture.hooks.cache import (
    NpdynamoWarning,
    RecompileLimitWarning,
    UnsupportedPythonWarning,
    compiled_entries,
    recompile_reasons,
)
from npdynamo.capture.hooks.decorator import NotCompilable
from npdynamo.capture.hooks.disable import disable, is_disabled
from npdynamo.capture.hooks.dispatch import is_generated_code, mark_generated, original_function

__all__ = [
    "NotCompilable",
    "NpdynamoWarning",
    "RecompileLimitWarning",
    "UnsupportedPythonWarning",
    "compiled_entries",
    "disable",
    "is_disabled",
    "is_generated_code",
    "mark_generated",
    "original_function",
    "recompile_reasons",
]
