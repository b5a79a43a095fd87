"""Human-readable views of a graph: the IR listing (``str(graph)``) and the node table.

Both are for people reading a captured program (``explain``, logs, the demo); nothing parses
them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from npdynamo.fx.node import Node, target_name
from npdynamo.fx.subgraphs import is_subgraph, nodes_with_subgraphs, subgraphs_of
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph


def format_arg(a: Any) -> str:
    """An argument as it would read in code: nodes by name, constants by ``repr``."""
    if isinstance(a, Node):
        return a.name
    if is_subgraph(a):
        return a.name
    if type(a) is tuple:
        inner = ", ".join(format_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if type(a) is list:
        return "[" + ", ".join(format_arg(x) for x in a) + "]"
    if type(a) is dict:
        return "{" + ", ".join(f"{k!r}: {format_arg(v)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        parts = [format_arg(p) for p in (a.start, a.stop, a.step)]
        return f"slice({', '.join(parts)})"
    return repr(a)


def format_call_args(node: Node) -> str:
    """``node``'s arguments as a call's argument list, without the parentheses."""
    parts = [format_arg(a) for a in node.args]
    parts += [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]
    return ", ".join(parts)


def _shape_dtype(val: Any) -> tuple[str, str]:
    """The shape and dtype columns for a ``meta["val"]`` (blank when unknown)."""
    if isinstance(val, ArrayMeta):
        shape = "(" + ", ".join(map(str, val.shape)) + ("," if val.ndim == 1 else "") + ")"
        return shape, ("scalar " if val.scalar else "") + str(val.dtype)
    if isinstance(val, (tuple, list)) and val and all(isinstance(v, ArrayMeta) for v in val):
        cols = [_shape_dtype(v) for v in val]
        return " ".join(c[0] for c in cols), " ".join(c[1] for c in cols)
    if isinstance(val, ScalarMeta):
        return "", str(val)
    if val is None or isinstance(val, (tuple, list)):
        return "", ""
    return "", type(val).__name__


def format_graph(graph: Graph) -> str:
    """The IR listing: one line per node, with shapes/dtypes where ``meta["val"]`` has them."""

    def typed(node: Node) -> str:
        val = node.meta.get("val")
        return f"{node.name}: {val}" if isinstance(val, (ArrayMeta, ScalarMeta)) else node.name

    params = ", ".join(typed(p) for p in graph.placeholders)
    lines = [f"graph({params}):"]
    for node in graph.nodes:
        if node.op == "call_function":
            call = f"{target_name(node.target)}({format_call_args(node)})"
            lines.append(f"    {typed(node)} = {call}")
        elif node.op == "output":
            lines.append(f"    return {format_arg(node.args[0] if node.args else None)}")
    # the branches and loop bodies, each listed under the graph that holds it
    for node in nodes_with_subgraphs(graph):
        for sub in subgraphs_of(node):
            inner = format_graph(sub.graph).splitlines()
            lines.append(f"    {sub.name} = {inner[0]}")
            lines += [f"    {line}" for line in inner[1:]]
    return "\n".join(lines)


def format_table(graph: Graph) -> str:
    """One row per node: kind, name, target, args, shape, dtype; columns padded to align."""
    header = ("kind", "name", "target", "args", "shape", "dtype")
    rows = [header]
    for node in graph.nodes:
        target = target_name(node.target) if node.op == "call_function" else str(node.target)
        args = format_call_args(node) if node.op != "placeholder" else ""
        rows.append((node.op, node.name, target, args, *_shape_dtype(node.meta.get("val"))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
