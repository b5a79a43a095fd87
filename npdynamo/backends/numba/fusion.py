"""Fusion: partition a graph into fusion groups, each compiled into one numba kernel.

A fusion group loops over one iteration space, its *domain* ``D`` (a shape), optionally reducing
over trailing axes ``A`` of it. Every value of a group has the shape ``D`` (a *full* value,
one per element of the domain) or, when the group reduces, the kept shape with or without the
reduced axes (an *outer* value, one per row). So a softmax (max over the last axis, exp of the
difference, sum, divide) or a layernorm is one group: a row loop whose body runs one inner loop
per reduction. Groups produce every value needed outside them as outputs.

The partition is greedy in program order: a fusible node joins the group of one of its inputs,
or any group with the same domain (horizontal fusion), when its shape fits that group and the
join creates no cycle through the nodes that run between kernels; otherwise it starts a group.
Nodes that cannot be fused (matmul, shape ops, unhandled ops or dtypes) run as NumPy calls.
Reductions over leading axes stay NumPy calls too: a row loop over them would stride through
memory and be slower than NumPy.

Long graphs (an unrolled loop) stay cheap: a group holds at most ``MAX_GROUP_NODES`` ops
(numba's compile time grows faster than a kernel's length, and equal pieces of a repeated body
give identical groups, which share one kernel), horizontal joins look only at the last
``HORIZONTAL_WINDOW`` groups, and a cycle check that would walk more than ``CYCLE_WALK_LIMIT``
nodes refuses the join, so partitioning is linear in the graph's length.

Symbolic sizes: shapes are compared structurally (``same_shape``): a value joins a group when
its shape is the same expression as the group's domain, and a dimension broadcasts only when
it is the int 1. This asks nothing of the hints, so the partition is valid for every size the
graph's guards admit; the size-dependent choice left (parallel or serial) is made per call.
Each input dimension gets a symbol of its own (``x`` is ``(s0, s1)``, ``y`` is ``(s2, s3)``), so
first the sizes that broadcasting makes equal are given one name (``equal_sizes``): an operand
dimension that is a size symbol (never 1) of an elementwise op must equal the result's, or NumPy
would have raised. Without that, ``x + y`` and ``x * 2`` would be values of different shapes
and a graph with symbolic sizes would fuse into many more kernels than the same graph static.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from npdynamo.backends.numba.lowering import (
    INDEXED_OPS,
    Lowered,
    NotFusible,
    Reduction,
    lower_elementwise,
    lower_reduction,
)
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.sizes import symbol_origins
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import Dim, Symbol, SymInt, rename_symbols, sym_product
from npdynamo.ops.symbolic_code import is_one, same_shape, symbol_name

#: An index map gives, for each dimension of a value, the domain axis its index follows, or
#: ``None`` where the value is broadcast (size 1).
IndexMap = tuple

#: How many of the most recent groups a node may join horizontally (without a data edge).
HORIZONTAL_WINDOW = 8
#: Ops per group at most: numba's compile time grows faster than linearly with a kernel's size,
#: and a long unrolled loop cut into equal pieces gives identical groups that share one kernel.
MAX_GROUP_NODES = 64
#: How far (nodes visited) the cycle check of one join may walk back through the graph.
CYCLE_WALK_LIMIT = 2000


@dataclass(eq=False)
class FusionGroup:
    """Nodes computed by one kernel, in program order, and what the kernel reads and writes."""

    index: int
    domain: tuple[Dim, ...]
    reduce_axes: tuple[int, ...] = ()
    nodes: list[Node] = field(default_factory=list)
    lowered: dict[Node, Lowered | Reduction] = field(default_factory=dict)
    maps: dict[Node, IndexMap] = field(default_factory=dict)
    inputs: list[Node] = field(default_factory=list)
    outputs: list[Node] = field(default_factory=list)

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(getattr(n.target, "name", n.name) for n in self.nodes)

    @property
    def size(self) -> Dim:
        """Elements of the domain: an int, or an expression of the symbolic sizes."""
        return sym_product(self.domain)

    def is_full(self, node: Node) -> bool:
        """Whether ``node`` varies along a reduced axis (else it is one value per row)."""
        return any(k in self.reduce_axes for k in self.maps[node] if k is not None)

    def value_map(self, shape: tuple[int, ...]) -> IndexMap | None:
        """The index map of a group value of ``shape``, or ``None`` if no value may have it."""
        d, a = self.domain, self.reduce_axes
        norm = lambda k: None if is_one(d[k]) else k  # noqa: E731
        if same_shape(shape, d):
            return tuple(norm(k) for k in range(len(d)))
        if not a:
            return None
        if same_shape(shape, tuple(1 if k in a else d[k] for k in range(len(d)))):
            return tuple(None if k in a else norm(k) for k in range(len(d)))
        if same_shape(shape, tuple(d[k] for k in range(len(d)) if k not in a)):
            return tuple(norm(k) for k in range(len(d)) if k not in a)
        return None


def broadcast_map(shape: tuple[int, ...], reader_shape: tuple[int, ...],
                  reader_map: IndexMap) -> IndexMap:
    """The index map of an operand of ``shape`` read by a value with ``reader_map``."""
    offset = len(reader_shape) - len(shape)
    return tuple(None if is_one(d) else reader_map[offset + t] for t, d in enumerate(shape))


@dataclass
class Partition:
    """The graph's steps in execution order: fusion groups and nodes run as NumPy calls."""

    steps: list[FusionGroup | Node]
    groups: list[FusionGroup]
    not_fused: dict[Node, str]  # node -> why it runs as a NumPy call


