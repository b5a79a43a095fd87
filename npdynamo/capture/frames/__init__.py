"""Frame hooks: the first stage of a compiled call (decorator entry, region hook, entry cache).

``compile`` and ``enable`` route calls of user functions through generated dispatchers into the
per-code cache of compiled entries; a miss calls the capture stage's
``build_entry``, which ``capture/__init__.py`` installs (this package never imports it).
"""

from npdynamo.capture.frames.cache import (
    NpdynamoWarning,
    RecompileLimitWarning,
    UnsupportedPythonWarning,
    compiled_entries,
    recompile_reasons,
    reset,
)
from npdynamo.capture.frames.decorator import NotCompilable, compile
from npdynamo.capture.frames.disable import disable, is_disabled
from npdynamo.capture.frames.dispatch import is_generated_code, mark_generated, original_function
from npdynamo.capture.frames.region import enable

__all__ = [
    "NotCompilable",
    "NpdynamoWarning",
    "RecompileLimitWarning",
    "UnsupportedPythonWarning",
    "compile",
    "compiled_entries",
    "disable",
    "enable",
    "is_disabled",
    "is_generated_code",
    "mark_generated",
    "original_function",
    "recompile_reasons",
    "reset",
]
