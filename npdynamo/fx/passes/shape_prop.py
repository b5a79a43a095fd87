"""Shape/dtype propagation: fills every node's ``meta["val"]`` from the example inputs.

Backends and the autograd partitioner read these metas (buffer sizes, kernel signatures,
bytes saved). Each op's ``infer`` rule computes them without touching data; a target without a
rule is run on the concrete example inputs instead, which needs those inputs to be concrete.

Symbolic inputs: an example may be an ``ArrayMeta`` with symbolic dimensions or a
``ScalarMeta`` (a dynamic scalar). The rules then run inside a ``FactRecorder`` (``facts=``, or
a new one) and the facts they relied on are returned: the graph is valid where they hold
(``ops.shape_guards`` turns them into guards).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from npdynamo.errors import NpdynamoError
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node, map_arg, target_name
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import Fact, FactRecorder

_MISSING = object()


def _meta_of(value: Any) -> Any:
    """The meta of a concrete value: arrays become ``ArrayMeta``, other values stand for
    themselves (a Python number is known exactly at capture time)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return ArrayMeta.of(value)
    if type(value) in (tuple, list):
        return type(value)(_meta_of(v) for v in value)
    return value


def _nodes_needing_values(graph: Graph) -> set[Node]:
    """Nodes whose concrete value some rule-less target downstream will be called on."""
    needed: set[Node] = set()
    for node in reversed(graph.nodes):
        lacks_rule = node.op == "call_function" and getattr(node.target, "infer", None) is None
        if lacks_rule or node in needed:
            needed.update(node.all_input_nodes)
            needed.add(node)
    return needed


def _run_concrete(node: Node, values: dict[Node, Any]) -> Any:
    if any(n not in values for n in node.all_input_nodes):
        return _MISSING
    fn = getattr(node.target, "impl", node.target)
    return fn(*map_arg(node.args, values.__getitem__), **map_arg(node.kwargs, values.__getitem__))


def propagate_shapes(graph: Graph, example_inputs: Sequence[Any],
                     facts: FactRecorder | None = None) -> list[Fact]:
    """Set ``meta["val"]`` on every node, given one example per placeholder; return the facts.

    Examples may be arrays, NumPy scalars, ``ArrayMeta``s (symbolic dimensions allowed),
    ``ScalarMeta``s or Python values. A call node gets ``target.infer(*args, **kwargs)`` with
    nodes replaced by their metas; a target without ``infer`` runs on concrete values, so its
    inputs must trace back to concrete examples. The rules record their facts about symbolic
    sizes in ``facts`` (a new recorder when None); the return value is the recorder's facts.
    """
    recorder = facts if facts is not None else FactRecorder()
    with recorder:
        _propagate(graph, example_inputs)
    return recorder.facts


def _propagate(graph: Graph, example_inputs: Sequence[Any]) -> None:
    placeholders = graph.placeholders
    if len(example_inputs) != len(placeholders):
        raise ValueError(
            f"the graph has {len(placeholders)} inputs but {len(example_inputs)} examples "
            "were given"
        )
    metas: dict[Node, Any] = {}
    values: dict[Node, Any] = {}
    for node, example in zip(placeholders, example_inputs):
        if isinstance(example, (ArrayMeta, ScalarMeta)):
            metas[node] = example
        else:
            metas[node] = _meta_of(example)
            values[node] = example
        node.meta["val"] = metas[node]

    needed = _nodes_needing_values(graph)
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            value = node.args[0] if node.args else ()
            out = map_arg(value, metas.__getitem__)
            metas[node] = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        else:
            metas[node] = _call_meta(node, metas, values, node in needed)
        node.meta["val"] = metas[node]


def _arg_metas(args: Any, metas: dict[Node, Any]) -> Any:
    """``args`` with nodes replaced by their metas; in a slice, a loop index or an int computed
    from it is its size expression (``meta["size_expr"]``, ``ops.loop_index``)."""
    if isinstance(args, slice):
        return slice(*(a.meta["size_expr"] if isinstance(a, Node) and "size_expr" in a.meta
                       else _arg_metas(a, metas) for a in (args.start, args.stop, args.step)))
    if type(args) in (tuple, list):
        return type(args)(_arg_metas(a, metas) for a in args)
    if type(args) is dict:
        return {k: _arg_metas(v, metas) for k, v in args.items()}
    return map_arg(args, metas.__getitem__)


def _call_meta(node: Node, metas: dict[Node, Any], values: dict[Node, Any], needed: bool) -> Any:
    infer = getattr(node.target, "infer", None)
    inputs = getattr(node.target, "subgraph_inputs", None)
    try:
        if inputs is not None:  # branches and loop bodies first: the node's rule reads them
            args = map_arg(node.args, metas.__getitem__)
            for sub, sub_inputs in inputs(*args):
                _propagate(sub.graph, sub_inputs)
        if needed:
            value = _run_concrete(node, values)
            if value is not _MISSING:
                values[node] = value
        if infer is not None:
            return infer(*_arg_metas(node.args, metas), **_arg_metas(node.kwargs, metas))
    except Exception as exc:
        exc.add_note(f"(while propagating shapes through node {node.name!r})")
        raise
    if node not in values:
        raise NpdynamoError(
            f"cannot infer the shape of node {node.name!r}: its target "
            f"{target_name(node.target)} has no infer rule and its inputs are not all concrete "
            "(pass arrays rather than ArrayMetas as example inputs, or give the target an infer "
            "method)"
        )
    return _meta_of(values[node])
