"""The ``eager`` backend: runs a graph's generated Python, one NumPy call per op.

Results are bitwise NumPy's. One liberty with the order: an in-place update of an argument
(``m *= b1``, ``p -= lr * g``) is a new array in the functional graph, which the entry copies
into the argument afterwards (capture marks these outputs, ``meta["write_back"]``). Where it is
exact, the eager backend computes such a ufunc straight into the argument instead (``out=``), as
NumPy's own in-place operator does, saving an allocation and a copy per update: see
``in_place_plan`` for when.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from npdynamo import progress
from npdynamo.backends.fp_state import is_plain_ufunc_call, ufuncs_cannot_raise
from npdynamo.backends.registry import register_backend
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic_code import same_shape


@register_backend("eager")
def eager(gm, example_inputs: list) -> Callable[..., tuple]:
    """Return the graph module's generated ``forward``: results are bitwise NumPy's."""
    progress.end_capture()
    plan = in_place_plan(gm.graph)
    if not plan:
        return gm.forward
    return gm.generate_forward(in_place=plan, in_place_check=ufuncs_cannot_raise)


def in_place_plan(graph: Graph) -> dict[Node, str]:
    """Output nodes to compute straight into the input they are copied back into: node -> name.

    Only nodes of the graph's trailing run of ufunc calls qualify, and the whole run is generated
    twice: computing into the inputs when, on the call, no ufunc can raise (``fp_state``), else
    as usual. So nothing runs after an input was written that could raise: a raise would leave
    it written when the entry reruns the frame in Python. A node qualifies when:

    * it is a plain ufunc call (one output, positional operands) whose result has the input's
      dtype and shape: ``ufunc(a, b, out=x)`` then computes exactly ``ufunc(a, b)``, with any
      overlap of operands and ``x`` resolved by NumPy as if there were none; later ops read
      the result, which is now the input itself, as NumPy's ``x += ...`` leaves it;
    * it is that output once, copied into only that input, which is not returned;
    * nothing that may hold the input's old contents (the input, and whatever a non-ufunc op
      made from it, possibly a view) is read by a later op or returned. Other inputs never
      share memory with a written one: capture guards that (``NO_OVERLAP``/``OWNERS``).
    """
    output = graph.output_node
    targets = (output.meta.get("write_back") or {}) if output is not None else {}
    if not targets:
        return {}
    run = _trailing_ufunc_run(graph)
    outs = output.args[0] if output.args else ()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    placeholders = {p.name: p for p in graph.placeholders}
    aliases = _may_alias(graph)
    plan: dict[Node, str] = {}
    for position, name in sorted(targets.items()):
        holder = placeholders.get(name)
        node = outs[position] if position < len(outs) else None
        if (holder is None or node not in run or holder in outs or outs.count(node) != 1
                or name in plan.values() or not _same_array_meta(node, holder)):
            continue
        later = run[run.index(node) + 1:]
        if any(holder in aliases[v] for n in later for v in n.all_input_nodes):
            continue
        if any(holder in aliases[v] for v in outs if isinstance(v, Node) and v is not node):
            continue
        plan[node] = name
    return plan


def _trailing_ufunc_run(graph: Graph) -> list[Node]:
    run: list[Node] = []
    for node in reversed(graph.nodes):
        if node.op == "output":
            continue
        if not is_plain_ufunc_call(node):
            break
        run.append(node)
    return run[::-1]


def _same_array_meta(node: Node, holder: Node) -> bool:
    want, have = node.meta.get("val"), holder.meta.get("val")
    return (isinstance(want, ArrayMeta) and isinstance(have, ArrayMeta) and not want.scalar
            and not have.scalar and want.dtype == have.dtype
            and same_shape(want.shape, have.shape))


def _may_alias(graph: Graph) -> dict[Node, set[Node]]:
    """For each value, the placeholders whose memory it may share: a ufunc's result is a new
    array; anything else (a view, a reshape, an op returning one of its operands) may be any of
    its operands."""
    aliases: dict[Node, set[Node]] = {}
    for node in graph.nodes:
        if node.op == "placeholder":
            aliases[node] = {node}
        elif node.op == "call_function":
            impl = getattr(node.target, "impl", node.target)
            if isinstance(impl, np.ufunc) and not node.kwargs:
                aliases[node] = set()
            else:
                aliases[node] = set().union(*(aliases.get(a, set())
                                              for a in node.all_input_nodes))
    return aliases
