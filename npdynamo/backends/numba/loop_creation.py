"""New arrays in loop programs: the loop writer's nopython code for the creation ops
(``zeros``, ``ones``, ``empty`` and their ``*_like``, ``full``, ``eye``, ``diag``), which
would otherwise be NumPy calls in object mode (``loop_writer.Writer`` mixes ``CreationCode`` in).

Each gives what NumPy gives: the result's shape and dtype come from the node's meta, the
contents are numba's ``np.zeros``/``np.ones``/``np.full``/``np.eye`` of them (``empty`` and
``empty_like`` allocate zeros in the graph, ``ops/numeric.py``, and here too), and the result
is C-contiguous. A ``*_like`` keeps its operand's memory order in NumPy (``order="K"``): the
compiled code checks that the operand is C-contiguous (or of at most one dimension, an
argument of the whole graph's function, which ``loop_program`` runs only on such arrays, or
an array created here) and raises otherwise, so the call reruns on NumPy. A ``full`` takes
only a fill value NumPy stores unchanged (a number or NumPy scalar of the result's own kind);
anything else stays NumPy's call. ``np.diag`` of a vector is a new matrix; of a matrix NumPy
gives a read-only view of its diagonal, which the compiled code copies: the same values at that
point of the graph (whose ops are functional), so the copy serves wherever the diagonal is only
read, not where it can become a result (``_escapes``: a returned array's identity and flags
would differ).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.backends.numba.loop_scalars import NoNopythonForm, node_meta
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_loop, is_subgraph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta


def _takes_kwargs(method: Any) -> Any:
    method.takes_kwargs = True  # (``Writer.op`` passes nodes with keywords to these only)
    return method


def _escapes(node: Node, passed_through: bool = False) -> bool:
    """Whether ``node``'s array may become a result of its graph: returned, given to a branch
    that may return it, carried by a loop that returns it or changes it, or a view of it that
    may. ``passed_through``: ``node`` is a loop body's placeholder its output returns, as it
    is, at its own carried position only (the caller checks the loop's result there)."""
    for user in node.users:
        if user.op == "output" and passed_through:
            continue
        if user.op != "call_function":  # (the output node, or a use not known here)
            return True
        if getattr(user.target, "view", False) and user.args and user.args[0] is node:
            meta = node_meta(user)
            if not (isinstance(meta, ArrayMeta) and meta.scalar) and _escapes(user):
                return True
            continue
        if _escapes_through(user, node):
            return True
    return False


def _outputs(graph: Any) -> list:
    out = graph.output_node.args[0] if graph.output_node.args else ()
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _escapes_through(user: Node, node: Node) -> bool:
    """Whether ``node`` may become a result through ``user``'s branches or loop bodies (an op
    without them only reads it)."""
    name = getattr(user.target, "name", "")
    carried: tuple = ()
    if name == "cond":
        _pred, true_fn, false_fn, operands, *extra = (*user.args, (), ())[:6]
        given = [(true_fn, [*operands, *extra[0]], 0), (false_fn, [*operands, *extra[1]], 0)]
    elif is_loop(user) and name == "while_loop":
        cond_fn, body_fn, carried, cond_extra, body_extra = (*user.args, (), ())[:5]
        given = [(cond_fn, [*carried, *cond_extra], 0), (body_fn, [*carried, *body_extra], 0)]
    elif is_loop(user):
        _lower, _upper, body_fn, carried, body_extra = (*user.args, ())[:5]
        given = [(body_fn, [None, *carried, *body_extra], 1)]
    else:
        return False
    for sub, values, first in given:
        if not is_subgraph(sub):  # (not a captured graph: nothing known of what it returns)
            return True
        placeholders, out = list(sub.graph.placeholders), _outputs(sub.graph)
        for k, v in enumerate(values):
            if v is not node:
                continue
            p, at = placeholders[k], k - first
            if not (is_loop(user) and 0 <= at < len(carried)):
                if _escapes(p):
                    return True
                continue
            # a carried array: the loop may return it only where the body passes it through
            if sub is not body_fn or out.count(p) != 1 or out[at] is not p or _escapes(p, True):
                return True
            results = [u for u in user.users if getattr(u.target, "name", "") == "tuple_item"
                       and u.args[0] is user and u.args[1] == at]
            if len(user.users) != len([u for u in user.users if getattr(
                    u.target, "name", "") == "tuple_item"]) or any(map(_escapes, results)):
                return True
    return False


class CreationCode:
    """Creation ops as nopython expressions (a mixin of the writer: ``shape``, ``size``,
    ``dtype``, ``value`` and ``fresh`` are the writer's)."""

    #: arrays known C-contiguous in the code being written (a ``*_like``'s operand may be one)
    c_ordered: set[Node]

    def emit(self, line: str, depth: int) -> None:  # pragma: no cover - the writer's
        raise NotImplementedError

    def _new(self, node: Node, fresh: set, call: str, *middle: str) -> str:
        meta = node_meta(node)
        if not isinstance(meta, ArrayMeta) or meta.scalar or meta.dtype.kind not in "biuf":
            raise NoNopythonForm("a new array of another kind than bool, int or float")
        fresh.add(node)
        self.c_ordered.add(node)
        return f"np.{call}({self.shape(meta)}, {''.join(m + ', ' for m in middle)}" \
               f"{self.dtype(meta)})"

    def _like_operand(self, node: Node, env: dict, depth: int) -> None:
        (x,) = node.args
        meta = node_meta(x)
        if not isinstance(meta, ArrayMeta):
            raise NoNopythonForm(f"{node.target.name} of something other than an array")
        if len(meta.shape) > 1 and x not in self.c_ordered:
            # NumPy's result keeps the operand's memory order: one the compiled code cannot
            # give raises, and the call reruns on NumPy (views of C-ordered arrays, the only
            # arrays here, are C-ordered or strided: never F-ordered)
            self.emit(f"if not {self.value(x, env)}.flags.c_contiguous:", depth)
            self.emit(f"raise ValueError('{node.target.name} of a strided array')", depth + 1)

    @_takes_kwargs
    def op_zeros(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        return self._new(node, fresh, "zeros")

    op_empty = op_zeros

    @_takes_kwargs
    def op_ones(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        return self._new(node, fresh, "ones")

    @_takes_kwargs
    def op_zeros_like(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        self._like_operand(node, env, depth)
        return self._new(node, fresh, "zeros")

    op_empty_like = op_zeros_like

    @_takes_kwargs
    def op_ones_like(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        self._like_operand(node, env, depth)
        return self._new(node, fresh, "ones")

    @_takes_kwargs
    def op_full(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        (fill,) = node.args
        kind = node_meta(node).dtype.kind if isinstance(node_meta(node), ArrayMeta) else ""
        fm = node_meta(fill)
        py = fm.type if isinstance(fm, ScalarMeta) else type(fill)
        same = (isinstance(fm, ArrayMeta) and fm.scalar and fm.dtype == node_meta(node).dtype
                ) or (py is float and kind == "f" and node_meta(node).dtype == np.float64) or (
                py is int and node_meta(node).dtype == np.int64) or (py is bool and kind == "b")
        if not same:
            raise NoNopythonForm("full with a fill value NumPy converts")
        return self._new(node, fresh, "full", self.value(fill, env))

    @_takes_kwargs
    def op_eye(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        k = node.kwargs.get("k", 0)
        if node.args or type(k) is not int:
            raise NoNopythonForm("eye with a diagonal offset that is no int constant")
        meta = node_meta(node)
        if not isinstance(meta, ArrayMeta) or meta.dtype.kind not in "iuf":
            raise NoNopythonForm("eye of another dtype than int or float")
        fresh.add(node)
        self.c_ordered.add(node)
        n, m = (self.size(d) for d in meta.shape)
        return f"np.eye({n}, {m}, {k}, {self.dtype(meta)})"

    @_takes_kwargs
    def op_diag(self, node: Node, env: dict, depth: int, fresh: set) -> str:
        (v,) = node.args
        k = node.kwargs.get("k", 0)
        meta = node_meta(v)
        if type(k) is not int or not isinstance(meta, ArrayMeta) or meta.scalar or (
                len(meta.shape) not in (1, 2) or meta.dtype.kind not in "biuf"):
            raise NoNopythonForm("diag other than of a bool, int or float vector or matrix "
                                 "with a constant k")
        if len(meta.shape) == 2 and _escapes(node):
            raise NoNopythonForm("diag of a matrix (NumPy's read-only view) that may be a result")
        fresh.add(node)
        self.c_ordered.add(node)
        return f"np.diag({self.value(v, env)}, {k})"
