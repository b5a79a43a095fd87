"""The min-cut rematerialisation partitioner: a joint graph split into forward and backward.

The backward graph needs some values that only depend on the primals. Each one is either
*saved* (computed by the forward graph and kept alive until the backward runs) or
*recomputed* by the backward from other saved values. Choosing what to save is a minimum cut:
every forward-computable value ``v`` the backward depends on becomes an arc ``v_in -> v_out``
whose capacity is its size in bytes; data dependencies are infinite arcs; primals and values
that must not be recomputed (contractions, reductions, impure ops) hang off the source; values
read by tangent-dependent nodes feed the sink. The cut arcs are the saved values, so the cut
minimises the bytes held between forward and backward while cheap elementwise and shape ops
are recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npdynamo import logs
from npdynamo.autograd.joint import JointGraph, output_values
from npdynamo.autograd.maxflow import INF, FlowNetwork
from npdynamo.errors import GradError
from npdynamo.fx import Graph, GraphModule, Node, map_arg
from npdynamo.fx.sizes import symbol_origins, symbols_used
from npdynamo.ops import ArrayMeta, Op
from npdynamo.ops.symbolic import hint_of
from npdynamo.ops.symbolic_code import symbol_name


def recomputable(node: Node) -> bool:
    """Whether the backward may recompute ``node`` instead of having it saved."""
    op = node.target
    if node.op != "call_function" or not isinstance(op, Op) or op.impure:
        return False
    return op.recomputable


def nbytes(node: Node) -> int:
    """Bytes of ``node``'s value; for symbolic sizes, at the sizes seen at capture (the cut
    is valid for every size, only its cost is measured at those)."""
    val = node.meta.get("val")
    if isinstance(val, tuple):  # an op with several results (np.linalg.eigh): all of them
        return sum(hint_of(v.nbytes) for v in val if isinstance(v, ArrayMeta))
    return hint_of(val.nbytes) if isinstance(val, ArrayMeta) else 0


def _shape_and_dtype(node: Node) -> tuple:
    val = node.meta["val"]
    if isinstance(val, tuple):  # several results (np.linalg.svd, a control-flow node)
        return (tuple(getattr(v, "shape", ()) for v in val),
                ", ".join(str(getattr(v, "dtype", type(v).__name__)) for v in val))
    return val.shape, str(val.dtype)


@dataclass(frozen=True)
class SavedValue:
    """One value the forward graph keeps for the backward graph."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)} ({_fmt_bytes(self.nbytes)})"


@dataclass
class Partition:
    """``forward(*primals) -> (*outputs, *saved)``; ``backward(*saved, *tangents) -> grads``."""

    forward: GraphModule
    backward: GraphModule
    saved: list[SavedValue]
    num_outputs: int
    tangent_outputs: list[int]
    grad_inputs: list[int]
    recomputed: list[str] = field(default_factory=list)
    #: bytes if the forward kept every value it computes, and the inputs the backward reads
    bytes_all_intermediates: int = 0
    #: bytes if the backward recomputed nothing (saving every forward value it reads)
    bytes_without_recompute: int = 0

    @property
    def bytes_saved(self) -> int:
        return sum(s.nbytes for s in self.saved)

    def __str__(self) -> str:
        fwd_ops = sum(n.op == "call_function" for n in self.forward.graph.nodes)
        bwd_ops = sum(n.op == "call_function" for n in self.backward.graph.nodes)
        lines = [
            f"AOT partition: forward {fwd_ops} ops, backward {bwd_ops} ops "
            f"({len(self.recomputed)} recomputed)",
            f"saved for backward: {len(self.saved)} values, {_fmt_bytes(self.bytes_saved)} "
            f"(every forward value: {_fmt_bytes(self.bytes_all_intermediates)}; "
            f"without recomputation: {_fmt_bytes(self.bytes_without_recompute)})",
        ]
        lines += [f"  {s}" for s in self.saved]
        if self.recomputed:
            lines.append(f"recomputed in backward: {', '.join(self.recomputed)}")
        return "\n".join(lines)


