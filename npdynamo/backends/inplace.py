"""The in-place and alias analysis of a graph: where generated code may write instead of copy.

The functional graph computes every update as a new array; NumPy itself writes in place. These
plans find where nobody can tell the difference, for the code a backend generates (the eager
backend's ``fx.codegen.Writes``, the numba backend's programs and loop functions):
``setitem_plan`` (assign into an array the graph made, or into an input the entry would copy
back), ``view_update_plan`` (a ufunc into the view it is stored back into), ``in_place_plan``
(ufuncs into the argument they update, when nothing after them can raise: ``cannot_raise``),
``temporary_plan`` (a ufunc into a temporary nothing reads afterwards) and ``may_alias`` (which
arrays each value may share memory with, for the scheduler and the numba program).
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo.backends.fp_state import is_plain_ufunc_call
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic_code import same_shape


def temporary_plan(graph: Graph, taken: set[Node]) -> dict[Node, Node]:
    """Elementwise ufunc calls to compute into the buffer of an operand that nothing reads
    afterwards: ``tanh(x @ w + b)`` allocates one array, not three. ufunc -> that operand.

    The operand must be an array a ufunc call of the graph made (matmul included; not one
    computed into an input or a view, ``taken``), whose memory nothing else shares, with the
    result's dtype and shape, read for the last time by this call and not returned. The values
    are the same (NumPy resolves any overlap of the other operands as if there were none);
    only a fresh allocation (and, for a large array, its page faults) is saved. Nobody outside
    can tell: the buffer was the graph's own and is never seen again.
    """
    order = [n for n in graph.nodes if n.op == "call_function"]
    aliases = may_alias(graph)
    read_until: dict[Node, float] = {}
    for i, node in enumerate(order):
        for used in node.all_input_nodes:
            for owner in aliases.get(used, ()):
                read_until[owner] = max(read_until.get(owner, -1), i)
    if graph.output_node is not None:
        for used in graph.output_node.all_input_nodes:
            for owner in aliases.get(used, ()):
                read_until[owner] = float("inf")
    plan: dict[Node, Node] = {}
    reused: set[Node] = set()
    for i, node in enumerate(order):
        if node in taken or not is_plain_ufunc_call(node) or node.target.impl.signature:
            continue  # (a gufunc such as matmul may not write into its own operand)
        for operand in node.args:
            if (isinstance(operand, Node) and operand not in reused and operand not in taken
                    and is_plain_ufunc_call(operand)
                    and aliases.get(operand) == frozenset({operand})
                    and read_until.get(operand) == i and same_array_meta(operand, node)):
                plan[node] = operand
                reused.add(operand)
                break
    return plan


def setitem_plan(graph: Graph, owned: bool = False,
                 assigning: frozenset[str] = frozenset({"setitem"})) -> tuple[list[Node],
                                                                            list[Node]]:
    """The ``setitem`` nodes that may assign into their array instead of a copy of it: those
    into arrays the graph made, and those into an input (``assign_inputs`` of ``Writes``).

    The functional ``setitem(x, index, value)`` copies ``x`` (``x[i, j:] -= ...`` in a loop of n
    rows copies the whole matrix n times, where NumPy writes one row). Assigning into ``x``
    itself computes the same values, and nobody can tell when ``x`` is an array the graph made
    (a ufunc's result, a copying ``setitem``'s, or a chain of in-place ones on such an array)
    and nothing that may share its memory (``x``, a view of it, anything an op that is neither
    a ufunc nor a ``setitem`` made from it) is read after the node or returned. The value may
    overlap ``x``: NumPy's assignment resolves that as if it did not. A raise inside leaves
    only the graph's own array changed.

    The first ``setitem`` into an input ``P`` itself qualifies too when the chain of
    assignments it starts is what the entry copies back into ``P`` (``meta["write_back"]``),
    nothing reads ``P``'s old contents after it, and nothing after it can raise (ufunc calls,
    views, and assignments of values of the array's dtype only, on calls where no ufunc can
    raise): then the input is written as NumPy writes it, with no copy in or out. With
    ``owned`` (a loop body's carried arrays, which the loop copied) what follows may raise.
    ``assigning``: the ops that assign into their first argument this way (the eager backend
    adds ``mask_apply``, ``y[mask] = f(y[mask], ...)``, which computes its value before it
    stores). Returns (assignments into graph-made arrays, assignments into inputs).
    """
    order = [n for n in graph.nodes if n.op == "call_function"]
    last_use: dict[Node, int] = {}
    for i, node in enumerate(order):
        for used in node.all_input_nodes:
            last_use[used] = i
    if graph.output_node is not None:
        for used in graph.output_node.all_input_nodes:
            last_use[used] = len(order)
    # which arrays (made by the graph, or inputs) each value may share memory with, and for
    # each such array the last position at which a value sharing its memory is read
    owners: dict[Node, frozenset[Node]] = {p: frozenset({p}) for p in graph.placeholders}
    read_until: dict[Node, int] = {p: last_use.get(p, -1) for p in graph.placeholders}
    chosen: dict[Node, None] = {}
    roots: dict[Node, int] = {}
    for i, node in enumerate(order):
        if op_name(node) in assigning and isinstance(node.args[0], Node):
            x = node.args[0]
            mine = owners.get(x, frozenset())
            owner = next(iter(mine)) if len(mine) == 1 else None
            if (owner is not None and (x is owner or x in chosen or x in roots)
                    and read_until[owner] <= i):
                (roots if x is owner and owner.op == "placeholder" else chosen)[node] = i
                shared = mine
            else:
                shared = frozenset({node})  # a copy: an array of its own
        else:
            shared = _shared_memory(node, owners)
        owners[node] = shared
        for owner in shared:
            read_until[owner] = max(read_until.get(owner, -1), last_use.get(node, -1))
    # (a loop's own carried arrays, ``owned``, may be written whatever follows: a raise leaves
    # only the loop's copies written)
    safe_from = 0 if owned else _trailing_start(order, cannot_raise)
    written_back = _written_back(graph)
    kept_roots = [root for root, i in roots.items() if i >= safe_from
                  and owners.get(written_back.get(root.args[0])) == frozenset({root.args[0]})]
    return list(chosen), kept_roots


def _written_back(graph: Graph) -> dict[Node, Node]:
    """Input placeholder -> the output node the entry copies into it."""
    output = graph.output_node
    targets = (output.meta.get("write_back") or {}) if output is not None else {}
    outs = output.args[0] if output is not None and output.args else ()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    holders = {p.name: p for p in graph.placeholders}
    return {holders[name]: outs[k] for k, name in targets.items()
            if name in holders and k < len(outs) and isinstance(outs[k], Node)}


def _trailing_start(order: list[Node], keep: Callable[[Node], bool]) -> int:
    """The first position from which every op of ``order`` satisfies ``keep``."""
    start = len(order)
    while start and keep(order[start - 1]):
        start -= 1
    return start


def cannot_raise(node: Node) -> bool:
    """No raise on a call where no ufunc can: a ufunc, a view, a plain assignment, a transpose,
    or a sum/product/mean over axes the capture checked (their only errors are floating-point
    ones, which ``ufuncs_cannot_raise`` rules out per call)."""
    return (is_plain_ufunc_call(node) or _basic_getitem(node) or _plain_setitem(node)
            or _plain_transpose(node) or _plain_reduction(node))


def _plain_transpose(node: Node) -> bool:
    return op_name(node) == "transpose" and not node.kwargs


def _plain_reduction(node: Node) -> bool:
    # (a quiet reduction: only floating-point errors on an array of a known rank)
    return (getattr(node.target, "quiet", False) and set(node.kwargs) <= {"axis", "keepdims"}
            and isinstance(node.args[0], Node)
            and isinstance(node.args[0].meta.get("val"), ArrayMeta))


def _basic_getitem(node: Node) -> bool:
    return op_name(node) == "getitem" and not node.kwargs and _basic(node.args[1])


def _plain_setitem(node: Node) -> bool:
    """An assignment that cannot raise or warn: a view's worth of values of the array's own
    dtype, or a Python number into a floating-point array."""
    if op_name(node) != "setitem" or node.kwargs or not _basic(node.args[1]):
        return False
    array, value = node.args[0].meta.get("val"), node.args[2]
    if not isinstance(array, ArrayMeta):
        return False
    if isinstance(value, Node):
        meta = value.meta.get("val")
        return isinstance(meta, ArrayMeta) and meta.dtype == array.dtype
    return type(value) in (int, float, bool) and array.dtype.kind == "f"


def view_update_plan(graph: Graph, assigned: list[Node]) -> dict[Node, Node]:
    """Ufunc calls to compute straight into the view of the array they are stored back into:
    ``x[i, j:] -= v`` as NumPy runs it (``subtract(x[i, j:], v, out=x[i, j:])``), with no new
    array and no copy back.

    For ``s = setitem(x, i, u)`` assigning into ``x`` (``setitem_plan``) where ``u = ufunc(g,
    ...)`` comes right before ``s`` and ``g = x[i]`` is a view (basic indexing) read by ``u``
    only: ``u`` has ``g``'s shape and ``x``'s dtype, so computing it into ``g`` writes exactly
    what the store would, and nothing reads ``g``'s old contents afterwards. Returns u -> g.
    """
    order = [n for n in graph.nodes if n.op == "call_function"]
    position = {n: i for i, n in enumerate(order)}
    plan: dict[Node, Node] = {}
    for store in assigned:  # graph-made arrays only: an input's view must never be written
        array, index, value = store.args
        if (not isinstance(value, Node) or position.get(value) != position[store] - 1
                or list(value.users) != [store] or not is_plain_ufunc_call(value)):
            continue
        view = value.args[0] if value.args else None
        if (not isinstance(view, Node) or op_name(view) != "getitem" or view.args[0] is not array
                or view.args[1] != index or not _basic(index) or list(view.users) != [value]
                or not same_array_meta(value, view)):
            continue
        plan[value] = view
    return plan


def _basic(index: object) -> bool:
    """Indexing that makes a view: ints, slices of ints, None and Ellipsis only."""
    items = index if isinstance(index, tuple) else (index,)
    return all(type(i) is int or i is None or i is Ellipsis
               or (type(i) is slice and all(b is None or type(b) is int
                                            for b in (i.start, i.stop, i.step)))
               for i in items)


def op_name(node: Node) -> str | None:
    """The name of the op a call node calls (None for a plain function)."""
    return getattr(node.target, "name", None)


def in_place_plan(graph: Graph) -> dict[Node, str]:
    """Output nodes to compute straight into the input they are copied back into: node -> name.

    Only ufunc calls in the graph's trailing run of calls that cannot raise (``cannot_raise``:
    ufuncs, views, transposes, sums; the backward and the updates of a training step) qualify,
    and the whole run is generated twice: computing into the inputs when, on the call, no ufunc
    can raise (``fp_state``), else as usual. So nothing runs after an input was written that
    could raise: a raise would leave it written when the entry reruns the frame in Python. A
    node qualifies when:

    * it is a plain ufunc call (one output, positional operands) whose result has the input's
      dtype and shape: ``ufunc(a, b, out=x)`` then computes exactly ``ufunc(a, b)``, with any
      overlap of operands and ``x`` resolved by NumPy as if there were none; later ops read
      the result, which is now the input itself, as NumPy's ``x += ...`` leaves it;
    * it is that output once, copied into only that input, which is not returned; the ufunc
      calls it is computed from that could live in the input too (``_update_chain``) do;
    * nothing that may hold the input's old contents (the input, and whatever a non-ufunc op
      made from it, possibly a view) is read after the first of them or returned. Other inputs never
      share memory with a written one: capture guards that (``NO_OVERLAP``/``OWNERS``).
    """
    output = graph.output_node
    targets = (output.meta.get("write_back") or {}) if output is not None else {}
    if not targets:
        return {}
    order = [n for n in graph.nodes if n.op == "call_function"]
    run = order[_trailing_start(order, cannot_raise):]
    outs = output.args[0] if output.args else ()
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    placeholders = {p.name: p for p in graph.placeholders}
    aliases = may_alias(graph)
    at = {n: i for i, n in enumerate(run)}
    plan: dict[Node, str] = {}
    for position, name in sorted(targets.items()):
        holder = placeholders.get(name)
        node = outs[position] if position < len(outs) else None
        if (holder is None or node not in at or not is_plain_ufunc_call(node) or holder in outs
                or outs.count(node) != 1 or name in plan.values()
                or not same_array_meta(node, holder)):
            continue
        if any(holder in aliases[v] for v in outs if isinstance(v, Node) and v is not node):
            continue
        chain = _update_chain(node, holder, at, outs)
        # from the longest chain down to the output alone: the first whose input's old contents
        # nobody reads after its first node
        while chain and (any(c in plan for c in chain) or any(
                holder in aliases[v] for n in run[at[chain[0]] + 1:] for v in n.all_input_nodes)):
            chain = chain[1:]
        plan.update(dict.fromkeys(chain, name))
    return plan


def _update_chain(last: Node, holder: Node, at: dict[Node, int], outs: tuple) -> list[Node]:
    """The ufunc calls, ending with ``last``, that may all compute into ``holder``: each one's
    predecessor is an operand of it with the input's dtype and shape that nothing reads after
    it (``m *= b1; m += (1 - b1) * g`` makes two: both go into ``m``, as in NumPy)."""
    chain = [last]
    while True:
        current = chain[-1]
        before = next((a for a in current.args if isinstance(a, Node) and a in at
                       and is_plain_ufunc_call(a) and a not in outs and a not in chain
                       and same_array_meta(a, holder)
                       and all(at.get(u, len(at)) <= at[current] for u in a.users)), None)
        if before is None:
            return chain[::-1]
        chain.append(before)


def same_array_meta(node: Node, holder: Node) -> bool:
    want, have = node.meta.get("val"), holder.meta.get("val")
    return (isinstance(want, ArrayMeta) and isinstance(have, ArrayMeta) and not want.scalar
            and not have.scalar and want.dtype == have.dtype
            and same_shape(want.shape, have.shape))


def may_alias(graph: Graph, narrow: Callable[[Node, dict], frozenset[Node] | None] | None = None
              ) -> dict[Node, frozenset[Node]]:
    """For each value, the arrays (inputs, or ufunc results) whose memory it may share.
    ``narrow(node, owners)``: a smaller set where the caller knows one (a loop's result), or
    None."""
    owners: dict[Node, frozenset[Node]] = {p: frozenset({p}) for p in graph.placeholders}
    for node in graph.nodes:
        if node.op == "call_function":
            known = narrow(node, owners) if narrow is not None else None
            owners[node] = known if known is not None else _shared_memory(node, owners)
    return owners


def _shared_memory(node: Node, owners: dict[Node, frozenset[Node]]) -> frozenset[Node]:
    """The arrays whose memory ``node``'s value may share: a ufunc's result, or a created
    array (``np.zeros``, ...), is a new array; anything else (a view, a reshape, an op
    returning one of its operands) may be any of its operands'."""
    if is_plain_ufunc_call(node) or getattr(node.target, "allocates", False):
        return frozenset({node})
    return frozenset().union(*(owners.get(a, frozenset()) for a in node.all_input_nodes))


def readers_run_first(node: Node, written: Node, order: dict[Node, int],
                      step_of: dict[Node, int], aliases: dict[Node, frozenset[Node]]) -> bool:
    """Whether every reader of ``written``'s memory (of any value ``aliases`` says may share
    it) that comes before ``node``, which writes that array in place, in the graph (``order``)
    also runs before it in the backend's steps (``step_of``: a node -> the position of the step
    that runs it; a fusion group's nodes share one). The plans above go by the graph's order; a
    backend that fuses ops may run an early reader of a view in a kernel after the assignment,
    together with later ops (``s = row + 1; a[:] = ...; t = s + row``): written in place, the
    array would show that reader the new values."""
    mine = aliases.get(written, frozenset())
    at, here = order[node], step_of.get(node, -1)
    for value, owners in aliases.items():
        if not owners & mine:
            continue
        for user in value.users:
            if user is not node and order.get(user, at) < at and step_of.get(user, -1) > here:
                return False
    return True
