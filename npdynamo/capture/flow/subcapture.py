"""The state of a sub-capture: one branch or loop body being captured into its own graph.

A ``CaptureContext`` records every op into ``ctx.graph``: the function's own graph
(``ctx.root_graph``), or, while a ``SubCapture`` is active (``ctx.subcapture``, declared on the
context), that sub-capture's graph. Nothing else of the context is swapped: ``ctx.graph`` and
``ctx.lift`` are read through ``ctx.subcapture``. A sub-capture started inside another one (a
``cond`` in a loop body) has it as ``parent``; a graph value of an outer graph read inside is
*lifted*: it becomes one more placeholder of the subgraph, and the node that will hold the
subgraph passes the outer value in (``extra``).

Used by every former of ``flow/``: ``higher_order`` (``npdynamo.cond``/``while_loop``/
``fori_loop``), and the loops and branches of ordinary Python formed into those nodes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from npdynamo.capture.values import ArrayValue, ScalarInputValue, Value
from npdynamo.fx import Graph, GraphModule, Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

#: The hint of every refusal of a body that is not a function of its carried values.
CARRY_HINT = "keep loop state in arrays passed as the carried value, and write functions of them"


class SubCapture:
    """One branch or loop body being captured into its own graph."""

    def __init__(self, ctx, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.parent: SubCapture | None = ctx.subcapture
        self.graph = Graph()
        self.lifted: dict[Node, Node] = {}
        self.extra: list[Node] = []  # outer nodes, in the order of their placeholders
        self.watched: list[tuple[ArrayValue, Node]] = []  # outer arrays read, node when read

    def placeholder(self, name: str, meta: ArrayMeta | ScalarMeta) -> Node:
        return self.graph.placeholder(name, meta)

    def lift_node(self, node: Node) -> Node:
        """``node`` as seen inside this subgraph: itself, or the placeholder it was lifted to."""
        if node.graph is self.graph:
            return node
        if node in self.lifted:
            return self.lifted[node]
        if self.parent is not None:
            outer = self.parent.lift_node(node)
        elif node.graph is self.ctx.root_graph:
            outer = node
        else:
            raise self.ctx.unsupported(
                "a value computed inside a loop or branch body is used outside it (it escaped "
                "through an outer variable or container)", CARRY_HINT, kind="side_effect")
        meta = outer.meta.get("val")
        placeholder = self.graph.placeholder(
            outer.name, meta if isinstance(meta, (ArrayMeta, ScalarMeta)) else None)
        for key in ("size_symbol", "size_expr"):  # a size read from a value (ops.loop_index)
            if key in outer.meta:
                placeholder.meta[key] = outer.meta[key]
        self.lifted[node] = placeholder
        self.extra.append(outer)
        return placeholder

    def lift(self, value: Any) -> Any:
        """The node for a tracked value used by an op of this subgraph (``ctx.lift``)."""
        if isinstance(value, ArrayValue):
            node = value.node
            if node.graph is not self.graph:
                self.watched.append((value, node))
                return self.lift_node(node)
            return node
        if isinstance(value, ScalarInputValue):
            return self.lift_node(value.node)
        return value

    @contextmanager
    def active(self):
        """Ops recorded inside the block go into this subgraph (``CaptureContext.graph``)."""
        ctx = self.ctx
        outer, ctx.subcapture = ctx.subcapture, self
        try:
            yield self
        finally:
            ctx.subcapture = outer

    def finish(self, outputs: list[Value]) -> GraphModule:
        """Close the subgraph over ``outputs`` (leaves) and check it wrote into no outer array."""
        for value, node in self.watched:
            if value.node is not node:
                raise self.ctx.unsupported(
                    f"the function passed to npdynamo.{self.name.rsplit('_', 2)[0]} writes into "
                    "an array from outside it in place", CARRY_HINT, kind="side_effect")
        with self.active():
            self.graph.output(tuple(self.lift(v) if isinstance(v, Value) else v
                                    for v in (_leaf_payload(v) for v in outputs)))
        return GraphModule(self.graph, self.name)


def _leaf_payload(leaf: Value) -> Any:
    if isinstance(leaf, (ArrayValue, ScalarInputValue)):
        return leaf
    return leaf.value  # a Python number constant
