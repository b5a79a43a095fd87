"""Assignments between kernels, in place (the numba program's ``setitem`` steps).

The functional ``setitem(x, index, value)`` copies ``x``; the eager backend assigns into ``x``
itself where nobody can tell (``backends.inplace.setitem_plan``: ``x`` is an array the graph
made and nothing reads its old contents afterwards). The numba program follows the same plan
for the ``setitem`` steps it runs as NumPy calls, so ``y = np.empty(m); y[:n] = a; y[n:] = b``
writes ``y`` once instead of copying it at each assignment.

A ``repeat`` whose only use is such an assignment (``y[n:] = np.repeat(x, k)``, numpy-benchmarks'
``repeating``) is not materialised: one compiled loop writes each element of ``x`` ``k`` times
straight into the assigned slice (NumPy builds the repeated array, then copies it). The loop
runs only where it gives NumPy's values exactly: a 1-d ``x`` of the slice's dtype, an int
count, sizes that match and no memory shared between ``x`` and the slice; any other call runs
NumPy's own two steps (``view[...] = np.repeat(x, k)``), errors included.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from npdynamo.backends.inplace import may_alias, op_name, readers_run_first, setitem_plan
from npdynamo.backends.numba.fusion import FusionGroup
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node

#: what the loop copies element by element (native byte order: numba types only those)
_LOOP_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64, np.complex64, np.complex128))


def in_place_setitems(graph: Graph, steps: list) -> set[Node]:
    """The ``setitem`` nodes the program may run as an assignment into their array: those the
    eager backend's plan assigns into an array the graph made (none into an input), where every
    earlier reader of that array's memory runs before them among the program's ``steps``
    (``inplace.readers_run_first``: fusion may join an early reader with later ops)."""
    assign, _ = setitem_plan(graph)
    chosen = {n for n in assign if op_name(n) == "setitem"}
    if not chosen:
        return chosen
    order = {n: k for k, n in enumerate(graph.nodes)}
    step_of = {node: k for k, step in enumerate(steps)
               for node in (step.nodes if isinstance(step, FusionGroup) else (step,))}
    aliases = may_alias(graph)
    return {n for n in chosen if readers_run_first(n, n.args[0], order, step_of, aliases)}


def fused_repeats(graph: Graph, in_place: set[Node]) -> dict[Node, Node]:
    """``repeat`` node -> the in-place ``setitem`` that assigns it and is its only use, where
    the repeat is of the form the compiled loop takes (a static int count, no axis or axis 0:
    the run time checks the rest) and the index is slices only (so ``y[index]`` is a view)."""
    fused = {}
    for node in in_place:
        _, index, value = node.args
        items = index if isinstance(index, tuple) else (index,)
        if not (isinstance(value, Node) and op_name(value) == "repeat" and not node.kwargs
                and len(value.users) == 1 and items and all(type(i) is slice for i in items)):
            continue
        repeats = value.kwargs.get("repeats", value.args[1] if len(value.args) > 1 else None)
        axis = value.kwargs.get("axis", None)
        if type(repeats) is int and repeats >= 0 and axis in (None, 0):
            fused[value] = node
    return fused


@njit(nogil=True, cache=True)
def _repeat_into(out, x, k):  # pragma: no cover - compiled
    for i in range(x.shape[0]):
        v = x[i]
        base = i * k
        for j in range(k):
            out[base + j] = v


def assign_repeat(view: np.ndarray, x: object, repeats: int) -> None:
    """``view[...] = np.repeat(x, repeats)``, with no repeated array where the loop is exact."""
    if (isinstance(x, np.ndarray) and isinstance(view, np.ndarray) and x.ndim == 1
            and view.ndim == 1 and x.dtype == view.dtype and x.dtype in _LOOP_DTYPES
            and view.shape[0] == x.shape[0] * repeats and view.flags.writeable
            and not np.may_share_memory(view, x)):
        _repeat_into(view, x, repeats)
    else:
        view[...] = np.repeat(x, repeats)
