"""npdynamo: TorchDynamo + AOTAutograd + FX for NumPy programs, in pure Python.

Put ``@npdynamo.compile`` on a NumPy function: its bytecode is captured into a graph of array ops
guarded by shapes, dtypes and values, and the graph is compiled by a backend.
"""

from __future__ import annotations

import importlib
from typing import Any

from npdynamo import config, export, fx, ops
from npdynamo.autograd import grad, value_and_grad
from npdynamo.backends import list_backends, register_backend
from npdynamo.backends.scheduler import gil_held_fraction
from npdynamo.backends.tiers import synchronize
from npdynamo.control_flow import cond, fori_loop, while_loop
from npdynamo.errors import (
    BackendCompilerFailed,
    BackendFallbackWarning,
    CompileWorkerWarning,
    GradError,
    InvalidArgument,
    InvalidBackend,
    KernelCacheWarning,
    NpdynamoError,
    NpdynamoWarning,
    NumbaFallbackWarning,
    RecompileLimitWarning,
    Unsupported,
    UnsupportedPythonWarning,
)
from npdynamo.export import Dim, ExportedProgram, load
from npdynamo.logs import set_logs
from npdynamo.ops.table import supported_functions

# The capture stage (the front end) is imported on first use of one of its names, so that a
# process that only loads and runs exported programs (``npdynamo.load``) never imports it.
_CAPTURE_NAMES = {
    "graph_break": "npdynamo.capture.builtin_calls",
    "mark_dynamic": "npdynamo.capture.dynamic_dims",
    "mark_static": "npdynamo.capture.dynamic_dims",
    "ExplainOutput": "npdynamo.introspection.explain",
    "explain": "npdynamo.introspection.explain",
    "compile": "npdynamo.api",
    "disable": "npdynamo.api",
    "enable": "npdynamo.api",
    "reset": "npdynamo.api",
    "EntryInfo": "npdynamo.introspection.inspection",
    "GraphInfo": "npdynamo.introspection.inspection",
    "Inspection": "npdynamo.introspection.inspection",
    "inspect": "npdynamo.introspection.inspection",
}


def __getattr__(name: str) -> Any:
    if name == "capture":
        return importlib.import_module("npdynamo.capture")
    module = _CAPTURE_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'npdynamo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_CAPTURE_NAMES, "capture"})


__version__ = "0.1.0"

__all__ = [
    "BackendCompilerFailed",
    "GradError",
    "InvalidArgument",
    "InvalidBackend",
    "NpdynamoError",
    "Unsupported",
    "BackendFallbackWarning",
    "CompileWorkerWarning",
    "KernelCacheWarning",
    "NpdynamoWarning",
    "NumbaFallbackWarning",
    "RecompileLimitWarning",
    "UnsupportedPythonWarning",
    "Dim",
    "EntryInfo",
    "ExplainOutput",
    "ExportedProgram",
    "GraphInfo",
    "Inspection",
    "compile",
    "cond",
    "config",
    "disable",
    "enable",
    "explain",
    "export",
    "fori_loop",
    "fx",
    "gil_held_fraction",
    "grad",
    "graph_break",
    "inspect",
    "list_backends",
    "load",
    "mark_dynamic",
    "mark_static",
    "ops",
    "register_backend",
    "reset",
    "set_logs",
    "supported_functions",
    "synchronize",
    "value_and_grad",
    "while_loop",
]
