"""Algebraic simplification: cheaper ops with the same results, before a backend compiles.

Rewrites (each only when the result's shape, dtype and NumPy-scalar-ness stay the same):

* ``x ** 2`` -> ``x * x`` (exact: both are one correctly rounded operation);
  ``x ** 3`` ... ``x ** 8`` -> products by squaring (integers: exact, wrapping alike; floats:
  within 2 ulp of the correctly rounded power up to ``x ** 4``, 5 ulp of NumPy's up to ``x ** 8``:
  the documented tolerance; NumPy's ``power`` with an integral exponent is 9-47x slower than
  the products: a Lennard-Jones ``(1 / r) ** 6``); ``x ** 1`` -> ``+x``; ``x ** -1`` -> ``1 / x``
  for floats (exact).
* ``x ** 0.5`` -> ``sqrt(x)`` where exact: only when ``x`` is known to be non-negative and not
  ``-0.0`` (squares, absolute values, exponentials, sums and products of those), because
  ``sqrt(-0.0)`` is ``-0.0`` and ``sqrt(-inf)`` is nan where the power gives ``+0.0`` and inf.
* Identities that keep NaN, inf and the sign of zero: ``x * 1``, ``1 * x``, ``x / 1``,
  ``x - 0``, ``x + (-0.0)`` (and ``x + 0`` for integers), ``x.astype(x.dtype)`` -> ``x``.
  Dropping the op would make the value share memory with ``x``, so this happens only when every
  reader of the value makes a new array anyway (elementwise ops and reductions), never for a
  graph output.
* ``broadcast_view`` (``np.broadcast_arrays``' writeable view) -> ``broadcast_to`` (read-only)
  when every reader makes a new array: the same data, and numba reading the view's flags would
  trigger NumPy's warning about writes to it, which plain NumPy never shows there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import in_subgraphs
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY


def _op(node: Node) -> str | None:
    return getattr(node.target, "name", None) if node.op == "call_function" else None


def _meta(value: Any) -> ArrayMeta | None:
    meta = value.meta.get("val") if isinstance(value, Node) else None
    return meta if isinstance(meta, ArrayMeta) else None


def _number(value: Any) -> float | None:
    """A constant operand as a number (Python or NumPy scalar), else ``None``."""
    if type(value) in (bool, int, float):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    return None


def _nonnegative(value: Any, depth: int = 0) -> bool:
    """Whether every element is >= +0.0 or nan (never -0.0 or negative)."""
    number = _number(value)
    if number is not None:
        return number > 0 or (number == 0 and not np.signbit(number))
    if not isinstance(value, Node) or depth > 8:
        return False
    if value.op != "call_function":
        return False
    nonnegative = getattr(value.target, "nonnegative", None)  # (an Op's trait)
    if nonnegative == "always":
        return True
    if _op(value) == "multiply" and value.args[0] is value.args[1]:
        return True
    if nonnegative == "operands" and value.args:
        return all(_nonnegative(a, depth + 1) for a in value.args)
    return False


def _new(graph: Graph, before: Node, name: str, args: tuple) -> Node:
    op = REGISTRY[name]
    with graph.inserting_before(before):
        node = graph.call_function(op, args)
    metas = tuple(_meta(a) or a for a in args)
    node.meta["val"] = op.infer(*metas)
    node.meta["source"] = before.meta.get("source")
    return node


def _same(a: ArrayMeta | None, b: ArrayMeta | None) -> bool:
    return a is not None and b is not None and a == b


def _rewrite_power(graph: Graph, node: Node) -> Node | None:
    if len(node.args) != 2 or node.kwargs:
        return None
    x, exponent = node.args
    k, meta, x_meta = _number(exponent), _meta(node), _meta(x)
    if k is None or type(k) is bool or not _same(meta, x_meta):
        return None
    if x_meta.dtype.kind not in "iuf":
        return None
    if k == 0.5 and x_meta.dtype.kind == "f" and _nonnegative(x):
        return _new(graph, node, "sqrt", (x,))
    if k == -1 and x_meta.dtype.kind == "f":
        return _new(graph, node, "divide", (1.0, x))
    if k == 1:
        return _new(graph, node, "positive", (x,))
    if k in range(2, 9):
        square = _new(graph, node, "multiply", (x, x))
        if k == 2:
            return square
        if k in (3, 6, 7):
            cube = _new(graph, node, "multiply", (square, x))
            if k == 3:
                return cube
            sixth = _new(graph, node, "multiply", (cube, cube))
            return sixth if k == 6 else _new(graph, node, "multiply", (sixth, x))
        fourth = _new(graph, node, "multiply", (square, square))
        if k == 4:
            return fourth
        return _new(graph, node, "multiply", (fourth, x if k == 5 else fourth))
    return None


def _only_fresh_readers(node: Node) -> bool:
    """Every reader makes a new array from it (so reading ``x`` instead is unobservable)."""
    return bool(node.users) and all(
        u.op == "call_function" and getattr(u.target, "kind", "") in ("elementwise", "reduction")
        for u in node.users
    )


def _identity_operand(node: Node) -> Any:
    """The operand ``x`` when ``node`` computes exactly ``x``, else ``None``."""
    name, args = _op(node), node.args
    if node.kwargs and name != "astype":
        return None
    if name == "astype":
        x = args[0] if args else None
        return x if _same(_meta(x), _meta(node)) else None
    if len(args) != 2:
        return None
    a, b = args
    for x, c, commutes in ((a, b, True), (b, a, name in ("multiply", "add"))):
        if not commutes or not _same(_meta(x), _meta(node)):
            continue
        number = _number(c)
        if number is None or type(number) is bool:
            continue
        kind = _meta(x).dtype.kind
        if name in ("multiply", "divide") and number == 1 and (name == "multiply" or x is a):
            return x
        if name == "subtract" and x is a and number == 0 and not np.signbit(number):
            return x
        if name == "add" and number == 0 and (kind in "iu" or np.signbit(number)):
            return x
    return None


def simplify(graph: Graph) -> int:
    """Apply the rewrites of the module docstring in place; returns how many were made."""
    changed = in_subgraphs(graph, simplify)
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        name = _op(node)
        if name == "power":
            new = _rewrite_power(graph, node)
            if new is not None:
                node.replace_all_uses_with(new)
                graph.erase_node(node)
                changed += 1
            continue
        if name == "broadcast_view" and _only_fresh_readers(node):
            node.target = REGISTRY["broadcast_to"]
            changed += 1
            continue
        if name in ("multiply", "divide", "add", "subtract", "astype"):
            x = _identity_operand(node)
            if x is not None and _only_fresh_readers(node):
                node.replace_all_uses_with(x)
                graph.erase_node(node)
                changed += 1
    return changed
