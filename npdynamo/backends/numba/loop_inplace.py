"""Where the numba loop writer may write arrays in place (used by ``loop_writer.Writer``).

A loop program owns the arrays its loops carry: it copies each once, before the loop that
first writes it (a loop of no iteration returns its arguments themselves), and from then on
an assignment may write into that copy instead of a fresh one when nothing reads the old
contents afterwards. These rules extend that ownership to nested loops and ``cond`` branches
(the enclosing loop's copy serves them: no copy per inner loop or per branch) and to
assignments whose earlier readers only took elements or products, so a scalar loop nest
(Floyd-Warshall, Nussinov, Cholesky by rows) writes its matrix in place as hand-written
numba does. ``stays_inside`` says which arrays are dead at the end of an iteration (one
buffer then serves every iteration), also through a nested loop that carries one
(Gram-Schmidt's column copy, which its inner loop updates in place).
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo.backends.inplace import may_alias, readers_run_first, setitem_plan
from npdynamo.backends.numba.direct_writes import graph_outputs
from npdynamo.backends.numba.fusion import FusionGroup
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta


def _name(node: Node) -> str:
    return getattr(node.target, "name", "")


def node_meta(value: object) -> object:
    return value.meta.get("val") if isinstance(value, Node) else None


def _numbers_only(node: Node) -> bool:
    """Whether ``node`` is a ``cond`` or a loop (an op with subgraphs, written out where it
    stands) whose results are all numbers (a score computed from ``H[i - 1, j - 1]``):
    whatever it read of an array, it read there and holds no view of it afterwards."""
    if getattr(node.target, "subgraph_inputs", None) is None:
        return False
    meta = node_meta(node)
    metas = meta if isinstance(meta, (tuple, list)) else (meta,)
    return bool(metas) and all(isinstance(m, ScalarMeta) or (
        isinstance(m, ArrayMeta) and m.scalar) for m in metas)


class InPlacePlan:
    """The writer's in-place bookkeeping: ``in_place`` (setitems that write their array),
    ``owners`` (per loop body being written: the carried positions it writes, its carried
    placeholders), ``shared`` (nested loops writing into the enclosing loop's array) and
    ``written`` (the carried positions of the loop body just written)."""

    def __init__(self) -> None:
        self.in_place: set[Node] = set()
        self.written: tuple[int, ...] = ()
        self.owners: list[tuple[list[int], list[Node]]] = []
        self.shared: dict[Node, set[int]] = {}
        self._aliases: dict[int, tuple[Graph, dict]] = {}  # per graph: may_alias, narrowed
        self._steps: dict[int, tuple[Graph, dict, dict]] = {}  # per graph: its order, steps

    def plan_steps(self, graph: Graph, steps: list) -> None:
        """The order the writer runs ``graph``'s steps in (its partition's: ``readers_ran``)."""
        order = {n: k for k, n in enumerate(graph.nodes)}
        step_of = {node: k for k, step in enumerate(steps)
                   for node in (step.nodes if isinstance(step, FusionGroup) else (step,))}
        self._steps[id(graph)] = (graph, order, step_of)

    def readers_ran(self, node: Node, written: Node) -> bool:
        """Whether every reader of ``written``'s memory that comes before ``node`` in its graph
        runs before it in the written code (``inplace.readers_run_first``): else ``node`` may
        not write it in place. Unknown steps: it may not."""
        known = self._steps.get(id(node.graph))
        if known is None or known[0] is not node.graph:
            return False
        return readers_run_first(node, written, known[1], known[2], self.aliases(node.graph))

    def aliases(self, graph: Graph) -> dict:
        """``may_alias`` of ``graph`` with loop results narrowed (once per graph)."""
        cached = self._aliases.get(id(graph))
        if cached is None or cached[0] is not graph:
            cached = self._aliases[id(graph)] = (graph, may_alias(graph, narrow_loop_results))
        return cached[1]

    def _plan_branch_writes(self, graph: Graph, writable: set[int]) -> None:
        """A branch of a ``cond`` whose input array at ``writable`` positions is the loop's
        own carried array, read by nothing after the cond: the branch's assignments into it
        (``D[i, j] = d`` under an ``if``) write it in place, when the branch gives the result
        at the position the array's chain of assignments ends (the other branch gives the
        array itself, or its own chain)."""
        holders = [graph.placeholders[k] for k in sorted(writable)]
        out = graph.output_node.args[0] if graph.output_node.args else ()
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        back = {}
        for position, v in enumerate(out):
            while isinstance(v, Node) and _name(v) == "setitem":
                v = v.args[0]
            if v in holders and v.name not in back.values():
                back[position] = v.name
        if not back:
            return
        output = graph.output_node
        output.meta = {**output.meta, "write_back": back}
        assign, roots = setitem_plan(graph, owned=True)
        in_place = {n for n in roots if n.args[0] in holders}
        for node in assign:
            if node.args[0] in in_place:
                in_place.add(node)
        self.in_place |= in_place

    def _last_write(self, node: Node, x: Node) -> bool:
        """Whether the ``setitem`` ``node`` may write into ``x`` itself: ``x`` is the current
        loop's own carried array (or an assignment written into it), and every other reader
        of ``x`` ran before ``node`` and read elements only (numbers, no views): nothing sees
        its old contents afterwards. The loop then copies the array once before its first
        iteration, not once per assignment."""
        if not self.owners:
            return False
        written, holders = self.owners[-1]
        root = x
        while True:
            if root in self.in_place:
                root = root.args[0]
            elif _name(root) == "tuple_item" and root.args[1] in self.shared.get(
                    root.args[0], ()):  # a nested loop's result: the array it wrote into
                root = root.args[0].args[3][root.args[1]]
            else:
                break
        if root not in holders:
            return False
        order = {n: k for k, n in enumerate(node.graph.nodes)}
        before = lambda n: order.get(n, len(order)) < order[node]  # noqa: E731
        for user in x.users:
            if user is node:
                continue
            element = _name(user) == "getitem" and user.args[0] is x and getattr(
                node_meta(user), "scalar", False)
            # a view read only by products computed before (``L[i, :i] @ L[i, :i]``)
            dotted = _name(user) == "getitem" and user.args[0] is x and all(
                _name(u) == "matmul" and before(u) for u in user.users)
            if not before(user) or not (element or dotted or _numbers_only(user)):
                return False
        self.in_place.add(node)
        written.append(holders.index(root))
        return True

    def _writable_operands(self, node: Node, inputs: list, also_read: list = ()) -> set[int]:
        """Positions of ``inputs`` (a cond's operands and extras, as its branches take them)
        that are the current loop's own carried arrays (or assignments continuing into one),
        given once (not also among ``also_read``, the node's other inputs) and that nothing
        reads after ``node``, nor through a view or another value that may share its memory
        (``_shared_after``): marked written, so the loop copies them once before its first
        iteration."""
        if not self.owners:
            return set()
        written, holders = self.owners[-1]
        order = {n: k for k, n in enumerate(node.graph.nodes)}
        aliases = self.aliases(node.graph)
        out = set()
        for position, x in enumerate(inputs):
            meta = node_meta(x)
            if not isinstance(x, Node) or [*inputs, *also_read].count(x) > 1 or not isinstance(
                    meta, ArrayMeta) or meta.scalar:
                continue
            root = x
            while root in self.in_place:
                root = root.args[0]
            if root not in holders or any(
                    u is not node and order.get(u, -1) > order[node] for u in x.users):
                continue
            if x is not root and any(u is not node for u in x.users):
                continue
            if self._shared_after(node, x, order, aliases) or not self.readers_ran(node, x):
                continue
            out.add(position)
            written.append(holders.index(root))
        return out

    @staticmethod
    def _shared_after(node: Node, x: Node, order: dict, aliases: dict) -> bool:
        """Whether an array computed before ``node`` that may share ``x``'s memory (a view
        ``w = v[:]``, a reshape) is read by ``node`` or after it: writing ``x`` in place would
        change what it reads (the loop rebinds ``v``; ``w`` keeps the old array's values)."""
        mine = aliases.get(x, frozenset())
        at = order[node]
        for other, owners in aliases.items():
            meta = node_meta(other)
            if other is x or order.get(other, at) >= at or not owners & mine or not isinstance(
                    meta, ArrayMeta) or meta.scalar:
                continue
            if any(order.get(u, at) >= at for u in other.users):
                return True
        return False

    def _plan_carried_writes(self, graph: Graph, offset: int, count: int) -> None:
        """Which ``setitem`` nodes of a loop body write its carried arrays in place: the eager
        backend's plan for a loop that owns its carried arrays (``setitem_plan``: nothing reads
        an array's old contents after the assignment)."""
        holders = graph.placeholders[offset:offset + count]
        output = graph.output_node
        output.meta = {**output.meta, "write_back": {k: p.name for k, p in enumerate(holders)}}
        assign, roots = setitem_plan(graph, owned=True)
        in_place = set(roots)
        for node in assign:  # a chain of assignments continuing one into a carried array
            if node.args[0] in in_place:
                in_place.add(node)
        self.in_place |= in_place
        self.written = tuple(k for k, p in enumerate(holders)
                             if any(n.args[0] is p for n in roots))

    def stays_inside(self, node: Node, carried: bool = False) -> bool:
        """Whether nothing holds ``node``'s array (or a view of it) after the iteration: it
        is read by kernels, ``matmul``, ``copy`` and as a ``setitem`` value only, never
        returned, carried, written in place or given to a NumPy call (which might keep it).
        ``carried``: or carried by a nested ``fori_loop`` whose results holding it are
        (``loop_result_stays``): that loop may write it in place."""
        for user in node.users:
            name = getattr(user.target, "name", "")
            if user in self.in_kernels or name in ("matmul", "copy"):
                continue
            if name == "setitem" and user.args[0] is not node:
                continue
            if name == "getitem" and user.args[0] is node and self.stays_inside(user):
                continue
            if carried and name == "fori_loop" and self.loop_result_stays(user, node):
                continue
            return False
        return True

    def loop_result_stays(self, loop: Node, node: Node) -> bool:
        """Whether ``node``, carried once by the ``fori_loop`` ``loop`` (not a bound, not an
        extra), is dead once the iteration around ``loop`` ends: every result of ``loop`` that
        may hold its array (its own position, and any other the body may move it to, over
        the iterations) is read only (``stays_inside``)."""
        lower, upper, body, carried, *rest = loop.args
        carried = list(carried)
        flows = _body_flows(loop)
        if node in (lower, upper) or carried.count(node) != 1 or any(
                node in extra for extra in rest) or flows is None:
            return False
        keep = _closure({carried.index(node)},
                        lambda k: {j for j, ks in enumerate(flows) if k in ks})
        return all(_name(user) == "tuple_item" and (
            user.args[1] not in keep or self.stays_inside(user, carried=True))
            for user in loop.users)


def _body_flows(loop: Node) -> list[set[int]] | None:
    """Per result position ``j`` of the ``fori_loop`` ``loop``, the carried positions whose
    array the body's ``j``-th output may be (share memory with) in one iteration; None when an
    output may be one of the body's extra inputs, or the body is not a captured graph."""
    body, carried = loop.args[2], loop.args[3]
    if _name(loop) != "fori_loop" or not hasattr(body, "graph"):
        return None
    graph = body.graph
    holders = graph.placeholders[1:1 + len(carried)]
    extras = {p for p in graph.placeholders[1 + len(carried):]  # (arrays: an index is not)
              if isinstance(node_meta(p), ArrayMeta) and not node_meta(p).scalar}
    aliases = may_alias(graph)
    flows = []
    for v in graph_outputs(graph):
        mine = aliases.get(v, frozenset()) if isinstance(v, Node) else frozenset()
        if mine & extras:
            return None
        flows.append({k for k, h in enumerate(holders) if h in mine})
    return flows


def _closure(start: set[int], step: Callable[[int], set[int]]) -> set[int]:
    found, todo = set(start), list(start)
    while todo:
        for k in step(todo.pop()) - found:
            found.add(k)
            todo.append(k)
    return found


def narrow_loop_results(node: Node, owners: dict) -> frozenset[Node] | None:
    """``may_alias``'s set for a ``fori_loop``'s result ``tuple_item(loop, j)``: the arrays
    of the carried values it may be after any number of iterations (``j``'s own when the loop
    runs none), and the loop itself (what the body allocates), instead of every input's."""
    if _name(node) != "tuple_item" or not isinstance(node.args[0], Node):
        return None
    loop, j = node.args
    flows = _body_flows(loop)
    if flows is None or not isinstance(j, int) or j >= len(flows):
        return None
    carried = loop.args[3]
    held = _closure({j}, lambda k: flows[k])
    return frozenset({loop}).union(*(owners.get(carried[k], frozenset()) for k in held
                                     if isinstance(carried[k], Node)))
