"""``var`` and ``std`` as the reductions NumPy computes them with (a numba backend rewrite,
before fusion).

NumPy's ``_var`` is a sum with ``keepdims``, divided by the count (the mean), the deviations
``x - mean``, their squares, a second sum, divided by ``max(count - ddof, 0)`` (``std`` takes the
square root of that). Run as one NumPy call it makes the deviations and squares as full-size
temporaries; written as those graph ops (here), fusion computes them in one kernel with two
passes over each row and no temporary (the softmax pattern). Same operations in the same
dtypes; the sums differ from NumPy's pairwise sums only by rounding, as every kernel sum does.

Rewritten only when that is exactly what NumPy does and the result fuses: float or integer
data (integers in float64, NumPy's mean dtype for them), no ``dtype=``, reduced axes trailing
(a kernel reduces trailing axes), sizes known and more elements than ``ddof`` (otherwise NumPy
warns "Degrees of freedom <= 0"); anything else stays NumPy's call.
"""

from __future__ import annotations

import math

import numpy as np

from npdynamo.backends.numba.fusion import _trailing
from npdynamo.backends.numba.lowering import NotFusible
from npdynamo.backends.numba.masked_loops import new_node, rewrite_nodes
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta


def _axes(axis: object, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    raw = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in raw))


def _rewrite(graph: Graph, node: Node, made: list) -> Node:
    (x,) = node.args
    kwargs = dict(node.kwargs)
    axis, ddof = kwargs.pop("axis", None), kwargs.pop("ddof", 0)
    keepdims = bool(kwargs.pop("keepdims", False))
    meta = x.meta.get("val") if isinstance(x, Node) else None
    if kwargs or not isinstance(meta, ArrayMeta) or meta.dtype.kind not in "iuf" \
            or meta.dtype == np.float16 or type(ddof) not in (int, float) or not meta.ndim:
        raise NotFusible("var/std: arguments or dtype NumPy's call keeps")
    axes = _axes(axis, meta.ndim)
    sizes = [meta.shape[a] for a in axes]
    if not _trailing(axes, meta.ndim) or not all(type(d) is int for d in sizes):
        raise NotFusible("var/std over leading axes or symbolic sizes")
    count = math.prod(sizes)
    if not count - ddof > 0:
        raise NotFusible("var/std with no degrees of freedom (NumPy warns)")
    mean_kw = {"axis": axes, "keepdims": True}
    if meta.dtype.kind in "iu":
        mean_kw["dtype"] = np.dtype(np.float64)
    mean = new_node(graph, node, "mean", (x,), mean_kw, made=made)
    deviation = new_node(graph, node, "subtract", (x, mean), made=made)
    square = new_node(graph, node, "multiply", (deviation, deviation), made=made)
    total = new_node(graph, node, "sum", (square,), {"axis": axes, "keepdims": keepdims},
                     made=made)
    # NumPy divides by its count as an intp scalar (strong: a float32 sum is divided in
    # float64, then stored back as float32)
    divisor = np.maximum(np.intp(count) - ddof, 0)
    var = new_node(graph, node, "divide", (total, divisor), made=made)
    if var.meta["val"].dtype != total.meta["val"].dtype:
        var = new_node(graph, node, "astype", (var,), {"dtype": total.meta["val"].dtype},
                       made=made)
    if node.target.name == "std":
        return new_node(graph, node, "sqrt", (var,), made=made)
    return var


def expand_moments(graph: Graph) -> None:
    """Rewrite each ``var``/``std`` node of ``graph`` as the reductions above where it can be."""
    for name in ("var", "std"):
        rewrite_nodes(graph, name, _rewrite)
