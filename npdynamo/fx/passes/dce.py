"""Dead-code elimination: drop calls whose results nothing reads and that have no effects.

It works inside the branches and loop bodies of control-flow nodes too; a control-flow node
whose results nobody reads goes like any pure call."""

from __future__ import annotations

from npdynamo.fx.graph import Graph
from npdynamo.fx.subgraphs import in_subgraphs


def dead_code_elimination(graph: Graph) -> int:
    """Erase unused ``call_function`` nodes whose target is not ``impure``; returns how many.

    Walking backwards frees a whole dead chain in one pass: by the time a node is visited, the
    dead nodes that read it are already gone.
    """
    removed = 0
    for node in reversed(graph.nodes):
        if node.op == "call_function" and not node.users and not node.is_impure():
            graph.erase_node(node)
            removed += 1
    return removed + in_subgraphs(graph, dead_code_elimination)
