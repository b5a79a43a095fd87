"""``GraphModule``: a graph together with the Python function generated from it.

This is what capture hands to the backends. The function is compiled once (and again on
``recompile()``), and its source is registered with ``linecache`` so tracebacks through
generated code show the generated lines.
"""

from __future__ import annotations

import itertools
import linecache
import weakref
from collections.abc import Callable
from typing import Any

from npdynamo.fx.codegen import generate_source
from npdynamo.fx.display import format_table
from npdynamo.fx.graph import Graph
from npdynamo.fx.subgraphs import register_subgraph_type

_file_ids = itertools.count()


def _compile(source: str, fn_name: str, namespace: dict[str, Any]) -> Callable[..., tuple]:
    filename = f"<npdynamo-graph-{next(_file_ids)}>"
    code = compile(source, filename, "exec")
    namespace = {"__name__": "npdynamo.fx.generated", **namespace}
    exec(code, namespace)
    fn = namespace[fn_name]
    # An entry with no mtime is never evicted by linecache.checkcache; drop it with the function.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(fn, linecache.cache.pop, filename, None)
    return fn


def generate_function(graph: Graph, name: str = "forward", **options: Any) -> Callable[..., tuple]:
    """The function ``generate_source(graph, name, **options)`` defines, compiled."""
    source, namespace = generate_source(graph, name, **options)
    return _compile(source, name, namespace)


@register_subgraph_type
class GraphModule:
    """A graph and its generated Python function; calling it returns the tuple of outputs."""

    def __init__(self, graph: Graph, name: str = "forward") -> None:
        self.graph = graph
        self.name = name
        self.code: str
        self.forward: Callable[..., tuple]
        self.recompile()

    def recompile(self) -> None:
        """Regenerate ``code`` and ``forward`` after the graph was edited."""
        self.graph.lint()
        source, namespace = generate_source(self.graph, self.name)
        self.forward = _compile(source, self.name, namespace)
        self.code = source

    def generate_forward(self, **options: Any) -> Callable[..., tuple]:
        """A variant of ``forward`` generated with ``generate_source``'s ``options`` (a backend's
        own choices, such as ``writes``); ``code`` keeps showing the plain one."""
        return generate_function(self.graph, self.name, **options)

    def __call__(self, *args: Any) -> tuple:
        return self.forward(*args)

    def print_tabular(self) -> str:
        """Print one row per node (kind, name, target, args, shape, dtype); return the text."""
        table = format_table(self.graph)
        print(table)
        return table

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"<fx.GraphModule {self.name} with {len(self.graph.nodes)} nodes>"
