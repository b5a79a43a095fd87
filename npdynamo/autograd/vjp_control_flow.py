"""Reverse mode through control-flow nodes (``cond``, ``fori_loop``; ``while_loop`` refuses).

A control-flow node returns a tuple that ``tuple_item`` nodes take apart, so reverse mode
(``symbolic.reverse_mode``) gathers the cotangents of those items per node and hands them here
all at once, as ``{result index: cotangent}``; this module says what flows into the node's
inputs (its carried values and the outer values its subgraphs read).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from npdynamo.autograd.emitting import Emit
from npdynamo.errors import GradError
from npdynamo.fx import Node


def _where(node: Node) -> str:
    source = node.meta.get("source")
    if not source:
        return ""
    filename, lineno, line = source
    return f" (at {filename}:{lineno}: {str(line).strip()})"


def control_flow_step(node: Node, cotangents: dict[int, Any], keys: tuple,
                      emit: Emit) -> Iterator[tuple[Any, Any]]:
    """(input key, cotangent) pairs for the inputs of control-flow ``node`` that want one."""
    name = node.target.name
    if name == "while_loop":
        raise GradError(
            f"npdynamo.while_loop{_where(node)} is not differentiable: its trip count is known "
            "only at run time, so there is no saved state to run it backwards (as in jax); use "
            "npdynamo.fori_loop with a fixed trip count, or a plain Python loop")
    raise GradError(f"npdynamo.{name}{_where(node)} has no gradient rule yet")
    yield  # pragma: no cover - a generator, for the rules to come
