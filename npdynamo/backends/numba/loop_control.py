"""The loop writer's control flow: a ``cond``, ``while_loop`` or ``fori_loop`` nested in a loop
body, written as Python ``if``/``while``/``for`` of the nopython function (a mixin of
``loop_writer.Writer``, whose ``graph`` writes each branch and body).

Carried values are locals assigned before the statement and re-assigned at the end of each
iteration or branch; a carried array the body writes in place is copied once before the first
iteration, unless the loop already owns it (``shared``).
"""

from __future__ import annotations

from typing import Any

from npdynamo.backends.numba.loop_scalars import node_meta
from npdynamo.fx.node import Node


class ControlFlowCode:
    """``control_flow`` and the ``emit_*`` statements of the loop writer."""

    def control_flow(self, node: Node, name: str, args: list, env: dict[Node, str],
                     depth: int, fresh: set[Node] = frozenset()) -> str:
        """Emit a nested ``cond``/``while_loop``/``fori_loop``; the local holding its results."""
        (given,) = args
        vals = lambda seq: [self.value(v, env) for v in seq]  # noqa: E731
        if name == "cond":
            pred, true_fn, false_fn, operands, *extra = (*given, (), ())[:6]
            writable = [self._writable_operands(node, [*operands, *e]) for e in extra]
            return self.emit_cond(self.truth(self.value(pred, env), node_meta(pred)), true_fn,
                                  false_fn, vals(operands), vals(extra[0]), vals(extra[1]),
                                  depth, writable)
        if name == "while_loop":
            cond_fn, body_fn, carried, cond_extra, body_extra = (*given, (), ())[:5]
            return self.emit_while(cond_fn, body_fn, vals(carried), vals(cond_extra),
                                   vals(body_extra), depth)
        lower, upper, body_fn, carried, body_extra = (*given, ())[:5]
        # a carried array that is the enclosing loop's own (read by nothing after this loop)
        # needs no copy of its own: the enclosing loop copied it once. Not one the body also
        # reads as an extra (``held[0]`` of ``held = [v]``): writing it would change that
        shared = self._writable_operands(node, list(carried), also_read=list(body_extra))
        # an array allocated here that only this loop reads is the loop's own already: no
        # copy before its first iteration (a zero-trip loop returns it, a new array too)
        shared |= {k for k, v in enumerate(carried) if isinstance(v, Node) and v in fresh
                   and len(v.users) == 1 and [*carried, *body_extra].count(v) == 1}
        self.shared[node] = shared
        return self.emit_fori(self.value(lower, env), self.value(upper, env), body_fn,
                              vals(carried), vals(body_extra), depth, shared)

    def _carry(self, values: list[str], depth: int) -> list[str]:
        names = [self.fresh("c") for _ in values]
        for name, v in zip(names, values):
            self.emit(f"{name} = {v}", depth)
        return names

    def _assign(self, names: list[str], outs: list[tuple[str, Any]], depth: int) -> None:
        if names:
            self.emit(f"{', '.join(names)}, = ({', '.join(e for e, _ in outs)},)", depth)

    def _result(self, names: list[str], depth: int) -> str:
        result = self.fresh("r")
        self.emit(f"{result} = ({''.join(n + ', ' for n in names)})", depth)
        return result

    def emit_while(self, cond_fn: Any, body_fn: Any, carried: list[str], cond_extra: list[str],
                   body_extra: list[str], depth: int) -> str:
        names = self._carry(carried, depth)
        self.emit("while True:", depth)
        self.loop_depth += 1
        ((test, meta),) = self.graph(cond_fn, names + cond_extra, depth + 1)
        self.emit(f"if not {self.truth(test, meta)}:", depth + 1)
        self.emit("break", depth + 2)
        self._assign(names, self.graph(body_fn, names + body_extra, depth + 1), depth + 1)
        self.loop_depth -= 1
        return self._result(names, depth)

    def emit_fori(self, lower: str, upper: str, body_fn: Any, carried: list[str],
                  body_extra: list[str], depth: int, shared: set[int] = frozenset()) -> str:
        names = self._carry(carried, depth)
        index = self.fresh("i")
        bounds = self.expr_interval(lower), self.expr_interval(upper)
        if None not in bounds:  # (a range's index lies in [lower, upper - 1] when it runs)
            self.ranges[index] = (bounds[0][0], bounds[1][1] - 1)
        header = len(self.lines)
        self.emit(f"for {index} in range({lower}, {upper}):", depth)
        self.written = ()
        self.loop_depth += 1
        outs = self.graph(body_fn, [index, *names, *body_extra], depth + 1,
                          owned=(1, len(carried)))
        self.loop_depth -= 1
        # the carried arrays the body writes in place are the loop's own copies, made before
        # the first iteration (a loop of no iteration returns its arguments themselves)
        copies = [f"{'    ' * (depth + 1)}{names[k]} = {names[k]}.copy()" for k in self.written
                  if k not in shared]
        if copies:
            self.lines[header:header] = [f"{'    ' * depth}if {lower} < {upper}:", *copies]
        self._assign(names, outs, depth + 1)
        return self._result(names, depth)

    def emit_cond(self, pred: str, true_fn: Any, false_fn: Any, operands: list[str],
                  true_extra: list[str], false_extra: list[str], depth: int,
                  writable: list[set[int]] = ((), ())) -> str:
        self.emit(f"if {pred}:", depth)
        outs = self.graph(true_fn, operands + true_extra, depth + 1, writable=writable[0])
        names = [self.fresh("b") for _ in outs]
        self._assign(names, outs, depth + 1)
        self.emit("else:", depth)
        self._assign(names, self.graph(false_fn, operands + false_extra, depth + 1,
                                       writable=writable[1]), depth + 1)
        return self._result(names, depth)