def _raw_shape(node: object) -> tuple[int, ...] | None:
    meta = node.meta.get("val") if isinstance(node, Node) else None
    return meta.shape if isinstance(meta, ArrayMeta) else None


def _size_symbol(d: Dim) -> str | None:
    """The name of ``d`` when it is one size symbol (a size >= 2, never 1), else None."""
    name = symbol_name(d)
    if name is None:
        return None
    ((mono, _coeff),) = d.terms  # type: ignore[union-attr]
    atom = mono[0]
    return name if isinstance(atom, Symbol) and (atom.lower or 0) >= 2 else None


def equal_sizes(graph: Graph) -> dict[str, SymInt]:
    """Size symbol -> the symbol naming its class of sizes that broadcasting makes equal.

    NumPy broadcasts an operand dimension to the result's only from 1; a dimension that is a
    size symbol is never 1, so every successful run has it equal to the result's dimension.
    Each class is named by its first symbol read from a placeholder (the program can read it)."""
    parent: dict[str, str] = {}
    exprs: dict[str, SymInt] = {}  # symbol name -> the size that is exactly it

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for node in graph.nodes:
        out = _raw_shape(node)
        if node.op != "call_function" or getattr(node.target, "kind", None) != "elementwise" \
                or out is None:
            continue
        for operand in node.all_input_nodes:
            shape = _raw_shape(operand)
            if shape is None or len(shape) > len(out):
                continue
            for a, b in zip(shape, out[len(out) - len(shape):]):
                x, y = _size_symbol(a), _size_symbol(b)
                if x is not None and y is not None and find(x) != find(y):
                    exprs[x], exprs[y] = a, b  # type: ignore[assignment]
                    parent[find(x)] = find(y)
    if not parent:
        return {}
    order = {name: k for k, name in enumerate(symbol_origins(graph))}
    classes: dict[str, list[str]] = {}
    for name in {*parent, *parent.values()}:
        classes.setdefault(find(name), []).append(name)
    rename: dict[str, SymInt] = {}
    for members in classes.values():
        readable = sorted((n for n in members if n in order), key=order.__getitem__)
        if readable:
            rename.update({n: exprs[readable[0]] for n in members if n != readable[0]})
    return rename


