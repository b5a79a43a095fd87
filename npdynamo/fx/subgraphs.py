"""Subgraphs held by control-flow nodes: finding them, copying them, running passes inside them.

A ``cond``/``while_loop``/``fori_loop`` node (``ops/higher_order.py``) carries its branches and
loop bodies as ``GraphModule`` arguments. The passes, the linter, the printer and ``Graph.copy``
reach them through these helpers, so every one of them treats a subgraph as a graph of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph
    from npdynamo.fx.graph_module import GraphModule
    from npdynamo.fx.node import Node


#: The class of subgraphs, ``GraphModule``, registered by ``graph_module.py`` when imported
#: (it sits above ``graph.py``, which copies subgraphs through this module)
_SUBGRAPH_TYPES: tuple[type, ...] = ()


def register_subgraph_type(cls: type) -> type:
    global _SUBGRAPH_TYPES
    _SUBGRAPH_TYPES = (*_SUBGRAPH_TYPES, cls)
    return cls


def is_subgraph(value: Any) -> bool:
    """Whether ``value`` is a ``GraphModule`` (a branch or loop body held by a node)."""
    return isinstance(value, _SUBGRAPH_TYPES)


def subgraphs_of(node: Node) -> list[GraphModule]:
    """The subgraphs among ``node``'s positional arguments, in order."""
    return [a for a in node.args if is_subgraph(a)]


def is_loop(node: Node) -> bool:
    """Whether ``node`` calls a loop op (``while_loop``, ``fori_loop``: the op's ``loop``)."""
    return node.op == "call_function" and getattr(node.target, "loop", None) is not None


def nodes_with_subgraphs(graph: Graph) -> Iterator[Node]:
    """The nodes of ``graph`` that hold subgraphs."""
    for node in graph.nodes:
        if node.op == "call_function" and any(is_subgraph(a) for a in node.args):
            yield node


def under_errstate(graph: Graph) -> bool:
    """Whether an op of ``graph`` or of its subgraphs runs inside the user's ``with
    np.errstate(...)`` block (``node.meta["errstate"]``, set by capture)."""
    return any("errstate" in node.meta for node in graph.nodes) or any(
        under_errstate(sub.graph) for node in nodes_with_subgraphs(graph)
        for sub in subgraphs_of(node))


def in_subgraphs(graph: Graph, graph_pass: Callable[[Graph], int]) -> int:
    """Run ``graph_pass`` on every subgraph of ``graph`` (which descends further itself);
    regenerate the code of each subgraph it changed. Returns the sum of the counts."""
    total = 0
    for node in nodes_with_subgraphs(graph):
        for sub in subgraphs_of(node):
            changed = graph_pass(sub.graph)
            if changed:
                sub.recompile()
            total += changed
    return total


def copy_subgraph_args(args: tuple) -> tuple:
    """``args`` with every subgraph replaced by a deep copy (for ``Graph.copy``)."""
    if not any(is_subgraph(a) for a in args):
        return args
    return tuple(type(a)(a.graph.copy()[0], a.name) if is_subgraph(a) else a for a in args)
