"""Common-subexpression elimination: one node per distinct pure computation.

Two calls are the same computation when they have the same target and equal arguments.
"Equal" is strict for constants, because NumPy's result dtype depends on the Python type:
``x * 1``, ``x * 1.0``, ``x * True`` and ``x * np.float32(1)`` can all differ, and so can
``x * 0.0`` and ``x * -0.0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import in_subgraphs, is_subgraph
from npdynamo.ops.symbolic import SymInt

_BY_VALUE = (bool, int, str, bytes, type(None), type(Ellipsis))


def _key(a: Any) -> Any:
    """A hashable key equal for two arguments only when they are interchangeable."""
    kind = type(a)
    if isinstance(a, Node):
        return ("node", id(a))
    if kind in _BY_VALUE:
        return (kind, a)
    if kind is float:
        # hex() keeps -0.0 apart from 0.0; every nan is the same computation here.
        return (float, "nan" if a != a else a.hex())
    if kind is SymInt:
        return (SymInt, a.terms)  # structural: the same size expression
    if kind is complex:
        return (complex, _key(a.real), _key(a.imag))
    if isinstance(a, np.generic):
        return (kind, a.dtype.str, a.tobytes())
    if isinstance(a, np.dtype):
        return (np.dtype, a)
    if kind in (tuple, list):
        return (kind, tuple(_key(x) for x in a))
    if kind is dict:
        return (dict, tuple((_key(k), _key(v)) for k, v in a.items()))
    if kind is slice:
        return (slice, _key(a.start), _key(a.stop), _key(a.step))
    # Anything else (arrays, functions, user objects): only the very same object is equal.
    return ("id", id(a))


def _makes_a_distinct_copy(node: Node) -> bool:
    # a copy exists to be another object than its source (capture adds them for outputs that
    # CSE merged: ``dy = dz = x - x.T`` must stay two arrays), so two copies are never one
    return getattr(node.target, "name", None) == "copy"


def common_subexpression_elimination(graph: Graph) -> int:
    """Merge pure ``call_function`` nodes that repeat an earlier one; returns how many merged.

    Nodes are visited in program order, so the arguments of a node already point at the
    surviving copies of earlier merged nodes. Impure nodes are never merged, nor control-flow
    nodes (each branch and loop body is simplified on its own).
    """
    seen: dict[Any, Node] = {}
    merged = in_subgraphs(graph, common_subexpression_elimination)
    for node in graph.nodes:
        if node.op != "call_function" or node.is_impure() or _makes_a_distinct_copy(node):
            continue
        if any(is_subgraph(a) for a in node.args):
            continue  # a loop or branch runs its own body: never merged with another

        kwargs = sorted(((repr(k), _key(v)) for k, v in node.kwargs.items()), key=lambda p: p[0])
        # an op under another np.errstate reports its floating-point errors otherwise
        key = (id(node.target), _key(node.args), tuple(kwargs), node.meta.get("errstate"))
        first = seen.setdefault(key, node)
        if first is not node:
            node.replace_all_uses_with(first)
            graph.erase_node(node)
            merged += 1
    return merged
