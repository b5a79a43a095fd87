"""The ``eager`` backend: runs a graph's generated Python, one NumPy call per op.

Results are bitwise NumPy's. The functional graph computes every in-place update as a new array
(an assignment copies the array it assigns into; an update of an argument is copied into it by
the entry, ``meta["write_back"]``). Where nobody can tell the difference, the generated code
writes in place as NumPy does (``fx.codegen.Writes``), as the plans of ``backends/inplace.py``
find: ``setitem_plan`` (assign into the array itself), ``view_update_plan`` (a ufunc into the
view it is stored back into) and ``in_place_plan`` (ufuncs into the argument they update).
Writes into arguments are taken only on calls where nothing after them can raise
(``fp_state``). ``owning_loops`` (here: it generates the loop bodies) lets a loop's body write
the arrays the loop carries, into copies made before its first iteration.
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo.backends.constant_operands import with_array_constants
from npdynamo.backends.fp_state import ufuncs_cannot_raise
from npdynamo.backends.inplace import (
    in_place_plan,
    may_alias,
    op_name,
    same_array_meta,
    setitem_plan,
    temporary_plan,
    view_update_plan,
)
from npdynamo.backends.registry import register_backend
from npdynamo.backends.report import Compiled
from npdynamo.backends.scheduler import tuned_eager
from npdynamo.fx.codegen import Writes
from npdynamo.fx.graph import Graph
from npdynamo.fx.graph_module import generate_function
from npdynamo.fx.subgraphs import nodes_with_subgraphs, under_errstate
from npdynamo.ops.inplace_functions import mask_apply_into
from npdynamo.ops.registry import Op


@register_backend("eager")
def eager(gm, example_inputs: list) -> Compiled:
    """Return the graph module's generated ``forward``: results are bitwise NumPy's. A graph
    with independent parts worth running side by side is timed serial and scheduled
    (``scheduler.tuned_eager``)."""
    return tuned_eager(gm.graph, eager_forward(gm), may_alias(gm.graph),
                       temporary_plan(gm.graph, set()))


def eager_forward(gm) -> Callable[..., tuple]:
    """``gm``'s generated code with the eager backend's in-place choices (``in_place_plan``,
    ``setitem_plan``, ``view_update_plan``, ``temporary_plan``, ``owning_loops``) and its
    Python-number operands converted once (``constant_operands``): what the eager backend runs,
    and what other backends fall back to."""
    graph = owning_loops(gm.graph)
    graph = with_array_constants(graph or gm.graph) or graph
    writes = _writes(graph or gm.graph)
    if graph is None and not writes:
        return gm.forward
    return generate_function(graph or gm.graph, gm.name, writes=writes)


#: The ops the eager backend's generated code may store into their array in place.
_ASSIGNING = frozenset({"setitem", "mask_apply"})


def _writes(graph: Graph, owned: bool = False) -> Writes:
    assign, roots = setitem_plan(graph, owned, _ASSIGNING)
    into_inputs = in_place_plan(graph)
    if under_errstate(graph) and not owned:
        # an op in the user's np.errstate block may raise whatever the caller's state is:
        # an input written before it would be seen by the frame rerun in Python
        into_inputs, roots = {}, []
    into_views = view_update_plan(graph, [n for n in assign if op_name(n) == "setitem"])
    # a loop body writes the loop's copies of its carried arrays: a raise midway reruns the
    # frame in Python on the caller's intact arrays, so no per-iteration check is needed
    return Writes(into_inputs=into_inputs, check=_always if owned else ufuncs_cannot_raise,
                  assign=dict.fromkeys(assign), assign_inputs=dict.fromkeys(roots),
                  into_views=into_views,
                  into_temps=temporary_plan(graph, {*into_inputs, *into_views}),
                  assign_with={n: mask_apply_into for n in (*assign, *roots)
                               if op_name(n) == "mask_apply"})


def _always() -> bool:
    return True


def owning_loops(graph: Graph) -> Graph | None:
    """A copy of ``graph`` whose loops own their carried arrays, or None when no loop gains.

    A functional loop body copies a carried array for each ``A[i, i:] -= ...`` (``setitem``):
    a triangular loop copies the whole matrix every iteration, O(n^3) where NumPy writes O(n^2).
    Here such a body is generated as if each carried value were an input the entry writes back
    (``write_back``): its assignments and ufunc updates go into the carried array itself, where
    nothing reads the old contents afterwards (the same plans as for a graph's inputs). The loop
    then copies the carried arrays the body writes once, before its first iteration, so the
    arrays it was given are never written (a raise reruns the frame in Python on intact data),
    and a loop that runs no iteration returns them themselves, as Python's loop does.
    """
    new, _ = graph.copy()
    changed = False
    for node in list(nodes_with_subgraphs(new)):
        loop = getattr(node.target, "loop", None)  # (the body's position, inputs before carried)
        if loop is None:
            continue
        position, offset = loop
        body, carried = node.args[position], node.args[position + 1]
        owned = _owning_body(body, offset, len(carried))
        if owned is None:
            continue
        forward, written = owned
        args = list(node.args)
        args[position] = forward
        node.args = tuple(args)
        if written:
            node.target = _owning_op(node.target, position + 1, written)
        changed = True
    return new if changed else None


def _owning_body(body, offset: int, count: int) -> tuple[Callable, tuple[int, ...]] | None:
    """The body generated to write its carried arrays in place, and which carried positions
    it writes; None when neither it nor a loop inside it writes any. (A body whose inner loop
    writes owns nothing itself: the inner loop copies once per outer iteration, instead of a
    copy per inner one.)"""
    graph, _ = body.graph.copy()
    output = graph.output_node
    outs = output.args[0] if output is not None and output.args else ()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    holders = graph.placeholders[offset:offset + count]
    if len(outs) != count or len(holders) != count:
        return None
    output.meta = {**output.meta, "write_back": {
        k: p.name for k, p in enumerate(holders) if same_array_meta(p, p)}}
    nested = owning_loops(graph)  # (a copy: its placeholders keep their names)
    graph = nested or graph
    writes = _writes(graph, owned=True)
    names = {*writes.into_inputs.values(), *(s.args[0].name for s in writes.assign_inputs)}
    written = tuple(k for k, p in enumerate(holders) if p.name in names)
    if not written and nested is None:
        return None
    return generate_function(graph, body.name, writes=writes), written


def _owning_op(op, carried_position: int, written: tuple[int, ...]):
    """``op`` (a loop) whose impl first copies the carried arrays at ``written``, when the loop
    runs at least one iteration."""
    impl = op.impl

    def owning_impl(*args):
        carried = list(args[carried_position])
        fori = carried_position == 3
        if (args[0] < args[1]) if fori else args[0](*carried, *(args[3] if len(args) > 3
                                                                   else ()))[0]:
            for k in written:
                carried[k] = carried[k].copy(order="K")  # its memory order, as setitem keeps it
        return impl(*args[:carried_position], tuple(carried), *args[carried_position + 1:])

    owning_impl.__name__ = f"{op.name}_owning"
    return Op(op.name, owning_impl, op.rule, kind=op.kind, differentiable=False)