def _fmt_bytes(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def partition(joint: JointGraph) -> Partition:
    """Split ``joint`` with the min-cut rule; logs the result on ``aot_graphs``."""
    graph = joint.gm.graph
    nodes = list(graph.nodes)
    placeholders = graph.placeholders
    primals, tangents = placeholders[: joint.num_primals], placeholders[joint.num_primals:]
    outs = output_values(joint.gm)
    fwd_outs, grad_outs = outs[: joint.num_outputs], outs[joint.num_outputs:]

    tangent_dep: set[Node] = set(tangents)
    for n in nodes:
        if n.op == "call_function" and any(i in tangent_dep for i in n.all_input_nodes):
            tangent_dep.add(n)
    grad_nodes = {v for v in grad_outs if isinstance(v, Node)}
    needed_by_bwd = _ancestors(nodes, grad_nodes)
    candidates = [n for n in nodes if n in needed_by_bwd and n not in tangent_dep
                  and n.op != "output"]
    saved_nodes = _min_cut(candidates, tangent_dep, grad_nodes, set(primals))
    saved_nodes += _size_sources(graph, saved_nodes, tangents)

    forward = _forward_graph(nodes, primals, fwd_outs, saved_nodes)
    backward, recomputed = _backward_graph(nodes, saved_nodes, tangents, grad_outs, tangent_dep)
    forward_values = _ancestors(nodes, {v for v in fwd_outs if isinstance(v, Node)})
    # Values with no inputs (zeros, arange...) are recomputed by any sensible scheme.
    every_value = {n for n in forward_values if n.op == "call_function" and n.all_input_nodes}
    every_value |= {n for n in candidates if n.op == "placeholder"
                    and any(u in tangent_dep for u in n.users)} | set(saved_nodes)
    direct = {n for n in candidates if n.all_input_nodes or n.op == "placeholder"}
    direct = {n for n in direct if n in grad_nodes or any(u in tangent_dep for u in n.users)}
    result = Partition(
        forward=forward,
        backward=backward,
        saved=[SavedValue(n.name, *_shape_and_dtype(n), nbytes(n)) for n in saved_nodes],
        num_outputs=joint.num_outputs,
        tangent_outputs=list(joint.tangent_outputs),
        grad_inputs=list(joint.grad_inputs),
        recomputed=recomputed,
        bytes_all_intermediates=sum(nbytes(n) for n in every_value),
        bytes_without_recompute=sum(nbytes(n) for n in direct),
    )
    if logs.enabled("aot_graphs"):
        logs.get_logger("aot_graphs").info(
            "%s\nforward graph:\n%s\nbackward graph:\n%s", result, forward.code, backward.code
        )
    return result


def _size_sources(graph: Graph, saved: list[Node], tangents: list[Node]) -> list[Node]:
    """Primals to save so that the backward can read every symbolic size it may compute with
    (``broadcast_to(g, (s0, 3))`` after ``sum(x)`` saves nothing else holding ``s0``). A primal
    is an input: saving it keeps a reference, no new memory."""
    given: set[str] = set()
    for node in (*saved, *tangents):
        val = node.meta.get("val")
        if isinstance(val, ArrayMeta):
            given |= {symbol_name(d) for d in val.shape} - {None}
    origins = symbol_origins(graph)
    extra: list[Node] = []
    for name in sorted(symbols_used(graph) - given):
        if name in origins and origins[name][0] not in saved and origins[name][0] not in extra:
            extra.append(origins[name][0])
    return extra


def _ancestors(nodes: list[Node], roots: set[Node]) -> set[Node]:
    found = set(roots)
    for n in reversed(nodes):
        if n in found:
            found.update(n.all_input_nodes)
    return found


def _min_cut(candidates: list[Node], tangent_dep: set[Node], grad_nodes: set[Node],
             primals: set[Node]) -> list[Node]:
    """The candidates to save, in program order."""
    net = FlowNetwork()
    source, sink = net.add_vertex(), net.add_vertex()
    vin = {n: net.add_vertex() for n in candidates}
    vout = {n: net.add_vertex() for n in candidates}
    for n in candidates:
        net.add_edge(vin[n], vout[n], nbytes(n))
        if n in primals or not recomputable(n):
            net.add_edge(source, vin[n], INF)
        if n in grad_nodes:
            net.add_edge(vout[n], sink, INF)
        for user in n.users:
            if user in tangent_dep:
                net.add_edge(vout[n], sink, INF)
            elif user in vin:
                net.add_edge(vout[n], vin[user], INF)
    if net.max_flow(source, sink) == INF:
        raise GradError("internal error: the partitioner found no finite cut")
    side = net.source_side(source)
    return [n for n in candidates if vin[n] in side and vout[n] not in side]


def _copy_node(graph: Graph, node: Node, env: dict[Node, Node]) -> Node:
    new = graph.create_node(
        "call_function", node.target, map_arg(node.args, env.__getitem__),
        map_arg(node.kwargs, env.__getitem__), name=node.name,
    )
    new.meta = dict(node.meta)
    return new


def _placeholder(graph: Graph, node: Node) -> Node:
    new = graph.placeholder(node.name)
    new.meta = {k: v for k, v in node.meta.items() if k != "source"}
    return new


def _mapped(value: Any, env: dict[Node, Node]) -> Any:
    return env[value] if isinstance(value, Node) else value


def _forward_graph(nodes: list[Node], primals: list[Node], fwd_outs: list[Any],
                   saved: list[Node]) -> GraphModule:
    graph = Graph()
    env = {p: _placeholder(graph, p) for p in primals}
    roots = {v for v in fwd_outs if isinstance(v, Node)} | set(saved)
    needed = _ancestors(nodes, roots)
    for n in nodes:
        if n in needed and n.op == "call_function":
            env[n] = _copy_node(graph, n, env)
    graph.output(tuple(_mapped(v, env) for v in fwd_outs) + tuple(env[s] for s in saved))
    return GraphModule(graph, name="forward")


def _backward_graph(nodes: list[Node], saved: list[Node], tangents: list[Node],
                    grad_outs: list[Any], tangent_dep: set[Node]) -> tuple[GraphModule, list]:
    graph = Graph()
    env = {s: _placeholder(graph, s) for s in saved}
    env.update({t: _placeholder(graph, t) for t in tangents})
    needed = {v for v in grad_outs if isinstance(v, Node)}
    for n in reversed(nodes):
        if n in needed and n not in env:
            needed.update(n.all_input_nodes)
    recomputed = []
    for n in nodes:
        if n not in needed or n in env:
            continue
        if n.op != "call_function":
            raise GradError(f"internal error: the backward graph reads {n.name}, not saved")
        env[n] = _copy_node(graph, n, env)
        if n not in tangent_dep:
            recomputed.append(n.name)
    graph.output(tuple(_mapped(v, env) for v in grad_outs))
    return GraphModule(graph, name="backward"), recomputed
