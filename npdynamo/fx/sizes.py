"""Symbolic sizes in a graph: which placeholder dimension each symbol is read from at run time.

A graph with symbolic sizes (``ops/symbolic.py``) has placeholders whose ``ArrayMeta`` holds
symbols (``s0``) and call arguments that may hold size expressions (``reshape(x, (s0, -1))``,
``arange(s0)``, ``x / s0``). Each symbol is bound from the first placeholder dimension that is
exactly that symbol; generated code (``codegen``, the numba program) reads it there
(``s0 = x.shape[0]``) and computes the expressions from it, so one graph serves every size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from npdynamo.errors import NpdynamoError
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.symbolic_code import free_symbol_names, symbol_name
from npdynamo.ops.unbacked import unbacked_names

if TYPE_CHECKING:
    from npdynamo.fx.graph import Graph
    from npdynamo.fx.node import Node


def symbol_origins(graph: Graph) -> dict[str, tuple[Node, int | None]]:
    """symbol name -> (placeholder, dimension) it is read from (the first place it appears);
    dimension None: the placeholder is the symbol's value (a loop index)."""
    origins: dict[str, tuple[Node, int | None]] = {}
    for p in graph.placeholders:
        if "size_symbol" in p.meta:  # a loop body's index (``ops.loop_index``): its value
            origins.setdefault(p.meta["size_symbol"], (p, None))
        meta = p.meta.get("val")
        if isinstance(meta, ArrayMeta):
            for d, size in enumerate(meta.shape):
                name = symbol_name(size)
                if name is not None:
                    origins.setdefault(name, (p, d))
    return origins


def symbols_used(graph: Graph) -> set[str]:
    """The symbols that call or output arguments of ``graph`` compute with."""
    used: set[str] = set()
    for node in graph.nodes:
        if node.op != "placeholder":
            used |= free_symbol_names((node.args, node.kwargs))
    return used


def unbound_symbols(graph: Graph) -> set[str]:
    """Symbols that the arguments or the array values of ``graph`` compute with and that no
    placeholder gives (a subgraph must read every size it uses from its own inputs)."""
    used = symbols_used(graph)
    for node in graph.nodes:
        meta = node.meta.get("val")
        if isinstance(meta, ArrayMeta):
            # (an unbacked size, ``ops.unbacked``, is never read: the ops compute it)
            used |= free_symbol_names(meta.shape) - set().union(
                *map(unbacked_names, meta.shape))
    return used - set(symbol_origins(graph))


def gives_symbol(node: Node, names: set[str]) -> bool:
    """Whether placeholder ``node`` has a dimension that is one of the symbols ``names``."""
    meta = node.meta.get("val")
    return node.meta.get("size_symbol") in names or isinstance(meta, ArrayMeta) and any(
        symbol_name(size) in names for size in meta.shape)


def unbacked_origins(sizes: Iterable[Any],
                     inputs: Iterable[Node]) -> dict[str, tuple[Node, int, int]]:
    """Where generated code reads each unbacked size (``ops.unbacked``) that ``sizes`` compute
    with: (an input array, its dimension that is that size plus a constant, the constant).
    Unbacked sizes are not read at entry (no placeholder gives them): a kernel over a slice
    with run-time bounds reads its length from the slice it is given, one over
    ``np.concatenate((np.nonzero(x)[0], [n]))`` the count from that array's length less 1.
    Raises ``NpdynamoError`` for one no input gives."""
    needed = set().union(*(unbacked_names(d) for d in sizes if isinstance(d, SymInt)))
    found: dict[str, tuple[Node, int, int]] = {}
    for node in inputs:
        meta = node.meta.get("val")
        if isinstance(meta, ArrayMeta):
            for d, size in enumerate(meta.shape):
                offset = dict(size.terms).get((), 0) if isinstance(size, SymInt) else 0
                name = symbol_name(size - offset) if isinstance(size, SymInt) else None
                if name in needed:
                    found.setdefault(name, (node, d, offset))
    missing = needed - set(found)
    if missing:
        raise NpdynamoError(f"the sizes {sorted(missing)} are known only when the graph runs, "
                            "and no input of the kernel gives them")
    return found


def symbol_prelude(graph: Graph, var: Callable[[str], str]) -> list[str]:
    """Lines binding every symbol the graph's arguments use: ``<var(s0)> = x.shape[0]``.

    Raises ``NpdynamoError`` for a symbol no placeholder dimension provides."""
    return symbol_reads(graph, symbols_used(graph), var)


def symbol_reads(graph: Graph, names: Iterable[str], var: Callable[[str], str]) -> list[str]:
    """Lines binding the symbols ``names`` from the placeholders' shapes (see above)."""
    origins = symbol_origins(graph)
    lines = []
    for name in sorted(names, key=lambda s: (len(s), s)):
        if name not in origins:
            raise NpdynamoError(f"the graph uses the size {name}, which no input dimension gives")
        node, d = origins[name]
        lines.append(f"{var(name)} = {node.name}" if d is None else
                     f"{var(name)} = {node.name}.shape[{d}]")
    return lines


def bind_symbols(graph: Graph, inputs: Sequence[Any]) -> dict[str, int]:
    """The value of every symbol of ``graph``'s placeholders for the concrete ``inputs``."""
    origins = symbol_origins(graph)
    if not origins:
        return {}
    index = {p: i for i, p in enumerate(graph.placeholders)}
    return {name: inputs[index[p]] if d is None else inputs[index[p]].shape[d]
            for name, (p, d) in origins.items()}
