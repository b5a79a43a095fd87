"""The schedule of one graph: its steps, what orders them, and the stream each one runs on.

A backend describes its graph as ``Step``s in program order (the eager backend: one per op; the
numba backend: one per kernel or NumPy call of its program), each with the lines of Python that
compute it, the values it reads and defines, and its memory effects. ``dependencies`` orders
them: a step comes after the steps whose values it reads; a step that writes an input's memory
(a kernel computing straight into it) after every step that reads that memory, any value that
may share it included (views, transposes), and after every step that may raise (a raise must
find the inputs untouched, see ``runner``); random draws keep their program order among
themselves. ``assign_streams`` then places the steps on streams by list scheduling with
estimated costs: each step goes to the stream where it can start first, counting a hand-over
cost when it waits for another stream. Inside a stream, steps keep program order, so every wait
points to an earlier step of the program and no schedule can deadlock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta

#: Estimated cost, in nanoseconds, of handing a value from one thread to another (an event set
#: and a wait: a thread switch under the GIL).
HANDOVER_NS = 30_000.0
#: Estimated fixed cost of one NumPy call or kernel dispatch (ns).
CALL_NS = 1_500.0
#: Ops that call BLAS (``Op.blas``): ``2 m k n`` floating-point operations at about this many per
#: ns (1 core).
FLOPS_PER_NS = 20.0


@dataclass(eq=False)
class Step:
    """One unit the scheduler places: a kernel, a NumPy call, or an op."""

    index: int  # position in program order
    label: str  # what ``explain`` calls it (op names)
    lines: list[str]  # Python statements computing it, in the backend's namespace
    defines: tuple[Node, ...]  # values it computes
    uses: tuple[Node, ...]  # values it reads
    cost: float = CALL_NS  # estimated ns
    impure: bool = False  # draws from a random generator
    may_raise: bool = True  # may raise (a NumPy call: floating-point errors, bad data)
    writes: tuple[Node, ...] = ()  # inputs whose memory it writes
    blas: bool = False  # calls BLAS


@dataclass
class Schedule:
    """Steps placed on streams: ``streams[k]`` lists step indices in program order."""

    steps: list[Step]
    preds: list[set[int]]
    streams: list[list[int]]
    stream_of: list[int]
    start: list[float] = field(default_factory=list)  # estimated start/finish (ns)
    finish: list[float] = field(default_factory=list)

    @property
    def serial_ns(self) -> float:
        return sum(s.cost for s in self.steps)

    @property
    def makespan_ns(self) -> float:
        return max(self.finish, default=0.0)

    def cross_edges(self) -> list[tuple[int, int]]:
        """(producer, consumer) pairs on different streams: one event each."""
        return [(p, i) for i, ps in enumerate(self.preds) for p in sorted(ps)
                if self.stream_of[p] != self.stream_of[i]]

    def side_by_side(self) -> list[tuple[str, str]]:
        """Pairs of steps on different streams whose planned runs overlap, in step order.

        Swept in order of start: every overlapping pair has one step starting within the other's
        run, so each step is only compared with the steps starting during it (all pairs were
        compared before: 1.1 million for an unrolled 1,500-op graph, 0.4 s of its first call)."""
        start, finish, stream = self.start, self.finish, self.stream_of
        order = sorted(range(len(self.steps)), key=lambda i: start[i])
        found = set()
        for k, a in enumerate(order):
            for b in order[k + 1:]:
                if start[b] >= finish[a]:
                    break
                if stream[a] != stream[b] and start[a] < finish[b]:
                    found.add((min(a, b), max(a, b)))
        return [(self.steps[a].label, self.steps[b].label) for a, b in sorted(found)]

    def describe(self) -> list[str]:
        lines = [f"{len(self.streams)} streams, {len(self.cross_edges())} hand-over(s) between "
                 f"them; estimated {self.makespan_ns / 1e3:.0f} us against "
                 f"{self.serial_ns / 1e3:.0f} us serial"]
        for k, members in enumerate(self.streams):
            labels = [self.steps[i].label for i in members]
            lines.append(f"stream {k}: {', '.join(labels)}")
        pairs = self.side_by_side()
        if pairs:
            shown = [f"{a} | {b}" for a, b in pairs[:8]]
            more = f" (+{len(pairs) - 8} more)" if len(pairs) > 8 else ""
            lines.append(f"side by side: {'; '.join(shown)}{more}")
        return lines


def dependencies(steps: list[Step], aliases: dict[Node, frozenset[Node]]) -> list[set[int]]:
    """For each step, the earlier steps it must come after (see the module docstring)."""
    defined_by: dict[Node, int] = {}
    preds: list[set[int]] = []
    last_draw: int | None = None
    raising: list[int] = []
    readers: dict[Node, list[int]] = {}  # input (memory owner) -> steps reading it
    for step in steps:
        mine = {defined_by[u] for u in step.uses if u in defined_by}
        if step.impure:
            if last_draw is not None:
                mine.add(last_draw)
            last_draw = step.index
        for holder in step.writes:
            mine.update(readers.get(holder, ()))
            mine.update(raising)
        mine.discard(step.index)
        preds.append(mine)
        for node in step.defines:
            defined_by[node] = step.index
        for used in step.uses:
            for owner in aliases.get(used, ()):
                readers.setdefault(owner, []).append(step.index)
        if step.may_raise:
            raising.append(step.index)
    return preds


def assign_streams(steps: list[Step], preds: list[set[int]], count: int,
                   handover: float = HANDOVER_NS) -> Schedule:
    """List scheduling on ``count`` streams, in program order (see the module docstring);
    ``handover``: the estimated cost of a wait for another stream."""
    free = [0.0] * count
    stream_of: list[int] = []
    start: list[float] = []
    finish: list[float] = []
    for step in steps:
        best: tuple[float, int, int] | None = None
        for k in range(count):
            ready = 0.0
            for p in preds[step.index]:
                ready = max(ready, finish[p] + (handover if stream_of[p] != k else 0.0))
            at = max(free[k], ready)
            # ties: the stream of a predecessor (no hand-over), then the lowest stream
            home = 0 if any(stream_of[p] == k for p in preds[step.index]) else 1
            key = (at, home, k)
            if best is None or key < best:
                best = key
        at, _, k = best
        stream_of.append(k)
        start.append(at)
        finish.append(at + step.cost)
        free[k] = at + step.cost
    used = sorted(set(stream_of))
    renumber = {k: i for i, k in enumerate(used)}
    stream_of = [renumber[k] for k in stream_of]
    streams = [[s.index for s in steps if stream_of[s.index] == k] for k in range(len(used))]
    return Schedule(steps, preds, streams, stream_of, start, finish)


def elements(node: object) -> int:
    """Elements of a node's array value (1 for a scalar, 0 when unknown or symbolic)."""
    meta = node.meta.get("val") if isinstance(node, Node) else None
    if not isinstance(meta, ArrayMeta):
        return 0
    if not all(type(d) is int for d in meta.shape):
        return 0
    return math.prod(meta.shape)


def op_cost(node: Node) -> float:
    """Estimated ns of one op run by NumPy."""
    cost = getattr(node.target, "cost", "pass")
    out = elements(node)
    if cost == "free":  # a view or a new shape of its operand: no pass over the data
        return CALL_NS / 3
    if cost == "blas":
        operand = node.args[0] if node.args else None
        meta = operand.meta.get("val") if isinstance(operand, Node) else None
        inner = meta.shape[-1] if isinstance(meta, ArrayMeta) and meta.shape else 1
        inner = inner if type(inner) is int else 1
        return CALL_NS + 2.0 * out * inner / FLOPS_PER_NS
    read = sum(elements(a) for a in node.all_input_nodes)
    return CALL_NS + float(max(out, read))
