"""The fx graph: an ordered list of ``Node``s that the capture stage builds and the passes edit.

A graph reads its inputs (placeholders, always first), calls functions on them and ends with one
output node. Nodes live in a doubly linked list so that passes can insert, move and erase them
in constant time while iterating.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from npdynamo.fx.display import format_graph
from npdynamo.fx.lint import lint_graph
from npdynamo.fx.node import NODE_OPS, Node, map_arg, target_name
from npdynamo.fx.subgraphs import copy_subgraph_args
from npdynamo.generated import Names, to_identifier, unique_name
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

# The generated code calls ``slice(...)`` by name; a local of that name would shadow it.
_RESERVED_NAMES = frozenset({"slice"})


class _NodeList:
    """A live, ordered view of a graph's nodes; iterating survives erasing the current node."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = (lambda n: n._prev) if self._reverse else (lambda n: n._next)
        cur = step(root)
        while cur is not root:
            following = step(cur)
            yield cur
            cur = following
            # The node after the current one may have been erased meanwhile: skip erased ones.
            while cur is not root and cur._erased:
                cur = step(cur)

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, reverse=not self._reverse))

    def __repr__(self) -> str:
        return f"[{', '.join(n.name for n in self)}]"


class Graph:
    """A straight-line program over arrays: placeholders, ``call_function`` nodes, one output."""

    def __init__(self) -> None:
        self._root = Node(self, "_root", "root", None)
        self._len = 0
        self._used_names = Names(_RESERVED_NAMES)
        self._insert_point: _InsertPoint | None = None

    # -- building ----------------------------------------------------------------------------

    def placeholder(self, name: str,
                    meta: dict[str, Any] | ArrayMeta | ScalarMeta | None = None) -> Node:
        """A function input named ``name`` (made unique); it goes after the existing inputs.

        ``meta`` is merged into ``node.meta``; an ``ArrayMeta`` (its dimensions may be symbolic)
        or a ``ScalarMeta`` (a dynamic scalar) alone is taken as ``meta["val"]``.
        """
        node = self.create_node("placeholder", name, name=name)
        if isinstance(meta, (ArrayMeta, ScalarMeta)):
            node.meta["val"] = meta
        elif meta:
            node.meta.update(meta)
        return node

    def call_function(
        self,
        target: Any,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Node:
        """A call ``target(*args, **kwargs)``; the name defaults to the target's name."""
        if not callable(target):
            raise TypeError(f"a call_function target must be callable, not {target!r}")
        return self.create_node("call_function", target, args, kwargs, name)

    def output(self, value: Any) -> Node:
        """The graph's result: a node, or a tuple/list of nodes and constants."""
        if self.output_node is not None:
            raise ValueError(
                "this graph already has an output; change graph.output_node.args instead"
            )
        return self.create_node("output", "output", (value,), name="output")

    def create_node(
        self,
        op: str,
        target: Any,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Node:
        """The general constructor behind ``placeholder``/``call_function``/``output``.

        Placeholders go after the existing placeholders; other nodes go where an active
        ``inserting_before``/``inserting_after`` says, else at the end, before the output.
        """
        if op not in NODE_OPS:
            raise ValueError(f"unknown node kind {op!r}; expected one of {', '.join(NODE_OPS)}")
        node = Node(self, unique_name(to_identifier(name or target_name(target)), self._used_names),
                    op, target, args, kwargs)
        self._insert(node)
        return node

    def _insert(self, node: Node) -> None:
        if node.op == "placeholder":
            anchor = self._root._next
            while anchor is not self._root and anchor.op == "placeholder":
                anchor = anchor._next
            anchor.prepend(node)
        elif self._insert_point is not None:
            self._insert_point.insert(node)
        else:
            last = self._root._prev
            if node.op != "output" and last.op == "output":
                last.prepend(node)
            else:
                self._root.prepend(node)
        self._len += 1

    @contextmanager
    def inserting_before(self, node: Node) -> Iterator[None]:
        """Within the block, new non-placeholder nodes go just before ``node``, in order."""
        with self._inserting(_InsertPoint(self, node, after=False)):
            yield

    @contextmanager
    def inserting_after(self, node: Node) -> Iterator[None]:
        """Within the block, new non-placeholder nodes follow ``node``, in creation order."""
        with self._inserting(_InsertPoint(self, node, after=True)):
            yield

    @contextmanager
    def _inserting(self, point: _InsertPoint) -> Iterator[None]:
        saved, self._insert_point = self._insert_point, point
        try:
            yield
        finally:
            self._insert_point = saved

    def erase_node(self, node: Node) -> None:
        """Remove ``node``; it must have no users left."""
        if node.graph is not self or node._erased:
            raise ValueError(f"{node.name} is not a node of this graph")
        if node.users:
            users = ", ".join(u.name for u in node.users)
            raise ValueError(f"cannot erase {node.name}: it is still used by {users}")
        node._set_args_kwargs((), {})
        # Unlink but keep the node's own pointers: an iteration standing on it can step on.
        node._prev._next = node._next
        node._next._prev = node._prev
        node._erased = True
        self._len -= 1

    # -- reading -----------------------------------------------------------------------------

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order (a live view: ``len``, iteration, ``reversed``)."""
        return _NodeList(self)

    @property
    def placeholders(self) -> list[Node]:
        """The function inputs, in parameter order."""
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output_node(self) -> Node | None:
        """The output node, or ``None`` while the graph has none."""
        for node in reversed(self.nodes):
            if node.op == "output":
                return node
        return None

    def lint(self) -> None:
        """Check the graph's invariants; raises ``LintError`` naming the first bad node."""
        lint_graph(self)

    def copy(self) -> tuple[Graph, dict[Node, Node]]:
        """A deep copy of the structure (meta dicts copied shallowly; subgraphs held by
        control-flow nodes copied too) and the old->new node map."""
        new = Graph()
        mapping: dict[Node, Node] = {}
        for node in self.nodes:
            args = copy_subgraph_args(map_arg(node.args, lambda n: mapping.get(n, n)))
            kwargs = map_arg(node.kwargs, lambda n: mapping.get(n, n))
            copy = Node(new, node.name, node.op, node.target, args, kwargs)
            copy.meta = dict(node.meta)
            new._used_names.add(node.name)
            new._root.prepend(copy)
            new._len += 1
            mapping[node] = copy
        new._used_names.next_number = dict(self._used_names.next_number)
        return new, mapping

    def __str__(self) -> str:
        return format_graph(self)

    def __repr__(self) -> str:
        return f"<fx.Graph with {len(self.nodes)} nodes>"


class _InsertPoint:
    """Where new nodes go while an ``inserting_before``/``inserting_after`` block is active."""

    def __init__(self, graph: Graph, anchor: Node, after: bool) -> None:
        if not isinstance(anchor, Node) or anchor.graph is not graph or anchor._erased:
            raise ValueError(f"{anchor!r} is not a node of this graph")
        self.anchor = anchor
        self.after = after

    def insert(self, node: Node) -> None:
        if self.after:
            self.anchor.append(node)
            # The next node goes after this one so that creation order is program order.
            self.anchor = node
        else:
            self.anchor.prepend(node)
