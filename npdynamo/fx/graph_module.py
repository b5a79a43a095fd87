"""``GraphModule``: a graph together with the Python function generated from it.

This is what capture hands to the backends. The function is compiled once (and again on
``recompile()``). Its code carries the user's file and lines (``user_lines``), so warnings and
tracebacks from it name the user's code; the generated source is ``code`` here and each
generated function's ``__npdynamo_source__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npdynamo.fx.codegen import generate_source_with_lines
from npdynamo.fx.display import format_table
from npdynamo.fx.graph import Graph
from npdynamo.fx.subgraphs import register_subgraph_type
from npdynamo.fx.user_lines import compile_at_user_lines, user_namespace
from npdynamo.generated import define, file_name


def _compile(
    source: str, fn_name: str, namespace: dict[str, Any], line_sources: dict[int, tuple]
) -> Callable[..., tuple]:
    """Compile the generated ``source``. Its code carries the user's file and lines where its
    ops come from one file (``user_lines``), so NumPy's warnings and tracebacks name them; else
    a ``<npdynamo-graph-N>`` file registered with ``linecache``."""
    generated = file_name("graph")
    at_user = compile_at_user_lines(source, line_sources) if line_sources else None
    base = {"__name__": "npdynamo.fx.generated"}
    if at_user is not None:
        code, filename = at_user
        fn = define(code, fn_name, {**base, **user_namespace(filename), **namespace}, text=source)
    else:
        fn = define(source, fn_name, {**base, **namespace}, filename=generated)
    # a name no region hook captures (``<...>``), whatever file the code names
    fn.__code__ = fn.__code__.replace(co_name=generated, co_qualname=generated)
    return fn


def generate_function(graph: Graph, name: str = "forward", **options: Any) -> Callable[..., tuple]:
    """The function ``generate_source(graph, name, **options)`` defines, compiled."""
    source, namespace, line_sources = generate_source_with_lines(graph, name, **options)
    return _compile(source, name, namespace, line_sources)


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
        source, namespace, line_sources = generate_source_with_lines(self.graph, self.name)
        self.forward = _compile(source, self.name, namespace, line_sources)
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
