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
bit for bit. The two edge lookups per element made a chain of dependent loads that held the
loop at about 10 cycles an element, so the pass runs in blocks: a vectorised loop computes
``f`` and ``int(f)`` and keeps the bin where ``f``'s fraction is clear of both edges by a margin
larger than the roundings of ``f`` and of the edges (``_margin``: there NumPy's corrections
cannot apply), then a counting loop does NumPy's corrections only for the rare elements near
an edge. Every other case runs ``np.histogram`` itself: a given range or ``density``, other
dtypes, empty data, and data whose range NumPy treats specially (a NaN or an infinity, which
raise NumPy's error; all values equal; a zero extreme, whose sign NumPy's minimum picks).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from npdynamo.fx.graph import Graph

_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


#: elements binned per block: their indices (4 KiB of int32) stay in L1 between the two loops
_BLOCK = 1024


@njit(nogil=True, cache=True)
def _corrected(x, first, span, scale, edges, n, last):  # pragma: no cover - compiled
    # NumPy's index arithmetic and edge corrections, with unsigned indices adjusted without
    # branches (no wraparound code, no mispredictions)
    one = np.uint64(1)
    i = np.uint64(((x - first) / span) * scale)
    i -= np.uint64(i == n)
    i -= np.uint64(x < edges[i])
    i += np.uint64((x >= edges[i + one]) & (i != last))
    return i


@njit(nogil=True, cache=True)
def _count(flat, first, span, scale, edges, bins, margin, idx):  # pragma: no cover - compiled
    counts = np.zeros(bins, np.intp)
    n, last = np.uint64(bins), np.uint64(bins - 1)
    upper = 1.0 - margin
    block = idx.shape[0]
    for start in range(0, flat.shape[0], block):
        stop = min(start + block, flat.shape[0])
        # vectorised: the bin of each element where its fraction is clear of both edges by
        # the margin (no correction can apply), else -1
        for k in range(start, stop):
            f = ((flat[k] - first) / span) * scale
            idx[k - start] = f  # truncated, as NumPy's astype(intp)
            r = f - idx[k - start]  # exact
            idx[k - start] = idx[k - start] if (r > margin) & (r < upper) else -1
        # counting, with the edge lookups only for the few elements near an edge
        for k in range(start, stop):
            i = idx[k - start]
            if i >= 0:
                counts[np.uint64(i)] += 1
            else:
                counts[_corrected(flat[k], first, span, scale, edges, n, last)] += 1
    return counts


def _margin(first, last, bins: int, dtype: np.dtype) -> float:
    """How far (in bins) from an edge a computed ``f`` must be for no correction to apply.

    ``f`` has three roundings (relative error 3u each way, so at most 3u*bins from the exact
    position of ``x``); an edge from ``linspace`` is ``k*step + first`` with three roundings too
    (at most 3u*k + u*|first|*bins/span from ``k``, in bins). Twice their sum, with room for a
    ``k`` that is itself rounded: past it, ``edges[i] <= x < edges[i + 1]`` holds, NumPy's
    corrections change nothing, and ``int(f)`` is its bin."""
    u = float(np.finfo(dtype).eps) / 2
    extreme = max(abs(float(first)), abs(float(last)))
    return 2.0 * u * bins * (8.0 + extreme / float(last - first))


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
    index_type = np.int32 if bins < 2**30 else np.int64  # int32 conversions vectorise on AVX2
    margin = _margin(first, last, bins, a.dtype)
    counts = _count(flat, first, last - first, kind(bins), edges, bins, margin,
                    np.empty(min(_BLOCK, flat.size), index_type))
    return counts, edges


def attach(graph: Graph) -> None:
    """Have each ``histogram`` node of ``graph`` run ``histogram`` above (the program calls a
    node's ``numba_impl`` in place of its NumPy implementation)."""
    for node in graph.nodes:
        if getattr(node.target, "name", None) == "histogram":
            node.meta["numba_impl"] = histogram

