"""The joint graph: a forward graph and its backward, traced together ahead of time.

From a captured forward ``GraphModule`` ``(primals...) -> (outputs...)`` and the primals that
need gradients, ``build_joint`` builds one graph ``(primals..., tangents...) -> (outputs...,
grads...)``: one tangent placeholder per floating-point output, the backward nodes emitted by
``reverse_mode`` after the forward ones, then DCE and CSE over the whole. ``partition`` splits
it into the forward and backward graphs that run at call time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npdynamo.autograd.reverse_mode import carries_gradient, graph_emitter, reverse_mode
from npdynamo.errors import GradError
from npdynamo.fx import GraphModule, Node
from npdynamo.fx.passes import run_pipeline
from npdynamo.ops import REGISTRY, ArrayMeta


@dataclass
class JointGraph:
    """``gm(*primals, *tangents) -> (*outputs, *grads)``."""

    gm: GraphModule
    num_primals: int
    num_outputs: int
    #: indices of the outputs that take a tangent (floating-point array outputs), in order
    tangent_outputs: list[int]
    #: indices of the primals that get a gradient, in the order of the grads outputs
    grad_inputs: list[int]


def output_values(gm: GraphModule) -> list:
    node = gm.graph.output_node
    if node is None:
        raise GradError("the forward graph has no output")
    value = node.args[0] if node.args else ()
    return list(value) if isinstance(value, (tuple, list)) else [value]


def build_joint(forward: GraphModule, requires_grad: Sequence[bool]) -> JointGraph:
    """The joint forward/backward graph of ``forward``; ``requires_grad`` has one flag per
    placeholder. Every node needs ``meta['val']`` (capture sets it; else run
    ``fx.passes.propagate_shapes`` first)."""
    graph, mapping = forward.graph.copy()
    primals = graph.placeholders
    if len(requires_grad) != len(primals):
        raise ValueError(f"{len(primals)} graph inputs but {len(requires_grad)} flags")
    grad_inputs = [i for i, flag in enumerate(requires_grad) if flag]
    for i in grad_inputs:
        if not carries_gradient(primals[i]):
            raise GradError(
                f"input {primals[i].name} ({primals[i].meta.get('val')}) cannot take a "
                "gradient: only floating-point arrays can"
            )
    out_node = graph.output_node
    outputs = [mapping.get(v, v) if isinstance(v, Node) else v for v in output_values(forward)]
    tangent_outputs = [i for i, v in enumerate(outputs)
                       if isinstance(v, Node) and carries_gradient(v)]
    tangents = []
    for i in tangent_outputs:
        val: ArrayMeta = outputs[i].meta["val"]
        node = graph.placeholder(f"tangent_{i}", ArrayMeta(val.shape, val.dtype))
        tangents.append(node)
    forward_nodes = [n for n in graph.nodes if n.op == "call_function"]
    emit = graph_emitter(graph)
    wrt = [primals[i] for i in grad_inputs]
    grads = reverse_mode(
        forward_nodes, [outputs[i] for i in tangent_outputs], wrt, emit, cotangent=tangents
    )
    for k, (node, ct) in enumerate(zip(wrt, grads)):
        if ct is None:
            val = node.meta["val"]
            grads[k] = emit(REGISTRY["zeros"], shape=val.shape, dtype=val.dtype)
    out_node.args = (tuple(outputs) + tuple(grads),)
    run_pipeline(graph, "joint")
    return JointGraph(GraphModule(graph, name="joint"), len(primals), len(outputs),
                      tangent_outputs, grad_inputs)
