"""Branches and loop bodies under the numba backend: each subgraph compiled on its own.

A ``cond``/``while_loop``/``fori_loop`` node runs as a NumPy call of the program (its op's
``impl`` is the Python loop), but the subgraphs it calls are compiled by the numba backend
first, so every iteration runs the body's fused kernels. A subgraph the backend cannot compile
falls back to its generated Python (with the backend's usual warning), like any graph. Each
subgraph's report is kept for ``explain``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npdynamo.backends.report import as_compiled
from npdynamo.fx.graph import Graph
from npdynamo.fx.subgraphs import is_subgraph, nodes_with_subgraphs


def compile_subgraphs(graph: Graph, backend: Callable[..., Any]) -> list[tuple[str, Any]]:
    """Replace every subgraph argument of ``graph``'s control-flow nodes by ``backend``'s
    compiled callable for it (placeholder metas as example inputs: nothing runs now). Returns
    (subgraph name, report) pairs, nested subgraphs first."""
    reports: list[tuple[str, Any]] = []
    for node in list(nodes_with_subgraphs(graph)):
        args = []
        for a in node.args:
            if is_subgraph(a):
                examples = [p.meta.get("val") for p in a.graph.placeholders]
                compiled = as_compiled(backend(a, examples))
                reports.append((a.name, compiled.report))
                a = compiled.run
            args.append(a)
        node.args = tuple(args)
    return reports
