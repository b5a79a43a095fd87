"""Maximum flow / minimum cut on a small directed graph, for the rematerialisation partitioner.

Edmonds-Karp: repeatedly augment along a shortest path of the residual graph. Partition
graphs have a few hundred to a few thousand vertices and the flow saturates quickly, so this is
plenty; it keeps npdynamo free of a graph-library dependency. Capacities may be ``math.inf``.
"""

from __future__ import annotations

import math
from collections import deque

INF = math.inf


class FlowNetwork:
    """Vertices are ints from ``add_vertex``; ``add_edge(u, v, capacity)`` adds a directed arc."""

    def __init__(self) -> None:
        self._adj: list[list[int]] = []  # vertex -> arc ids
        self._head: list[int] = []  # arc -> target vertex
        self._cap: list[float] = []  # arc -> residual capacity (arc ^ 1 is its reverse)

    def add_vertex(self) -> int:
        self._adj.append([])
        return len(self._adj) - 1

    def add_edge(self, u: int, v: int, capacity: float) -> None:
        if capacity < 0:
            raise ValueError("capacities must be non-negative")
        for a, b, c in ((u, v, capacity), (v, u, 0.0)):
            self._adj[a].append(len(self._head))
            self._head.append(b)
            self._cap.append(c)

    def max_flow(self, source: int, sink: int) -> float:
        """Saturate the network; returns the flow value (``inf`` if no finite cut exists)."""
        total = 0.0
        while True:
            parent_arc = self._shortest_path(source, sink)
            if parent_arc is None:
                return total
            bottleneck = INF
            v = sink
            while v != source:
                arc = parent_arc[v]
                bottleneck = min(bottleneck, self._cap[arc])
                v = self._head[arc ^ 1]
            if bottleneck == INF:
                return INF
            v = sink
            while v != source:
                arc = parent_arc[v]
                self._cap[arc] -= bottleneck
                self._cap[arc ^ 1] += bottleneck
                v = self._head[arc ^ 1]
            total += bottleneck

    def _shortest_path(self, source: int, sink: int) -> dict[int, int] | None:
        parent_arc = self._search(source, sink)[0]
        return parent_arc if sink in parent_arc else None

    def source_side(self, source: int) -> set[int]:
        """Vertices reachable from ``source`` in the residual graph (after ``max_flow``): the
        source side of a minimum cut."""
        return self._search(source)[1]

    def _search(self, source: int, sink: int | None = None) -> tuple[dict[int, int], set[int]]:
        """Breadth-first search of the residual graph from ``source``, stopping at ``sink``:
        the arc each vertex was reached by, and the vertices reached."""
        parent_arc: dict[int, int] = {}
        seen = {source}
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for arc in self._adj[u]:
                v = self._head[arc]
                if v not in seen and self._cap[arc] > 0:
                    seen.add(v)
                    parent_arc[v] = arc
                    if v == sink:
                        return parent_arc, seen
                    queue.append(v)
        return parent_arc, seen
