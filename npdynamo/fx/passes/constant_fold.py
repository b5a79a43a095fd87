"""Constant folding: compute at compile time the calls whose inputs are all constants.

A pure call with no graph value among its arguments (``np.ones(3) * 2`` after capture, or what
``simplify`` leaves behind) is run once and its readers get the value. The value must be safe to
share between calls: NumPy and Python scalars always are; a small array only when every reader
makes a new array from it (elementwise ops and reductions), so that no caller ever receives it
or a view of it. A call that would raise or warn (overflow, division by zero) is left in the
graph, so that it warns at run time as NumPy does.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node, iter_nodes
from npdynamo.fx.subgraphs import in_subgraphs, is_subgraph
from npdynamo.ops.symbolic_code import has_symbols

#: Largest array (elements) folded into a constant.
MAX_FOLDED_ELEMENTS = 64
_SCALARS = (bool, int, float, complex)


def _shareable(value: Any, node: Node) -> bool:
    if type(value) in _SCALARS or isinstance(value, np.generic):
        return True
    if not isinstance(value, np.ndarray) or value.size > MAX_FOLDED_ELEMENTS:
        return False
    return bool(node.users) and all(
        u.op == "call_function" and getattr(u.target, "kind", "") in ("elementwise", "reduction")
        for u in node.users
    )


def constant_fold(graph: Graph) -> int:
    """Fold every foldable call in place (in program order, so chains fold); returns how many."""
    folded = in_subgraphs(graph, constant_fold)
    for node in list(graph.nodes):
        if node.op != "call_function" or node.is_impure():
            continue
        if any(is_subgraph(a) for a in node.args):
            continue  # running a whole loop while compiling: compile time would follow its length
        if any(True for _ in iter_nodes((node.args, node.kwargs))):
            continue
        if has_symbols((node.args, node.kwargs)):
            continue  # depends on the input sizes (``arange(s0)``): computed at run time
        impl = getattr(node.target, "impl", node.target)
        try:
            with np.errstate(all="raise"), warnings.catch_warnings():
                warnings.simplefilter("error")
                value = impl(*node.args, **node.kwargs)
        except Exception:  # noqa: S112 - it raises (or warns) at run time instead
            continue
        if not _shareable(value, node):
            continue
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        node.replace_all_uses_with(value)
        graph.erase_node(node)
        folded += 1
    return folded
