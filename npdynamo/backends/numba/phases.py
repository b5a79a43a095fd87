"""Kernel phases: how one fusion group's kernel splits into steps of reductions.

Part of the numba backend's code generation (``codegen`` writes the source from this plan). A
value can be computed in the first phase where all the reductions it reads are finished; a
reduction folds in the phase where its source is available. Expensive values (transcendentals)
needed by several phases are kept in a free output buffer of the same shape instead of being
recomputed: the plan says which buffer hosts which value and in which phase it is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npdynamo.backends.numba.fusion import FusionGroup
from npdynamo.backends.numba.lowering import Lowered, Reduction
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta

#: Elements folded per vectorised block of a float sum or product.
BLOCK = 1024


@dataclass
class Acc:
    """A reduction folded in one phase: its running total and the names the kernel gives it."""

    node: Node
    red: Reduction
    blocked: bool
    total: np.dtype  # dtype of the running total (float64 for float32 sums)
    name: str = ""
    part: str = ""


@dataclass
class Phase:
    """One step of reductions: the values whose elements it computes, folds and stores."""

    index: int
    roots: list[Node] = field(default_factory=list)  # values whose element is needed
    accs: list[Acc] = field(default_factory=list)
    stores: list[Node] = field(default_factory=list)  # full outputs written here
    spills: list[Node] = field(default_factory=list)  # kept in another output's buffer


def array_meta(value: object) -> ArrayMeta | None:
    meta = value.meta.get("val") if isinstance(value, Node) else None
    return meta if isinstance(meta, ArrayMeta) else None


class PhasePlan:
    """The phases of one group's kernel, whose loops run over ``loop_axes``."""

    def __init__(self, group: FusionGroup, loop_axes: tuple[int, ...]) -> None:
        self.g = group
        self.loop_axes = loop_axes
        self.members = set(group.nodes)
        self.outputs = set(group.outputs)
        self.avail: dict[Node, int] = {}  # the first phase that can compute each node
        self.spill_host: dict[Node, Node] = {}
        self.spill_phase: dict[Node, int] = {}

    def in_loop(self, node: Node) -> bool:
        return any(k in self.loop_axes for k in self.g.maps[node] if k is not None)

    def phases(self) -> list[Phase]:
        """The kernel's phases in order, each with what it computes, folds, stores and spills."""
        avail: dict[Node, int] = {}
        red_phase: dict[Node, int] = {}
        for node in self.g.nodes:
            low = self.g.lowered[node]
            if isinstance(low, Reduction):
                src = low.source.value
                red_phase[node] = avail.get(src, 0) if src in self.members else 0
                avail[node] = red_phase[node] + 1
            else:
                avail[node] = max([avail[o.value] for o in low.operands
                                   if isinstance(o.value, Node) and o.value in self.members],
                                  default=0)
        self.avail = avail
        count = max([avail[n] for n in self.g.nodes if self.in_loop(n)] +
                    list(red_phase.values()) + [0]) + 1
        phases = [Phase(p) for p in range(count)]
        # at most BLOCK elements reduced: one block, folded without the loop around it
        sizes = [self.g.domain[k] for k in self.g.reduce_axes]
        one_block = all(type(d) is int for d in sizes) and int(np.prod(sizes)) <= BLOCK
        for node, p in red_phase.items():
            red = self.g.lowered[node]
            blocked = red.kind in ("sum", "prod") and red.acc_dtype.kind == "f" and not one_block
            total = (np.dtype(np.float64) if blocked and red.acc_dtype == np.float32
                     else red.acc_dtype)
            phases[p].accs.append(Acc(node, red, blocked, total))
            src = red.source.value
            if isinstance(src, Node) and src in self.members:
                phases[p].roots.append(src)
        for node in self.g.outputs:
            if self.in_loop(node):
                phases[avail[node]].stores.append(node)
                phases[avail[node]].roots.append(node)
        self._plan_spills(phases)
        return [p for p in phases if p.roots or p.accs]

    def needed(self, roots: list[Node], phase: int) -> set[Node]:
        needed: set[Node] = set()
        stack = list(roots)
        while stack:
            node = stack.pop()
            if node in needed or not self.in_loop(node):
                continue
            needed.add(node)
            if self.buffered_before(node, phase):
                continue
            low = self.g.lowered[node]
            if isinstance(low, Lowered):
                stack.extend(o.value for o in low.operands
                             if isinstance(o.value, Node) and o.value in self.members)
        return needed

    def buffered_before(self, node: Node, phase: int) -> bool:
        """Whether ``node``'s elements were stored to a buffer in an earlier phase."""
        if node in self.spill_host:
            return self.spill_phase[node] < phase
        return node in self.outputs and self.avail[node] < phase

    def _plan_spills(self, phases: list[Phase]) -> None:
        """Keep an expensive value needed by several phases in a free output buffer: stored
        by the first phase that computes it (not necessarily the first phase that could: a
        tanh read only after a reduction of the inputs is computed after it), read back by
        the later ones."""
        self.spill_host: dict[Node, Node] = {}
        self.spill_phase: dict[Node, int] = {}
        first_use: dict[Node, int] = {}
        last_use: dict[Node, int] = {}
        for ph in phases:
            for node in self.needed(ph.roots, ph.index):
                first_use.setdefault(node, ph.index)
                last_use[node] = ph.index
        hosts = [o for o in self.g.outputs if self.in_loop(o)]
        used: set[Node] = set()
        for node in self.g.nodes:
            low = self.g.lowered[node]
            if (node in self.outputs or not isinstance(low, Lowered) or not low.expensive
                    or last_use.get(node, -1) <= first_use.get(node, -1)):
                continue
            for host in hosts:
                if (host not in used and array_meta(host).dtype == low.dtype
                        and self.g.maps[host] == self.g.maps[node]
                        and self.avail[host] >= last_use[node]):
                    used.add(host)
                    self.spill_host[node] = host
                    self.spill_phase[node] = first_use[node]
                    phases[first_use[node]].spills.append(node)
                    break
