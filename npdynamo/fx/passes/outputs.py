"""Graph-boundary passes run once per captured graph, before a backend sees it.

``distinct_outputs``: every output stands for a distinct array object. Capture asks for one
output per Python value it rebuilds; where CSE merged two of them (``P0 = np.zeros(n);
P1 = np.zeros(n)``) or one is an input, the later ones become copies, or the user would get one
object under two names.

``prune_inputs``: placeholders nothing reads are removed, except those that give a symbolic size
the graph computes with (``np.arange(n)`` where ``n = x.shape[0]``): the graph binds the symbol
from that input.
"""

from __future__ import annotations

from npdynamo import ops
from npdynamo.fx.graph import Graph
from npdynamo.fx.sizes import gives_symbol, symbols_used


def distinct_outputs(graph: Graph) -> None:
    """Replace repeated (or input) array outputs by copies, so each output is its own array."""
    output = graph.output_node
    seen = set()
    outs = []
    for node in output.args[0]:
        meta = node.meta.get("val")
        scalar = meta is None or getattr(meta, "scalar", False)
        if (node in seen or node.op == "placeholder") and not scalar:
            with graph.inserting_before(output):
                node = graph.call_function(ops.REGISTRY["copy"], (node,))
            node.meta["val"] = meta
        seen.add(node)
        outs.append(node)
    output.args = (tuple(outs),)


def prune_inputs(graph: Graph) -> None:
    """Erase the placeholders nothing needs."""
    sizes = symbols_used(graph)
    for node in graph.placeholders:
        if not node.users and not gives_symbol(node, sizes):
            graph.erase_node(node)
