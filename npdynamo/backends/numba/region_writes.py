"""Writes into a fresh array as elementwise selections (a numba backend rewrite, before fusion).

``z = np.zeros((n, n, 3)); z[:, :, 0] = a; z[:, :, 1] = b`` is a ``zeros`` node and a chain of
``setitem`` nodes: as NumPy calls, an allocation and one strided pass per write. A write whose
index is whole axes and integers (``z[:, :, 0]``, ``z[2]``, ``z[:, 1]``) is the same as

    where(M, value reshaped to broadcast at the written positions, z)

with ``M`` a constant boolean array true at the written integer coordinates (size 1 along the
whole axes; ``lowering`` turns it into index comparisons, no array read). A chain of such
writes into a ``zeros`` that nothing else reads is rewritten whole, starting from the constant
0 instead of the zeros array, when the writes together vary along every axis (their selection
has the array's shape): fusion then writes every element once, reading no zeros. Rewritten only
when exact: each value has the array's dtype (or is a Python number written into a float array,
converted as assignment converts it), sizes are known, and the value broadcasts to the written
region without extra leading axes. Anything else stays NumPy's calls (rewriting a whole existing
array to change one column would be slower than NumPy's write).
"""

from __future__ import annotations

import numpy as np

from npdynamo.backends.numba.lowering import NotFusible
from npdynamo.backends.numba.masked_loops import new_node
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta

_WHOLE = slice(None, None, None)


def _meta(value: object) -> object:
    return value.meta.get("val") if isinstance(value, Node) else None


def _integer_axes(index: object, shape: tuple) -> dict[int, int] | None:
    """Axis -> written coordinate for an index of whole axes and integers, else None."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > len(shape):
        return None
    chosen = {}
    for axis, item in enumerate(items):
        if type(item) is int and -shape[axis] <= item < shape[axis]:
            chosen[axis] = item % shape[axis]
        elif not (isinstance(item, slice) and item == _WHOLE):
            return None
    return chosen


def _selection(graph: Graph, write: Node, base: object, made: list) -> Node:
    """``where(M, value, base)`` before ``write`` (``NotFusible`` if the write is not one)."""
    target, index, value = write.args
    meta = _meta(target)
    shape = meta.shape
    axes = _integer_axes(index, shape) if all(type(d) is int for d in shape) else None
    if write.kwargs or not axes:
        raise NotFusible("an index other than whole axes and integers")
    region = tuple(d for t, d in enumerate(shape) if t not in axes)
    vmeta = _meta(value)
    if isinstance(vmeta, ArrayMeta):
        if vmeta.dtype != meta.dtype or vmeta.ndim > len(region):
            raise NotFusible("a value of another dtype, or with extra leading axes")
        padded = iter((1,) * (len(region) - vmeta.ndim) + tuple(vmeta.shape))
        target_shape = tuple(1 if t in axes else next(padded) for t in range(len(shape)))
        value = new_node(graph, write, "reshape", (value,), {"shape": target_shape}, made=made)
    elif not (type(value) in (int, float) and meta.dtype.kind == "f"):
        raise NotFusible("a value other than an array or a Python number into floats")
    mask = np.zeros(tuple(shape[t] if t in axes else 1 for t in range(len(shape))), bool)
    mask[tuple(axes.get(t, 0) for t in range(len(shape)))] = True
    return new_node(graph, write, "where", (mask, value, base), made=made)


def _chain(zeros: Node) -> list[Node]:
    """The writes ``zeros`` goes through, each the only user of the one before."""
    chain, current = [], zeros
    while len(current.users) == 1:
        (user,) = current.users
        if getattr(user.target, "name", None) != "setitem" or user.args[0] is not current:
            break
        chain.append(user)
        current = user
    return chain


def expand_region_writes(graph: Graph) -> None:
    """Rewrite each chain of writes into a ``zeros`` of ``graph`` as selections, when the
    writes together cover every axis their values vary along (else the chain stays NumPy's
    calls: reading the zeros would cost what NumPy's writes cost)."""
    for zeros in [n for n in graph.nodes if getattr(n.target, "name", None) == "zeros"]:
        chain = _chain(zeros)
        if not chain:
            continue
        made: list[Node] = []
        meta = _meta(zeros)
        current: object = meta.dtype.type(0)  # no array read for the positions not written
        try:
            for write in chain:
                current = _selection(graph, write, current, made)
        except Exception:  # noqa: BLE001 - not such a write: NumPy's calls
            current = None
        last = chain[-1]
        if current is None or _meta(current) != _meta(last):
            for new in reversed(made):
                graph.erase_node(new)
            continue
        last.replace_all_uses_with(current)
        for write in reversed(chain):
            graph.erase_node(write)
        graph.erase_node(zeros)
