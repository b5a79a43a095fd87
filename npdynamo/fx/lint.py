"""Graph invariants: what every stage after capture may assume, checked by ``Graph.lint()``.

Passes and code generation trust these facts (topological order, consistent ``users``, one
output at the end, inputs first); a violation is reported naming the node it was found at.
"""

from __future__ import annotations

import keyword
from typing import TYPE_CHECKING

from npdynamo.errors import NpdynamoError
from npdynamo.fx.node import NODE_OPS, Node, iter_nodes, map_arg, target_name
from npdynamo.fx.sizes import symbol_origins, symbols_used
from npdynamo.fx.subgraphs import is_subgraph, subgraphs_of

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph


class LintError(NpdynamoError):
    """A graph breaks one of the IR's invariants; ``node`` is where it was found."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


def _describe(node: Node) -> str:
    if node.op == "call_function":
        return f"node {node.name!r} (call to {target_name(node.target)})"
    return f"{node.op} node {node.name!r}"


def lint_graph(graph: Graph) -> None:
    """Raise ``LintError`` for the first invariant ``graph`` violates."""
    listed = list(graph.nodes)
    if len(listed) != len(graph.nodes):
        raise LintError(f"the graph counts {len(graph.nodes)} nodes but lists {len(listed)}")
    members = set(listed)
    # what each node reads according to its args/kwargs, worked out once: checking every user
    # of a node by walking the user's arguments again was quadratic in a node's fan-in
    reads = {node: dict.fromkeys([*iter_nodes(node.args), *iter_nodes(node.kwargs)])
             for node in listed}
    defined: set[Node] = set()
    names: dict[str, Node] = {}
    output: Node | None = None
    body_started = False

    for node in listed:
        where = _describe(node)
        if node.graph is not graph:
            raise LintError(f"{where} belongs to another graph", node)
        if node._next._prev is not node or node._prev._next is not node:
            raise LintError(f"the node list is broken around {where}", node)
        if node.op not in NODE_OPS:
            raise LintError(f"{where} has unknown kind {node.op!r}", node)
        if not node.name.isidentifier() or keyword.iskeyword(node.name):
            raise LintError(f"{where}: its name is not a valid Python identifier", node)
        if node.name in names:
            raise LintError(f"{where} has the same name as an earlier node", node)
        names[node.name] = node

        if node.op == "output" and output is not None:
            raise LintError(f"duplicate output: {where} follows output {output.name!r}", node)
        if output is not None:
            raise LintError(f"{where} comes after the output {output.name!r}", node)
        if node.op == "placeholder":
            if body_started:
                raise LintError(f"{where} comes after a non-placeholder node", node)
        else:
            body_started = True
        if node.op == "call_function" and not callable(node.target):
            raise LintError(f"{where} has a target that is not callable", node)

        if node.op == "call_function" and any(is_subgraph(a) for a in node.args):
            _check_control_flow(node, where)
        _check_inputs(graph, node, where, defined, members, reads[node])
        _check_users(node, where, members, reads)
        defined.add(node)
        if node.op == "output":
            output = node

    if output is None:
        raise LintError("the graph has no output node")
    unbound = symbols_used(graph) - set(symbol_origins(graph))
    if unbound:
        raise LintError(f"the graph computes with the sizes {sorted(unbound)}, which no input "
                        "dimension gives")


def _check_inputs(graph: Graph, node: Node, where: str, defined: set, members: set,
                  actual: dict) -> None:
    if set(actual) != set(node.all_input_nodes):
        raise LintError(f"{where}: its recorded inputs do not match its args/kwargs", node)
    for inp in actual:
        if inp.graph is not graph:
            raise LintError(f"{where} reads {inp.name!r}, a node of another graph", node)
        if inp not in members:
            raise LintError(f"{where} reads {inp.name!r}, which is not in the graph", node)
        if inp not in defined:
            raise LintError(
                f"{where} reads {inp.name!r} before it is defined (not in topological order)",
                node,
            )
        if node not in inp.users:
            raise LintError(f"{where} reads {inp.name!r} but is missing from its users", node)


def _check_users(node: Node, where: str, members: set, reads: dict) -> None:
    for user in node.users:
        if user not in members:
            raise LintError(f"{where} lists {user.name!r} as a user, but it is not in the graph")
        if node not in reads[user]:
            raise LintError(f"{where} lists {user.name!r} as a user, but it does not read it", node)


def _check_control_flow(node: Node, where: str) -> None:
    """Each subgraph is a valid graph, and where the metas are known, the node's rule holds:
    carried values keep their dtype and shape through a loop body, both branches of a cond
    return the same kinds of values."""
    for sub in subgraphs_of(node):
        try:
            lint_graph(sub.graph)
        except LintError as exc:
            raise LintError(f"{where}: its subgraph {sub.name}: {exc}", node) from exc
    infer = getattr(node.target, "infer", None)
    metas = [a.meta.get("val") for a in node.all_input_nodes]
    if infer is None or any(m is None for m in metas):
        return
    lookup = {a: a.meta["val"] for a in node.all_input_nodes}
    try:
        infer(*map_arg(node.args, lookup.__getitem__), **map_arg(node.kwargs, lookup.__getitem__))
    except Exception as exc:
        raise LintError(f"{where}: {exc}", node) from exc
