"""``Interpreter``: runs a graph node by node, with one overridable method per node kind.

Where ``GraphModule`` runs generated code for speed, the interpreter is the hook for stages that
need to see each value as it is produced (checking, re-tracing, debugging). It calls each
target itself, so whatever an op does when called (e.g. record on a gradient tape) happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from npdynamo.errors import NpdynamoError
from npdynamo.fx.graph import Graph
from npdynamo.fx.graph_module import GraphModule
from npdynamo.fx.node import Node, map_arg
from npdynamo.fx.sizes import bind_symbols
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.symbolic_code import concretize, has_symbols


class Interpreter:
    """Evaluate a graph on concrete inputs; ``env`` maps each node run so far to its value."""

    def __init__(self, module_or_graph: GraphModule | Graph) -> None:
        if isinstance(module_or_graph, GraphModule):
            self.module: GraphModule | None = module_or_graph
            self.graph = module_or_graph.graph
        else:
            self.module = None
            self.graph = module_or_graph
        self.env: dict[Node, Any] = {}
        self._inputs: Iterator[Any] = iter(())
        self.sizes: dict[str, int] = {}  # symbolic sizes of this run: symbol -> value

    def run(self, *args: Any) -> tuple:
        """Run the whole graph on ``args`` (one per placeholder); returns the output tuple."""
        expected = len(self.graph.placeholders)
        if len(args) != expected:
            raise TypeError(f"the graph takes {expected} inputs but {len(args)} were given")
        self.env = {}
        self._inputs = iter(args)
        self.sizes = bind_symbols(self.graph, args)
        for node in self.graph.nodes:
            value = self.run_node(node)
            if node.op == "output":
                return value
            self.env[node] = value
        raise NpdynamoError("the graph has no output node")

    def run_node(self, node: Node) -> Any:
        """Fetch ``node``'s arguments from ``env`` and dispatch on its kind."""
        args = map_arg(node.args, self._fetch)
        kwargs = map_arg(node.kwargs, self._fetch)
        if self.sizes and has_symbols((args, kwargs)):
            args, kwargs = concretize(args, self.sizes), concretize(kwargs, self.sizes)
        return getattr(self, node.op)(node, node.target, args, kwargs)

    def _fetch(self, node: Node) -> Any:
        try:
            return self.env[node]
        except KeyError:
            raise NpdynamoError(f"node {node.name!r} is used before it has a value") from None

    def placeholder(self, node: Node, target: Any, args: tuple, kwargs: dict) -> Any:
        """The next input value."""
        return next(self._inputs)

    def call_function(self, node: Node, target: Any, args: tuple, kwargs: dict) -> Any:
        """Call the node's target; branches and loop bodies run in interpreters of this class."""
        if any(is_subgraph(a) for a in args):
            args = tuple(self._subinterpreter(a) if is_subgraph(a) else a for a in args)
        return target(*args, **kwargs)

    def _subinterpreter(self, sub: GraphModule) -> Any:
        def run(*inputs: Any) -> tuple:
            return type(self)(sub).run(*inputs)

        return run

    def output(self, node: Node, target: Any, args: tuple, kwargs: dict) -> tuple:
        """The graph's result as a tuple, like ``GraphModule.__call__`` returns it."""
        value = args[0] if args else ()
        return tuple(value) if isinstance(value, (tuple, list)) else (value,)
