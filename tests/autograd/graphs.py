"""Forward graphs of test losses, to build joint graphs from: captured by ``npdynamo.compile``
(a recording backend keeps the graph and its example inputs) or hand-made from a tape.

A tape-made graph has one placeholder per differentiated leaf and one node per recorded op;
arguments that need no gradient (data, labels) are constants of the graph. It specialises
Python control flow to the values it ran on, exactly like the tape itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import npdynamo
from npdynamo.autograd import tree_flatten, tree_unflatten
from npdynamo.autograd.tape import OpRecord, Tape
from npdynamo.autograd.tracer import Tracer
from npdynamo.fx import Graph, GraphModule
from npdynamo.ops import ArrayMeta


def _argnums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def tape_graph(fn, args: tuple, argnums) -> tuple[GraphModule, list[Any]]:
    """(forward graph of ``fn`` with one input per array leaf of ``argnums``, those leaves)."""
    tape = Tape()
    args = list(args)
    leaves_out, graph = [], Graph()
    env: dict[int, Any] = {}
    for i in _argnums(argnums):
        leaves, treedef, _ = tree_flatten(args[i])
        wrapped = []
        for leaf in leaves:
            if isinstance(leaf, np.ndarray):
                t = Tracer(leaf, tape, tape.new_var())
                env[t.var] = graph.placeholder(f"p{len(leaves_out)}", ArrayMeta.of(leaf))
                leaves_out.append(leaf)
                wrapped.append(t)
            else:
                wrapped.append(leaf)
        args[i] = tree_unflatten(treedef, wrapped)
    result = fn(*args)
    for record in tape.records:
        if not isinstance(record, OpRecord):
            raise AssertionError(f"cannot turn {record!r} into a graph node")
        node_args = _substitute(record.args, record.keys, env)
        node = graph.call_function(record.op, node_args, record.kwargs)
        node.meta["val"] = ArrayMeta.of(record.out)
        env[record.outputs[0]] = node
    assert isinstance(result, Tracer) and result.var is not None
    graph.output((env[result.var],))
    return GraphModule(graph), leaves_out


def _substitute(args: Any, keys: Any, env: dict[int, Any]) -> Any:
    if isinstance(keys, tuple):
        return type(args)(_substitute(a, k, env) for a, k in zip(args, keys))
    if keys is not None:
        return env[keys]
    return args


def captured_graph(fn, args: tuple) -> tuple[GraphModule, list[Any]]:
    """The single graph ``npdynamo.compile(fn, fullgraph=True)`` captures, and its inputs."""
    seen = []

    def recorder(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward

    npdynamo.compile(fn, backend=recorder, fullgraph=True)(*args)
    assert len(seen) == 1, f"{fn.__name__}: expected one graph, got {len(seen)}"
    return seen[0]
