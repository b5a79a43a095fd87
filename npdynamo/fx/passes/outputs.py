"""Graph-boundary passes run once per captured graph, before a backend sees it.

``distinct_outputs``: every output stands for a distinct array object. Capture asks for one
output per Python value it rebuilds; where CSE merged two of them (``P0 = np.zeros(n);
P1 = np.zeros(n)``) or one is an input, the later ones become copies, or the user would get one
object under two names.

``prune_inputs``: placeholders nothing reads are removed, except those that give a symbolic size
the graph computes with (``np.arange(n)`` where ``n = x.shape[0]``): the graph binds the symbol
from that input.

``elide_self_stores``: ``setitem(y, i, getitem(y, i))`` is ``y``. Capture makes one for every
augmented assignment to a subscript (``A[i, j:] -= v`` updates the view ``A[i, j:]``, which
writes ``A``, then stores the view back into ``A[i, j:]``); it copied the whole array for
nothing.
"""

from __future__ import annotations

from npdynamo import ops
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
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


def elide_self_stores(graph: Graph) -> None:
    """Replace each ``setitem(y, i, getitem(y, i))`` of a graph-made ``y`` by ``y`` itself: the
    store writes every element it reads, unchanged (same positions, same dtype)."""
    for node in list(graph.nodes):
        if node.op != "call_function" or getattr(node.target, "name", None) != "setitem":
            continue
        target, index, value = (*node.args, None, None)[:3]
        if (not isinstance(value, Node) or value.op != "call_function" or node.kwargs
                or getattr(value.target, "name", None) != "getitem" or value.kwargs
                or value.args[0] is not target or not isinstance(target, Node)
                or target.op != "call_function" or not _same_index(value.args[1], index)):
            continue
        node.replace_all_uses_with(target)
        graph.erase_node(node)
        if not value.users:
            graph.erase_node(value)


def _same_index(a: object, b: object) -> bool:
    if isinstance(a, Node) or isinstance(b, Node):
        return a is b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_index(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
