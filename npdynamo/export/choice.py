"""A speculated choice (``ops/speculation.py``: ``max(1.0, m)`` of a graph scalar ``m``) in the
targets that cannot rerun Python: ONNX (``onnx_export``) and the NumPy-only module
(``python_writer``).

npdynamo runs ``chosen(holds, m)`` and, when the data makes Python choose the constant, raises
and reruns the frame in Python. A model or a NumPy-only module cannot rerun, so it picks the
value itself: ``Where(holds, m, otherwise)`` in ONNX, ``m if holds else otherwise`` in Python,
``otherwise`` being Python's choice (capture records it: a Python float). That is
exact only where the rest of the graph computes the same values from the Python float as from
the NumPy scalar it was captured with, which this module proves or refuses (``ExportError``):
the scalar is float64, and every op it flows into before it meets an array is ``+``, ``-`` or
``*`` (a Python float ``/`` by zero raises where a NumPy scalar gives inf), on float64, integer
or boolean operands (a float32 array with a float64 scalar is float64; with a Python float, a
weak scalar, it stays float32). Once it meets an array (``x / m``) NumPy computes both cases
alike: the result is the same array.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo.export.schema import ExportError
from npdynamo.fx import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

if TYPE_CHECKING:
    from npdynamo.export.onnx_writer import Lowering

#: ops that give the same value from a Python float as from a float64 scalar and never raise
_SCALAR_SAFE = frozenset({"add", "subtract", "multiply"})
#: ops that, with an array operand, are NumPy's on either kind of scalar
_ARRAY_SAFE = _SCALAR_SAFE | {"divide", "maximum", "minimum"}


def _is_array(arg: Any) -> bool:
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    return isinstance(meta, ArrayMeta) and not meta.scalar


def _same_in_both(arg: Any) -> bool:
    """An operand next to the chosen value that promotes alike with a float64 scalar and a
    Python float (no float32/float16/complex64, no int Python float arithmetic cannot hold)."""
    meta = arg.meta.get("val") if isinstance(arg, Node) else None
    if isinstance(meta, ArrayMeta):
        return meta.dtype == np.float64 or meta.dtype.kind in "biu"
    if isinstance(meta, ScalarMeta):
        return meta.type in (bool, int, float)
    if type(arg) is int:
        return abs(arg) < 2**53
    return type(arg) in (bool, float)


def check_flow(node: Node) -> None:
    """Raise ``ExportError`` unless the graph computes the same values from the Python float
    Python would choose as from the NumPy scalar ``node`` (a ``chosen``) was captured with."""
    if node.kwargs.get("otherwise") is None:
        raise ExportError("a speculated choice is checked at run time and raises when it "
                          "fails; this target cannot rerun Python, and Python's other choice "
                          "is not known here")
    meta = node.args[1].meta.get("val") if isinstance(node.args[1], Node) else None
    if not isinstance(meta, ArrayMeta) or meta.dtype != np.float64:
        raise ExportError("a speculated choice of a scalar that is not float64")
    _check_users(node)


def _check_users(node: Node) -> None:
    for user in node.users:
        if user.op == "output":
            continue  # a model output is a float64 tensor in both cases
        name = user.target.name if user.op == "call_function" else user.op
        array = any(_is_array(a) for a in user.args)
        meta = user.meta.get("val")
        if (name not in (_ARRAY_SAFE if array else _SCALAR_SAFE) or user.kwargs
                or not all(_same_in_both(a) for a in user.args)
                or not isinstance(meta, ArrayMeta) or meta.dtype != np.float64):
            raise ExportError(f"the chosen value flows into {name} ({user.name}), where a "
                              "Python float and a NumPy scalar may differ")
        if not array:
            _check_users(user)  # still a scalar that Python would compute as a float


def choose(holds, value, *, otherwise=None):
    """What the NumPy-only module runs for ``chosen``: Python's own choice."""
    return value if holds else otherwise


def numpy_only(graph: Graph) -> None:
    """Check every speculated choice of ``graph`` (not its subgraphs) for ``choose``."""
    for node in graph.nodes:
        if node.op == "call_function" and node.target.name == "chosen":
            check_flow(node)


def _chosen(L: Lowering, node: Node, holds: Any, value: Any, otherwise: Any = None) -> str:
    check_flow(node)
    return L.add("Where", [L.value(holds, np.bool_), L.value(value, np.float64),
                           L.const(np.float64(otherwise))])


LOWERINGS = {"chosen": _chosen}
