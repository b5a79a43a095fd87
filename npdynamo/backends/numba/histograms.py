"""``np.histogram`` as compiled loops on the numba backend (``attach``, before fusion).

The ``histogram`` op (``ops/histograms.py``) runs NumPy's ``np.histogram``, which finds the
range (two passes), then bins the data in blocks of 65,536 elements with a dozen temporary
arrays and ``np.bincount`` per block. Here, for float32/float64 data with an autodetected range
and counts (the usual call), NumPy's vectorised ``min`` and ``max`` find the range (faster than
one branchy compiled pass) and one compiled pass counts, with NumPy's own arithmetic element
by element:

    f = ((x - first) / (last - first)) * bins     in the data's dtype
    i = int(f); i -= i == bins                    the last bin is closed
    i -= x < edges[i]; i += x >= edges[i + 1] and i != bins - 1   (edges within an ulp)

and the edges from NumPy's own ``np.linspace`` call, so the counts and edges are NumPy's,
bit for bit. Every other case runs ``np.histogram`` itself: a given range or ``density``, other
dtypes, empty data, and data whose range NumPy treats specially (a NaN or an infinity, which
raise NumPy's error; all values equal; a zero extreme, whose sign NumPy's minimum picks).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from npdynamo.fx.graph import Graph

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@njit(nogil=True, cache=True)
def _count(flat, first, span, scale, edges, bins):  # pragma: no cover - compiled
    # unsigned indices, adjusted without branches: no wraparound code, no mispredictions
    counts = np.zeros(bins, np.intp)
    n, one = np.uint64(bins), np.uint64(1)
    last = n - one
    for k in range(flat.shape[0]):
        x = flat[k]
        i = np.uint64(((x - first) / span) * scale)
        i -= np.uint64(i == n)
        i -= np.uint64(x < edges[i])
        i += np.uint64((x >= edges[i + one]) & (i != last))
        counts[i] += 1
    return counts


def histogram(a, *, bins=10, range=None, density=None):  # noqa: A002 - NumPy's names
    """``np.histogram(a, bins, range, density)``, compiled for the common case."""
    if (range is not None or density or not isinstance(a, np.ndarray)
            or a.dtype not in _FAST_DTYPES or a.size == 0):
        return np.histogram(a, bins, range, density)
    flat = a.ravel()
    # NumPy's own SIMD min and max (two passes beat one branchy compiled pass); a NaN is
    # their result when there is one, an infinity is one of them: not finite either way
    lo, hi = flat.min(), flat.max()
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo == hi or lo == 0 or hi == 0:
        return np.histogram(a, bins, range, density)
    kind = a.dtype.type
    first, last = kind(lo), kind(hi)
    edges = np.linspace(first, last, bins + 1, endpoint=True, dtype=a.dtype)
    if np.any(edges[:-1] >= edges[1:]):  # NumPy's error: too many bins for the range
        return np.histogram(a, bins, range, density)
    return _count(flat, first, last - first, kind(bins), edges, bins), edges


def attach(graph: Graph) -> None:
    """Have each ``histogram`` node of ``graph`` run ``histogram`` above (the program calls a
    node's ``numba_impl`` in place of its NumPy implementation)."""
    for node in graph.nodes:
        if getattr(node.target, "name", None) == "histogram":
            node.meta["numba_impl"] = histogram

