"""``np.nonzero`` (and the one-argument ``np.where``) of 1-d data as a compiled loop on the
numba backend (``attach``, before fusion).

NumPy's ``nonzero`` counts the nonzero elements, then walks the data again appending the index
of each one through a generic per-element path (about 2 ns an element on int64 data: the whole
of numpy-benchmarks' ``grouping`` but 10%). Here one pass counts (``x != 0``, so a NaN counts
and a negative zero does not, as in NumPy) and a second writes the indices, in order, into an
``intp`` array of that size: NumPy's result (sparse data with a branch per element, dense data
without one). Other data (2-d and up, other
dtypes) runs ``np.nonzero`` itself.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from npdynamo.fx.graph import Graph

_LOOP_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64))


@njit(nogil=True, cache=True)
def _indices(x):  # pragma: no cover - compiled
    count = 0
    for i in range(x.shape[0]):
        count += x[i] != 0
    out = np.empty(count, np.intp)
    k = 0
    if count * 16 < x.shape[0]:
        # sparse: a branch taken rarely is predicted, and skips the stores
        for i in range(x.shape[0]):
            if x[i] != 0:
                out[k] = i
                k += 1
    else:
        # dense: no data-dependent branch; every index is stored at the next free place and
        # kept only if its element counts (the last nonzero element ends the stores)
        for i in range(x.shape[0]):
            if k < count:
                out[k] = i
            k += x[i] != 0
    return out


def nonzero(a):
    """``np.nonzero(a)``, compiled for 1-d data of a plain dtype."""
    if isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype in _LOOP_DTYPES:
        return (_indices(a),)
    return np.nonzero(a)


def attach(graph: Graph) -> None:
    """Have each ``nonzero`` node of ``graph`` run ``nonzero`` above (the program calls a
    node's ``numba_impl`` in place of its NumPy implementation)."""
    for node in graph.nodes:
        if getattr(node.target, "name", None) == "nonzero":
            node.meta["numba_impl"] = nonzero
