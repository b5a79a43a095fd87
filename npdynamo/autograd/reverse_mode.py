"""Symbolic reverse mode: differentiate captured fx nodes into more fx nodes.

``reverse_mode`` is the graph-building twin of ``Tape.backward``: it walks the forward nodes
in reverse and runs the same VJP rules, but with an ``emit`` that appends nodes to a graph.
Capture calls it for ``value_and_grad(loss)(params)`` inside a compiled function (forward,
backward and the update end up in one graph); ``joint.build_joint`` calls it to make the
joint forward/backward graph that the partitioner splits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from npdynamo.autograd.emitting import Emit, backprop_step, meta
from npdynamo.errors import GradError
from npdynamo.fx import Graph, Node, map_arg
from npdynamo.ops import REGISTRY, ArrayMeta, Op
from npdynamo.ops.higher_order import CONTROL_FLOW_OPS
from npdynamo.ops.tuples import TUPLE_ITEM

#: ``step(node, cotangents, keys, emit)`` for control-flow nodes, registered by
#: ``vjp_higher_order`` (it builds backward subgraphs with ``reverse_mode``, so it sits above
#: this module and fills the slot when ``npdynamo.autograd`` is imported)
CONTROL_FLOW_STEP: list[Callable] = []


def carries_gradient(node: Node) -> bool:
    """Whether ``node``'s value is floating point (masks, indices and shapes carry none); a
    control-flow node's tuple of results does when one of them does."""
    val = node.meta.get("val")
    if isinstance(val, tuple):  # several results (np.linalg.svd, a control-flow node)
        return any(isinstance(v, ArrayMeta) and v.dtype.kind == "f" for v in val)
    return isinstance(val, ArrayMeta) and val.dtype.kind == "f"


def _constant_result(node: Node) -> bool:
    # (its array operands only lend a shape and dtype: a constant, no gradient flows into it)
    return getattr(node.target, "shape_only", False)


def reverse_mode(
    nodes: Sequence[Node],
    output: Node | Sequence[Node],
    wrt: Sequence[Node],
    emit: Emit,
    cotangent: Any = None,
) -> list[Any]:
    """Cotangents of ``wrt`` (None where ``output`` does not depend on one), built with ``emit``.

    ``nodes`` are the forward ``call_function`` nodes in program order, ``output`` the scalar
    result node (or several result nodes), ``wrt`` the placeholders or intermediate nodes to
    differentiate with respect to. With ``cotangent=None`` the output must be a scalar and is
    seeded with 1; otherwise ``cotangent`` gives one handle (or None for zero) per output.
    Nothing is emitted for nodes off the paths from ``wrt`` to ``output``.
    """
    outputs = [output] if isinstance(output, Node) else list(output)
    wrt_set = set(wrt)
    on_path = _on_path(nodes, outputs, wrt_set)
    if cotangent is None:
        for out in outputs:
            out_meta = meta(out)
            if out_meta.shape != ():
                raise GradError(
                    f"the differentiated output {out.name} has shape {out_meta.shape}; "
                    "gradients need a scalar output (reduce it with .sum() or .mean())"
                )
        seeds = [None] * len(outputs)
    else:
        seeds = [cotangent] if isinstance(output, Node) else list(cotangent)
        if len(seeds) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs but {len(seeds)} cotangents")
    grads: dict[Node, Any] = {}
    for out, seed in zip(outputs, seeds):
        if out not in on_path:
            continue
        if seed is None and cotangent is None:
            seed = emit(REGISTRY["ones"], shape=(), dtype=meta(out).dtype)
        if seed is not None:
            grads[out] = seed if out not in grads else emit(REGISTRY["add"], grads[out], seed)
    for node in reversed(nodes):
        g = grads.get(node)
        if g is None or node in wrt_set and not _reads_path(node, on_path):
            continue
        if node not in wrt_set:
            del grads[node]  # consumed: its inputs receive it below
        keys = tuple(_keys(a, on_path) for a in node.args)
        if not any(_has_key(k) for k in keys):
            continue
        op = node.target
        if op is TUPLE_ITEM:  # one result: its cotangent joins the tuple of its node's
            _project_back(node, g, grads, emit)
            continue
        if op in CONTROL_FLOW_OPS:
            steps = CONTROL_FLOW_STEP[0](node, dict(enumerate(g)), keys, emit)
        elif not isinstance(op, Op) or not op.differentiable:
            raise GradError(_not_differentiable(node))
        else:
            steps = backprop_step(op, g, node, node.args, node.kwargs, keys, emit)
        for key, ct in steps:
            seen = grads.get(key)
            grads[key] = ct if seen is None else emit(REGISTRY["add"], seen, ct)
    return [grads.get(w) for w in wrt]


