"""Masked reductions as masked loops (a numba backend rewrite, before fusion).

``f(x[mask], y[mask]).sum()`` is captured as one ``masked_reduce`` node (``capture/masked.py``);
run as a NumPy call it makes each selection, then ``f`` of them, then the sum. Here, when every
array has the mask's shape, it becomes elementwise graph nodes over the whole arrays and a
reduction of ``where(mask, f(x, y), 0)``:

    sum:  sum(where(mask, f, 0))
    mean: dtype(sum(where(mask, f, 0), dtype=acc) / sum(mask))   (NumPy's own mean: the sum
          in the accumulation dtype, divided by the count, converted back)

which fusion puts in one kernel: one pass over the mask and the arrays, no selection made.
A masked write ``y[mask] = f(x[mask], ...)`` (a ``mask_apply`` node) becomes in the same way

    where(mask, f(x, ...) converted to y's dtype, y)

when the mask has ``y``'s shape (``mandelbrot``'s ``Z[I] = Z[I] ** 2 + C[I]``), and
``y[mask] = number`` (a ``setitem``) becomes ``where(mask, number, y)`` when the number
converts exactly (a Python float into floats, a bool or an int in the dtype's range, a
dynamic int, loop index or size into int64/float64).
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
from npdynamo.backends.numba.lowering import (
    SIZE_OPERAND_DTYPES,
    WIDE_INT_DTYPES,
    NotFusible,
    lower_elementwise,
)
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import SymInt
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


def _elementwise(graph: Graph, node: Node, arrays: list, made: list) -> Node:
    """``f`` over the whole arrays, as graph nodes (``NotFusible`` if one has no kernel code)."""
    stack: list = []
    for kind, *rest in node.kwargs["program"]:
        if kind == "leaf":
            stack.append(arrays[rest[0]])
        elif kind == "const":
            stack.append(rest[0])
        else:
            right, left = stack.pop(), stack.pop()
            op = ops.BINARY_OPERATORS[rest[0]]
            name = op.name
            if name == "power" and type(right) is int and right == 2 and \
                    _meta(left).dtype.kind in "fc":
                # the program is Python's operator: ndarray.__pow__ squares for 2
                new = new_node(graph, node, "square", (left,), made=made)
            else:
                new = new_node(graph, node, name, (left, right), made=made)
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
    value = _elementwise(graph, node, arrays, made)
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


def _rewrite_apply(graph: Graph, node: Node, made: list) -> Node:
    current, mask, *arrays = node.args
    meta = _meta(current)
    if not same_shape(_meta(mask).shape, meta.shape):
        raise NotFusible("a mask over leading axes only: the selection's rows are arrays")
    value = _elementwise(graph, node, arrays, made)
    if _meta(value).dtype != meta.dtype:  # converted as assignment converts (astype)
        value = new_node(graph, node, "astype", (value,), {"dtype": meta.dtype}, made=made)
        lower_elementwise(value)
    selected = new_node(graph, node, "where", (mask, value, current), made=made)
    lower_elementwise(selected)
    return selected


def _fits(value: object, dtype: np.dtype) -> bool:
    """Whether assigning the scalar ``value`` into an array of ``dtype`` converts it exactly
    as ``where`` converts it (no OverflowError, no float-to-int truncation)."""
    if isinstance(value, SymInt):
        return dtype in SIZE_OPERAND_DTYPES
    if isinstance(value, Node):  # a dynamic Python scalar (an int is in int64's range)
        kind = getattr(_meta(value), "type", None)
        return (kind is int and dtype in WIDE_INT_DTYPES) or (kind is float and dtype.kind == "f")
    if type(value) is bool:
        return True
    if type(value) is int:
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return info.min <= value <= info.max
        return dtype.kind in "fc"
    return type(value) is float and dtype.kind in "fc"


def _rewrite_mask_write(graph: Graph, node: Node, made: list) -> Node:
    target, index, value = node.args
    meta, mask = _meta(target), _meta(index)
    if node.kwargs or not isinstance(index, Node) or not isinstance(mask, ArrayMeta) \
            or mask.dtype.kind != "b" or not same_shape(mask.shape, meta.shape) \
            or not _fits(value, meta.dtype):
        raise NotFusible("not a whole-shape mask write of a number")
    selected = new_node(graph, node, "where", (index, value, target), made=made)
    lower_elementwise(selected)
    return selected


def expand_masked_reductions(graph: Graph) -> None:
    """Rewrite each ``masked_reduce`` and ``mask_apply`` node of ``graph`` as a masked loop
    where it can be."""
    rewrite_nodes(graph, "masked_reduce", _rewrite)
    rewrite_nodes(graph, "mask_apply", _rewrite_apply)
    rewrite_nodes(graph, "setitem", _rewrite_mask_write)
