"""Masked reductions as masked loops (a numba backend rewrite, before fusion).

``f(x[mask], y[mask]).sum()`` is captured as one ``masked_reduce`` node (``capture/masked.py``);
run as a NumPy call it makes each selection, then ``f`` of them, then the sum. Here, when every
array has the mask's shape, it becomes elementwise graph nodes over the whole arrays and a
reduction of ``where(mask, f(x, y), 0)``:

    sum:  sum(where(mask, f, 0))
    mean: dtype(sum(where(mask, f, 0), dtype=acc) / sum(mask))   (NumPy's own mean: the sum
          in the accumulation dtype, divided by the count, converted back)

which fusion puts in one kernel: one pass over the mask and the arrays, no selection made.
``f`` is computed at unselected elements too, and its value there discarded by the ``where``;
kernels never trap or warn (``errstate.py``), so that is invisible, which is why the rewrite is
made only when every op of ``f`` has kernel code (``lowering``); otherwise the node stays a
NumPy call computing only the selected elements. Sums differ from NumPy's pairwise sum of the
selection only by rounding, as every kernel sum does (``codegen``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from npdynamo import ops
from npdynamo.backends.numba.lowering import NotFusible, lower_elementwise
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic_code import same_shape


def _meta(value: object) -> object:
    return value.meta.get("val") if isinstance(value, Node) else value


def new_node(graph: Graph, before: Node, op_name: str, args: tuple, kwargs: dict | None = None,
         made: list | None = None) -> Node:
    op = ops.REGISTRY[op_name]
    with graph.inserting_before(before):
        node = graph.call_function(op, args, kwargs or {})
    made.append(node)  # before inferring: a node whose rule raises is erased with the rest
    node.meta["val"] = op.infer(*(_meta(a) for a in args), **(kwargs or {}))
    node.meta["source"] = before.meta.get("source")
    return node


def _elementwise(graph: Graph, node: Node, made: list) -> Node:
    """``f`` over the whole arrays, as graph nodes (``NotFusible`` if one has no kernel code)."""
    mask, *arrays = node.args
    stack: list = []
    for kind, *rest in node.kwargs["program"]:
        if kind == "leaf":
            stack.append(arrays[rest[0]])
        elif kind == "const":
            stack.append(rest[0])
        else:
            right, left = stack.pop(), stack.pop()
            op = ops.BINARY_OPERATORS[rest[0]]
            new = new_node(graph, node, op.name, (left, right), made=made)
            lower_elementwise(new)  # raises NotFusible
            stack.append(new)
    value = stack.pop()
    if not isinstance(value, Node) or not isinstance(_meta(value), ArrayMeta):
        raise NotFusible("the masked expression is not an array")
    return value


def _rewrite(graph: Graph, node: Node, made: list) -> Node:
    mask, *arrays = node.args
    shape = _meta(mask).shape
    if not all(same_shape(_meta(a).shape, shape) for a in arrays):
        raise NotFusible("a mask over leading axes only: the selection's rows are arrays")
    value = _elementwise(graph, node, made)
    dtype = _meta(value).dtype
    selected = new_node(graph, node, "where", (mask, value, dtype.type(0)), made=made)
    lower_elementwise(selected)
    want = _meta(node)
    if node.kwargs["kind"] == "sum":
        return new_node(graph, node, "sum", (selected,), made=made)
    acc = np.dtype(np.float64) if dtype.kind in "biu" else dtype
    total = new_node(graph, node, "sum", (selected,), {"dtype": acc}, made=made)
    count = new_node(graph, node, "sum", (mask,), made=made)
    mean = new_node(graph, node, "divide", (total, count), made=made)
    if _meta(mean).dtype != want.dtype:
        mean = new_node(graph, node, "astype", (mean,), {"dtype": want.dtype}, made=made)
    return mean


def rewrite_nodes(graph: Graph, op_name: str,
                  rewrite: Callable[[Graph, Node, list], Node]) -> None:
    """Replace each ``op_name`` node of ``graph`` by what ``rewrite(graph, node, made)`` builds
    before it (``made`` collects the new nodes): kept only when its result has the node's
    shape and dtype; an exception (no kernel code, a refused dtype...) or another result
    erases the new nodes and leaves the node as it was (a NumPy call)."""
    for node in list(graph.nodes):
        if getattr(node.target, "name", None) != op_name:
            continue
        made: list[Node] = []
        try:
            result = rewrite(graph, node, made)
        except Exception:  # noqa: BLE001 - whatever the reason, the node stays a NumPy call
            result = None
        if result is None or _meta(result) != _meta(node):
            for new in reversed(made):
                graph.erase_node(new)
            continue
        node.replace_all_uses_with(result)
        graph.erase_node(node)


def expand_masked_reductions(graph: Graph) -> None:
    """Rewrite each ``masked_reduce`` node of ``graph`` as a masked loop where it can be."""
    rewrite_nodes(graph, "masked_reduce", _rewrite)