class _Partitioner:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.rename = equal_sizes(graph)
        self.groups: list[FusionGroup] = []
        self.group_of: dict[Node, FusionGroup] = {}
        self.not_fused: dict[Node, str] = {}

    def _shape(self, node: object) -> tuple[Dim, ...] | None:
        """``node``'s shape, sizes that broadcasting makes equal named alike (``equal_sizes``)."""
        shape = _raw_shape(node)
        if not self.rename or shape is None:
            return shape
        return tuple(rename_symbols(d, self.rename) for d in shape)

    def run(self) -> Partition:
        for node in self.graph.nodes:
            if node.op == "call_function":
                self._place(node)
        for group in self.groups:
            self._finish(group)
        return Partition(self._order(), self.groups, self.not_fused)

    # -- placing one node --------------------------------------------------------------------

    def _place(self, node: Node) -> None:
        kind = getattr(node.target, "kind", "opaque")
        try:
            if kind == "elementwise" or getattr(node.target, "name", None) in INDEXED_OPS:
                lowered: Lowered | Reduction = lower_elementwise(node)
            elif kind == "reduction":
                lowered = lower_reduction(node)
            else:
                name = getattr(node.target, "name", node.name)
                if "numba_impl" in node.meta:
                    raise NotFusible(f"{name}: its own compiled loop, between kernels")
                raise NotFusible(f"{name} is neither elementwise nor a reduction: a NumPy call")
            if self._shape(node) is None:
                raise NotFusible("the result is not an array")
            for group in self._candidates(node):
                if self._try_join(group, node, lowered):
                    return
            self._start_group(node, lowered)
        except NotFusible as exc:
            self.not_fused[node] = str(exc)

    def _candidates(self, node: Node) -> list[FusionGroup]:
        """The groups of ``node``'s inputs, then the most recent other groups (horizontal fusion).

        Only the last ``HORIZONTAL_WINDOW`` groups are tried horizontally: every try walks the
        graph for a cycle, so trying all of them made a long unrolled loop quadratic to fuse."""
        seen: dict[int, FusionGroup] = {}
        for i in node.all_input_nodes:
            g = self.group_of.get(i)
            if g is not None:
                seen.setdefault(g.index, g)
        for g in self.groups[::-1][:HORIZONTAL_WINDOW]:
            seen.setdefault(g.index, g)
        return list(seen.values())

    def _creates_cycle(self, group: FusionGroup, node: Node) -> bool:
        """Would ``node`` in ``group`` make the kernel depend on its own output?

        Walks back from ``node``'s inputs over the CURRENT grouping (a kernel runs as one step,
        so reaching any member means depending on all of its inputs): dependency sets frozen
        when each node was placed miss edges that later joins add to earlier groups. A walk
        longer than ``CYCLE_WALK_LIMIT`` steps counts as a cycle (the node starts a group of
        its own): refusing a join is always correct, and it keeps long graphs linear to fuse."""
        budget = CYCLE_WALK_LIMIT
        pending = [i for i in node.all_input_nodes if self.group_of.get(i) is not group]
        seen_nodes: set[Node] = set()
        seen_groups: set[int] = set()
        while pending:
            budget -= 1
            if budget < 0:
                return True
            current = pending.pop()
            owner = self.group_of.get(current)
            if owner is group:
                return True
            if owner is not None:
                if owner.index not in seen_groups:
                    seen_groups.add(owner.index)
                    for member in owner.nodes:
                        pending.extend(member.all_input_nodes)
            elif current not in seen_nodes:
                seen_nodes.add(current)
                pending.extend(current.all_input_nodes)
        return False

    def _try_join(self, group: FusionGroup, node: Node, lowered: Lowered | Reduction) -> bool:
        if len(group.nodes) >= MAX_GROUP_NODES:
            return False
        # the cheap shape checks first: the cycle check walks the graph
        if isinstance(lowered, Reduction):
            value_map = self._reduction_map(group, lowered, self._shape(node))
        else:
            value_map = group.value_map(self._shape(node))
            for operand in lowered.operands if value_map is not None else ():
                value = operand.value
                if isinstance(value, Node) and self.group_of.get(value) is group:
                    seen = broadcast_map(self._shape(value), self._shape(node), value_map)
                    if seen != group.maps[value]:
                        return False
        if value_map is None or self._creates_cycle(group, node):
            return False
        if isinstance(lowered, Reduction):
            group.reduce_axes = lowered.axes
        self._add(group, node, lowered, value_map)
        return True

    def _reduction_map(self, group: FusionGroup, red: Reduction,
                       shape: tuple[int, ...]) -> IndexMap | None:
        """The index map of a reduction joining ``group``, or ``None`` if it cannot join."""
        if not same_shape(self._shape(red.source.value), group.domain) or not red.axes:
            return None
        if group.reduce_axes and red.axes != group.reduce_axes:
            return None
        if not group.reduce_axes and not _trailing(red.axes, len(group.domain)):
            return None
        saved = group.reduce_axes
        group.reduce_axes = red.axes
        try:
            return group.value_map(shape)
        finally:
            group.reduce_axes = saved

    def _start_group(self, node: Node, lowered: Lowered | Reduction) -> None:
        if isinstance(lowered, Reduction):
            domain = self._shape(lowered.source.value)
            if not lowered.axes or not _trailing(lowered.axes, len(domain)):
                raise NotFusible(
                    f"{node.target.name} over axes {lowered.axes} of a {len(domain)}-d array: "
                    "only reductions over trailing axes are fused"
                )
            group = FusionGroup(len(self.groups), domain, lowered.axes)
        else:
            group = FusionGroup(len(self.groups), self._shape(node))
        value_map = group.value_map(self._shape(node))
        assert value_map is not None
        self.groups.append(group)
        self._add(group, node, lowered, value_map)

    def _add(self, group: FusionGroup, node: Node, lowered, value_map: IndexMap) -> None:
        group.nodes.append(node)
        group.lowered[node] = lowered
        group.maps[node] = value_map
        self.group_of[node] = group

    # -- after placing -----------------------------------------------------------------------

    def _finish(self, group: FusionGroup) -> None:
        members = set(group.nodes)
        for node in group.nodes:
            for i in node.all_input_nodes:
                if i not in members and i not in group.inputs:
                    group.inputs.append(i)
            if any(u not in members for u in node.users):
                group.outputs.append(node)

    def _order(self) -> list[FusionGroup | Node]:
        """Steps in a dependency order, each as early as program order allows."""
        position = {n: i for i, n in enumerate(self.graph.nodes)}
        steps: list[FusionGroup | Node] = list(self.groups)
        steps += [n for n in self.graph.nodes
                  if n.op == "call_function" and n not in self.group_of]
        step_of = {}
        for step in steps:
            for n in step.nodes if isinstance(step, FusionGroup) else [step]:
                step_of[n] = step
        preds: dict[int, set[int]] = {id(s): set() for s in steps}
        succs: dict[int, set[int]] = {id(s): set() for s in steps}
        for step in steps:
            for n in step.nodes if isinstance(step, FusionGroup) else [step]:
                for i in n.all_input_nodes:
                    producer = step_of.get(i)
                    if producer is not None and producer is not step:
                        preds[id(step)].add(id(producer))
                        succs[id(producer)].add(id(step))
        first = lambda s: min(position[n] for n in (s.nodes if isinstance(s, FusionGroup)  # noqa: E731
                                                     else [s]))
        by_id = {id(s): s for s in steps}
        ready = [(first(s), id(s)) for s in steps if not preds[id(s)]]
        heapq.heapify(ready)
        ordered = []
        while ready:
            _, sid = heapq.heappop(ready)
            ordered.append(by_id[sid])
            for nxt in succs[sid]:
                preds[nxt].discard(sid)
                if not preds[nxt]:
                    heapq.heappush(ready, (first(by_id[nxt]), nxt))
        if len(ordered) != len(steps):
            raise RuntimeError("fusion produced a cycle between kernels")  # a bug, never user's
        return ordered


def _trailing(axes: tuple[int, ...], ndim: int) -> bool:
    return axes == tuple(range(ndim - len(axes), ndim))


def partition(graph: Graph) -> Partition:
    """Split ``graph`` into fusion groups and NumPy steps (see the module docstring)."""
    return _Partitioner(graph).run()
