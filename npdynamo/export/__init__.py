"""The export stage: a captured function as a program saved, reloaded and converted.

``npdynamo.export`` is this package and is also callable: ``npdynamo.export(fn, *example_args,
dynamic_shapes=...)`` captures ``fn`` (``trace.py``, the only module here that imports the
capture stage, and only when called) into an ``ExportedProgram`` (``program.py``). Programs are
saved as versioned archives (``archive.py``; ``npdynamo.load`` reads them with the graph layer
and the op registry only), written as ONNX models (``onnx_writer.py``) or as modules that need
only NumPy (``python_writer.py``). See ``docs/export.md``.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from npdynamo.export.archive import FORMAT_VERSION
from npdynamo.export.program import Dim, ExportedProgram, InputSpecError, InvalidDim, load
from npdynamo.export.schema import ArchiveError, ExportError


class _CallableModule(types.ModuleType):
    """``npdynamo.export`` is both this package and the function that exports."""

    def __call__(self, fn: Any, *args: Any, dynamic_shapes: Any = None,
                 **kwargs: Any) -> ExportedProgram:
        from npdynamo.export.trace import export

        return export(fn, *args, dynamic_shapes=dynamic_shapes, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["FORMAT_VERSION", "ArchiveError", "Dim", "ExportError", "ExportedProgram",
           "InputSpecError", "InvalidDim", "load"]
