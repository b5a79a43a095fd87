"""The named pass pipelines: which graph passes run, in which order, at each stage.

Each stage that cleans a graph runs one pipeline by name, so the order of the passes is written
once, here:

* ``"compile"``: every captured graph, before a backend sees it (``backends.compile``);
* ``"joint"``: the forward-and-backward graph autograd builds (``autograd.joint``);
* ``"codegen"``: a backend's copy of a graph before it generates code from it (the numba
  backend, after its own rewrites).
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo.fx.graph import Graph
from npdynamo.fx.passes.constant_fold import constant_fold
from npdynamo.fx.passes.cse import common_subexpression_elimination as cse
from npdynamo.fx.passes.dce import dead_code_elimination as dce
from npdynamo.fx.passes.outputs import distinct_outputs, elide_self_stores, prune_inputs
from npdynamo.fx.passes.simplify import simplify

# DCE before CSE: CSE then hashes only live nodes; DCE again after a pass that leaves dead ones.
PIPELINES: dict[str, tuple[Callable[[Graph], object], ...]] = {
    "compile": (dce, cse, elide_self_stores, dce, distinct_outputs, prune_inputs),
    "joint": (dce, cse, dce),
    "codegen": (simplify, constant_fold, cse, dce),
}


def run_pipeline(graph: Graph, name: str) -> Graph:
    """Run the passes of pipeline ``name`` on ``graph`` in place; returns ``graph``."""
    for graph_pass in PIPELINES[name]:
        graph_pass(graph)
    return graph
