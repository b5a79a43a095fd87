"""Reverse mode through control-flow nodes: ``cond`` and ``fori_loop``; ``while_loop`` refuses.

A control-flow node returns a tuple that ``tuple_item`` nodes take apart, so reverse mode
(``reverse_mode.reverse_mode``) gathers the cotangents of those items per node and hands them here
all at once, as ``{result index: cotangent}``. Each rule differentiates the node's subgraphs
into *backward subgraphs* (``vjp_graph``: the forward recomputed inside, then the same reverse
mode, with the cotangents of the results as extra inputs) and emits control flow again:

* ``cond``: a ``cond`` on the same predicate whose branches are the two backward subgraphs, so
  only the taken branch is differentiated at run time;
* ``fori_loop``: one ``fori_loop_vjp`` node, which runs the loop again keeping every carried
  value and then runs the body's backward subgraph over them in reverse
  (``ops/higher_order.py``); the outer values the body reads get the sum over iterations;
* ``while_loop``: a ``GradError`` (its trip count is not known ahead, as in jax).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from npdynamo.autograd.emitting import Emit, meta
from npdynamo.autograd.reverse_mode import (
    CONTROL_FLOW_STEP,
    graph_emitter,
    reverse_mode,
    source_where,
)
from npdynamo.errors import GradError
from npdynamo.fx import Graph, GraphModule, Node, map_arg
from npdynamo.ops import REGISTRY, ArrayMeta, ScalarMeta
from npdynamo.ops.higher_order import COND, FORI_LOOP_VJP, result_meta
from npdynamo.ops.tuples import TUPLE_ITEM


def _is_float_array(meta: Any) -> bool:
    return isinstance(meta, ArrayMeta) and meta.dtype.kind == "f"


def _val(value: Any) -> Any:
    return value.meta.get("val") if isinstance(value, Node) else value


def vjp_graph(fwd: Graph, slot_metas: Sequence[Any], slot_of: Sequence[int],
              ct_outputs: Sequence[int], wanted: Sequence[int], name: str) -> GraphModule:
    """The backward of subgraph ``fwd`` as a graph ``(*slots, *cts) -> grads``.

    The new graph's inputs are ``slot_metas`` (forward placeholder ``j`` reads slot
    ``slot_of[j]``), then one cotangent per forward output in ``ct_outputs``; it returns the
    cotangent of every slot in ``wanted`` (zeros where none flows)."""
    g = Graph()
    slots = [g.placeholder(f"in_{i}", result_meta(meta)) for i, meta in enumerate(slot_metas)]
    mapping: dict[Node, Any] = dict(zip(fwd.placeholders, (slots[i] for i in slot_of)))
    outputs = fwd.output_node.args[0]
    cts = [g.placeholder(f"ct_{k}", result_meta(_val(outputs[k]))) for k in ct_outputs]
    nodes = []
    for node in fwd.nodes:  # the forward, recomputed: the backward reads its values
        if node.op == "call_function":
            copy = g.call_function(node.target, map_arg(node.args, mapping.__getitem__),
                                   map_arg(node.kwargs, mapping.__getitem__))
            copy.meta = dict(node.meta)
            mapping[node] = copy
            nodes.append(copy)
    pairs = [(mapping[outputs[k]], ct) for k, ct in zip(ct_outputs, cts)
             if isinstance(outputs[k], Node)]
    wrt = [slots[i] for i in wanted]
    emit = graph_emitter(g)
    grads = reverse_mode(nodes, [o for o, _ in pairs], wrt, emit,
                         cotangent=[c for _, c in pairs]) if pairs else [None] * len(wrt)
    g.output(tuple(grad if grad is not None else _zeros(emit, w) for grad, w in zip(grads, wrt)))
    return GraphModule(g, name)


def _zeros(emit: Emit, like: Node) -> Any:
    zeros = emit(REGISTRY["zeros_like"], like)
    if _val(like).scalar:  # a NumPy scalar's cotangent is a NumPy scalar, as the rules give
        zeros = emit(REGISTRY["getitem"], zeros, ())
    return zeros


def _like(emit: Emit, ct: Any, want: ArrayMeta) -> Any:
    """``ct`` as the same kind of value as the result it belongs to (a NumPy scalar or an
    array, of its dtype): the subgraphs taking it were built for exactly that kind."""
    have = meta(ct)
    if have.dtype != want.dtype:
        ct = emit(REGISTRY["astype"], ct, dtype=want.dtype)
    if want.scalar and not have.scalar:
        ct = emit(REGISTRY["getitem"], ct, ())
    elif have.scalar and not want.scalar:
        ct = emit(REGISTRY["asarray"], ct)
    return ct


def _wanted(args: Sequence[Any], keys: Sequence[Any]) -> list[int]:
    return [i for i, (a, k) in enumerate(zip(args, keys))
            if k is not None and isinstance(a, Node) and _is_float_array(_val(a))]


def control_flow_step(node: Node, cotangents: dict[int, Any], keys: tuple,
                      emit: Emit) -> Iterator[tuple[Any, Any]]:
    """(input key, cotangent) pairs for the inputs of control-flow ``node`` that want one."""
    name = node.target.name
    if name == "cond":
        yield from _cond_step(node, cotangents, keys, emit)
    elif name == "fori_loop":
        yield from _fori_step(node, cotangents, keys, emit)
    elif name == "while_loop":
        raise GradError(
            f"npdynamo.while_loop{source_where(node)} is not differentiable: its trip count is "
            "known only at run time, so there is no saved state to run it backwards (as in jax); "
            "use npdynamo.fori_loop with a fixed trip count, or a plain Python loop")
    else:
        raise GradError(f"npdynamo.{name}{source_where(node)} has no gradient rule")


def _ct_outputs(node: Node, cotangents: dict[int, Any]) -> list[int]:
    metas = node.meta["val"]
    return sorted(k for k, ct in cotangents.items()
                  if ct is not None and _is_float_array(metas[k]))


def _cond_step(node: Node, cotangents: dict[int, Any], keys: tuple,
               emit: Emit) -> Iterator[tuple[Any, Any]]:
    pred, true_fn, false_fn, operands, true_extra, false_extra = node.args
    _, _, _, op_keys, true_keys, false_keys = keys
    # every input of either branch, once: both backward branches take all of them
    inputs: list[Any] = []
    input_keys: list[Any] = []
    for value, key in zip((*operands, *true_extra, *false_extra),
                          (*op_keys, *true_keys, *false_keys)):
        if not (isinstance(value, Node) and value in inputs):
            inputs.append(value)
            input_keys.append(key)
    position = {id(v): i for i, v in enumerate(inputs)}
    metas = [_val(v) for v in inputs]
    wanted = _wanted(inputs, input_keys)
    ct_outputs = _ct_outputs(node, cotangents)
    if not wanted or not ct_outputs:
        return
    branches = []
    for fn, extra in ((true_fn, true_extra), (false_fn, false_extra)):
        slot_of = [position[id(v)] for v in (*operands, *extra)]
        branches.append(vjp_graph(fn.graph, metas, slot_of, ct_outputs, wanted,
                                  f"{fn.name}_vjp"))
    results = node.meta["val"]
    cts = tuple(_like(emit, cotangents[k], results[k]) for k in ct_outputs)
    backward = emit(COND, pred, branches[0], branches[1], (*inputs, *cts), (), ())
    for i, slot in enumerate(wanted):
        yield input_keys[slot], emit(TUPLE_ITEM, backward, i)


def _fori_step(node: Node, cotangents: dict[int, Any], keys: tuple,
               emit: Emit) -> Iterator[tuple[Any, Any]]:
    lower, upper, body, carried, extra = node.args
    _, _, _, carried_keys, extra_keys = keys
    metas = node.meta["val"]
    float_carried = [i for i, m in enumerate(metas) if _is_float_array(m)]
    if not float_carried:
        return
    grad_extra = _wanted(extra, extra_keys)
    slot_metas = [ScalarMeta(int), *(_val(c) for c in carried), *(_val(e) for e in extra)]
    ct_outputs = float_carried
    n_carried = len(carried)
    backward_body = vjp_graph(
        body.graph, slot_metas, list(range(len(slot_metas))), ct_outputs,
        [1 + i for i in float_carried] + [1 + n_carried + j for j in grad_extra],
        f"{body.name}_vjp")
    # the body's backward takes the cotangents of exactly the float carried values: those
    # without one (a result nobody reads) start at zero
    cts = []
    for i in float_carried:
        ct = cotangents.get(i)
        cts.append(_like(emit, ct, metas[i]) if ct is not None
                   else _zeros(emit, emit(TUPLE_ITEM, node, i)))
    backward = emit(FORI_LOOP_VJP, lower, upper, body, backward_body, carried, extra,
                    tuple(cts), tuple(grad_extra))
    for out, i in enumerate(float_carried):
        if carried_keys[i] is not None:
            yield carried_keys[i], emit(TUPLE_ITEM, backward, out)
    for out, j in enumerate(grad_extra, start=len(float_carried)):
        yield extra_keys[j], emit(TUPLE_ITEM, backward, out)


CONTROL_FLOW_STEP.append(control_flow_step)
