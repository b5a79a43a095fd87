"""npdynamo: TorchDynamo + AOTAutograd + FX for NumPy programs, in pure Python.

Put ``@npdynamo.compile`` on a NumPy function: its bytecode is captured into a graph of array ops
guarded by shapes, dtypes and values, and the graph is compiled by a backend.
"""

from npdynamo import config, fx, ops
from npdynamo.autograd import grad, value_and_grad
from npdynamo.backends import list_backends, register_backend
from npdynamo.backends.scheduler import gil_held_fraction
from npdynamo.backends.tiers import synchronize
from npdynamo.capture.builtins_table import graph_break
from npdynamo.capture.dynamic_dims import mark_dynamic, mark_static
from npdynamo.capture.explain import ExplainOutput, explain
from npdynamo.capture.frames import compile, disable, enable, reset
from npdynamo.capture.inspection import EntryInfo, GraphInfo, Inspection, inspect
from npdynamo.control_flow import cond, fori_loop, while_loop
from npdynamo.errors import (
    BackendCompilerFailed,
    GradError,
    InvalidArgument,
    InvalidBackend,
    NpdynamoError,
    Unsupported,
)
from npdynamo.logs import set_logs
from npdynamo.ops.table import supported_functions

__version__ = "0.1.0"

__all__ = [
    "BackendCompilerFailed",
    "GradError",
    "InvalidArgument",
    "InvalidBackend",
    "NpdynamoError",
    "Unsupported",
    "EntryInfo",
    "ExplainOutput",
    "GraphInfo",
    "Inspection",
    "compile",
    "cond",
    "config",
    "disable",
    "enable",
    "explain",
    "fori_loop",
    "fx",
    "gil_held_fraction",
    "grad",
    "graph_break",
    "inspect",
    "list_backends",
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
