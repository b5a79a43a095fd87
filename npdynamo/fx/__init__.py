"""The graph IR between capture and the backends: nodes, graphs, generated code, passes.

Capture builds a ``Graph`` of ``Node``s; ``passes`` clean and annotate it; ``GraphModule``
turns it into one plain Python function that the backends compile or run.
"""

from npdynamo.fx import passes
from npdynamo.fx.graph import Graph
from npdynamo.fx.graph_module import GraphModule
from npdynamo.fx.interpreter import Interpreter
from npdynamo.fx.lint import LintError
from npdynamo.fx.node import Node, map_arg

__all__ = ["Graph", "GraphModule", "Interpreter", "LintError", "Node", "map_arg", "passes"]
