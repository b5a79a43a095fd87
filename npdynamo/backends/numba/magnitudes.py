"""``abs(z) < c`` on complex ``z`` as one elementwise op of the numba backend
(``expand_abs_compares``, on its copy of the graph before fusion).

NumPy's complex ``abs`` is a division and a square root with branches around them (inf and nan
parts, ``runtime.complex_abs_*``), which keep a kernel from vectorising: an escape test such as
a Mandelbrot iteration's ``np.abs(Z) < horizon`` spends most of its time there. Compared with a
bound, the magnitude is mostly not needed: ``re*re + im*im`` (three roundings, no cancellation)
is within a few units in the last place of ``|z|**2``, and NumPy's ``abs`` within a few of
``|z|``, so where the sum is below ``c*c`` by a relative margin far wider than those errors
(``2**-30`` for float64 parts, ``2**-12`` for float32), ``abs(z) < c`` holds, and where it is
above by as much, ``abs(z) > c``; only in between (or for a ``c`` outside a range where neither
square can overflow or lose precision to underflow, a nan anywhere, an infinite part) is NumPy's
``abs`` computed and compared. The results are NumPy's, bit for bit
(``runtime.complex_abs_compare_*``).

Rewritten: ``less``, ``less_equal``, ``greater`` and ``greater_equal`` of an ``absolute`` of a
complex array against a bound the comparison's loop reads in the magnitude's own float dtype,
either way round. The ``absolute`` node goes away with the pass that drops dead code when
nothing else reads it.
"""

from __future__ import annotations

import numpy as np

from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY, Op

#: The orderings, numbered as the runtime helper takes them: ``abs(z) <op> c``.
CODES = {"less": 0, "less_equal": 1, "greater": 2, "greater_equal": 3}
_NAMES = {code: name for name, code in CODES.items()}
#: ``c <op> abs(z)`` is ``abs(z) <mirrored op> c``.
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
             "greater_equal": "less_equal"}


def _abs_compare(z, bound, *, code: int):
    """What the node computes, with NumPy (the eager fallback, constant folding)."""
    return getattr(np, _NAMES[code])(np.absolute(z), bound)


def _abs_compare_rule(z, bound, *, code: int) -> ArrayMeta:
    return REGISTRY[_NAMES[code]].infer(REGISTRY["absolute"].infer(z), bound)


#: The op the rewritten comparisons call (known to the numba backend's lowering only).
ABS_COMPARE = Op("abs_compare", _abs_compare, _abs_compare_rule, kind="elementwise",
                 differentiable=False)


def _op_name(node: object) -> str | None:
    return getattr(node.target, "name", None) if isinstance(node, Node) else None


def _dtype_key(value: object):
    """What ``resolve_dtypes`` takes for the bound, or None for a bound left alone."""
    if isinstance(value, Node):
        meta = value.meta.get("val")
        if isinstance(meta, ScalarMeta) and meta.type is float:
            return float
        return meta.dtype if isinstance(meta, ArrayMeta) else None
    if type(value) in (int, float):
        return type(value)
    return value.dtype if isinstance(value, (np.generic, np.ndarray)) else None


def _complex_magnitude(node: object) -> Node | None:
    """``z`` when ``node`` is ``absolute(z)`` of a complex array (no other arguments)."""
    if _op_name(node) != "absolute" or node.kwargs or len(node.args) != 1:
        return None
    z = node.args[0]
    meta = z.meta.get("val") if isinstance(z, Node) else None
    if not isinstance(meta, ArrayMeta) or meta.dtype.kind != "c":
        return None
    return z


def expand_abs_compares(graph: Graph) -> None:
    """Rewrite each ordering of a complex magnitude against a bound as one ``abs_compare``."""
    for node in list(graph.nodes):
        name = _op_name(node)
        if name not in CODES or node.kwargs or len(node.args) != 2:
            continue
        for side in (0, 1):
            z = _complex_magnitude(node.args[side])
            bound = node.args[1 - side]
            key = _dtype_key(bound)
            if z is None or key is None:
                continue
            part = np.dtype(z.meta["val"].dtype.type(0).real.dtype)
            try:
                loop = getattr(np, name).resolve_dtypes((part, key, None), casting="same_kind")
            except (TypeError, ValueError):
                continue
            if loop[0] != part or loop[1] != part:
                continue  # the magnitude converted to a wider type: left to NumPy's order
            code = CODES[name if side == 0 else _MIRRORED[name]]
            node.target = ABS_COMPARE
            node.args = (z, bound)
            node.kwargs = {"code": code}
            break