def _project_back(node: Node, g: Any, grads: dict, emit: Emit) -> None:
    """``tuple_item(results, i)``: ``g`` joins the cotangent tuple of ``results`` (one
    entry per result, None where no gradient reached it), which that op's rule receives."""
    results, index = node.args
    if not getattr(results.target, "differentiable", False) and \
            results.target not in CONTROL_FLOW_OPS:
        raise GradError(_not_differentiable(node))
    parts = list(grads.get(results) or [None] * len(results.meta["val"]))
    parts[index] = g if parts[index] is None else emit(REGISTRY["add"], parts[index], g)
    grads[results] = tuple(parts)


def _on_path(nodes: Sequence[Node], outputs: list[Node], wrt: set[Node]) -> set[Node]:
    """Nodes that depend on some ``wrt`` through floating-point values and feed an output."""
    reached = set(wrt)
    complex_results = []  # reverse mode has no complex cotangents: such a value would drop out
    for node in nodes:
        if node not in reached and not _constant_result(node) and any(
            n in reached for n in node.all_input_nodes
        ):
            if carries_gradient(node):
                reached.add(node)
            elif _is_complex(node):
                complex_results.append(node)
    feeding = set(outputs)
    for node in reversed(nodes):
        if node in feeding:
            feeding.update(node.all_input_nodes)
    for node in complex_results:
        if node in feeding:  # silently a zero gradient otherwise
            op = node.target
            raise GradError(_not_differentiable(node) if isinstance(op, Op) and
                            not op.differentiable else _complex_on_path(node))
    return reached & feeding


def _is_complex(node: Node) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, tuple) else (val,)
    return any(isinstance(v, ArrayMeta) and v.dtype.kind == "c" for v in vals)


def _complex_on_path(node: Node) -> str:
    return (f"{node.name} is a complex value computed from the differentiated inputs"
            f"{source_where(node)}, and gradients through complex values are not supported")


def _reads_path(node: Node, on_path: set[Node]) -> bool:
    return any(n in on_path for n in node.all_input_nodes)


def _keys(arg: Any, on_path: set[Node]) -> Any:
    if isinstance(arg, Node):
        return arg if arg in on_path else None
    if isinstance(arg, (tuple, list)):
        return tuple(_keys(a, on_path) for a in arg)
    return None


def _has_key(keys: Any) -> bool:
    if isinstance(keys, tuple):
        return any(_has_key(k) for k in keys)
    return keys is not None


def _not_differentiable(node: Node) -> str:
    if getattr(node.target, "name", None) == "tuple_item":  # name the op whose result it is
        node = node.args[0]
    target = getattr(node.target, "name", None) or getattr(node.target, "__name__", "?")
    # the ops with several results are np.linalg's decompositions (control flow differentiates)
    prefix = "np.linalg." if isinstance(node.meta.get("val"), tuple) else "np."
    return (
        f"{prefix}{target} is not differentiable, but its result {node.name}{source_where(node)} "
        "lies on the path from the differentiated inputs to the output"
    )


def source_where(node: Node) -> str:
    """' (at file:line: source)' of the user code that made ``node``, or ''."""
    source = node.meta.get("source")
    if not source:
        return ""
    filename, lineno, line = source
    return f" (at {filename}:{lineno}: {str(line).strip()})"


def graph_emitter(graph: Graph, tag: str = "backward") -> Emit:
    """An ``emit`` appending nodes to ``graph``, each with ``meta['val']`` from the op's rule."""

    def emit(op: Op, *args: Any, **kwargs: Any) -> Node:
        node = graph.call_function(op, args, kwargs)
        node.meta["val"] = op.infer(*map_arg(args, _val), **map_arg(kwargs, _val))
        node.meta["autograd"] = tag
        return node

    return emit


def _val(node: Node) -> Any:
    return node.meta["val"]
