"""``value_and_grad(loss)(params)`` inside a compiled function: forward and backward in one graph.

The loss function is inlined like any user function, recording its forward ops; the graph-building
reverse mode of ``npdynamo.autograd`` then appends the backward ops to the same graph, using the
same VJP rules the eager tape runs. The gradients come back with the structure and dtypes of the
differentiated arguments, as the tape returns them, so a training step with its parameter update
captures into ONE graph. Anything this cannot express (a differentiated Python float, a graph
break inside the loss) is a graph break at the call, where the tape runs it eagerly.

``grad``/``value_and_grad`` register into ``registry.BUILTINS`` and the calls of the functions they
make (``GradFunctionValue``) into ``registry.VALUE_CALLS``.
"""

from __future__ import annotations

from npdynamo import ops
from npdynamo.autograd.api import _argnums, grad, value_and_grad
from npdynamo.autograd.reverse_mode import reverse_mode
from npdynamo.capture.calls import call_value, inline_call
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.registry import BUILTINS, VALUE_CALLS
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    DictValue,
    FunctionValue,
    GradFunctionValue,
    ListValue,
    TupleValue,
    Value,
    map_values,
)
from npdynamo.errors import GradError
from npdynamo.fx import Node


def make_grad_function(frame: Frame, args: list[Value], kwargs: dict, with_value: bool) -> Value:
    """``value_and_grad(fn, argnums=0, has_aux=False)`` evaluated at capture time."""
    names = ("fn", "argnums", "has_aux")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    fn = bound.get("fn")
    settings = [_known(bound.get("argnums", Const(0))), _known(bound.get("has_aux", Const(False)))]
    if fn is None or _UNKNOWN in settings:
        raise frame.unsupported("grad/value_and_grad with arguments known only at run time")
    try:
        nums, single = _argnums(settings[0])
    except TypeError as exc:
        raise UserCodeRaises(exc) from exc
    return GradFunctionValue(fn, nums, single, bool(settings[1]), with_value)


_UNKNOWN = object()


def _known(value: Value) -> object:
    """The Python value of a constant, or of a tuple of constants (``argnums=(0, 1)``, which the
    frame holds as a tuple of its items); ``_UNKNOWN`` otherwise."""
    if isinstance(value, Const):
        return value.value
    if type(value) is TupleValue and all(isinstance(item, Const) for item in value.items):
        return tuple(item.value for item in value.items)
    return _UNKNOWN


def call_grad_function(
    frame: Frame, gf: GradFunctionValue, args: list[Value], kwargs: dict
) -> Value:
    ctx = frame.ctx
    for i in gf.argnums:
        if not -len(args) <= i < len(args):
            raise UserCodeRaises(GradError(f"argnums={i} out of range"))
    structures = [_flatten(frame, args[i]) for i in gf.argnums]
    leaves = [leaf for _rebuild, found in structures for leaf in found]
    if len({id(leaf.node) for leaf in leaves}) != len(leaves):
        raise frame.unsupported("differentiating with respect to the same array twice")
    start = len(list(ctx.graph.nodes))
    ctx.differentiating += 1
    try:
        result = _call(frame, gf.fn, args, kwargs)
    finally:
        ctx.differentiating -= 1
    aux = None
    if gf.has_aux:
        if not isinstance(result, (TupleValue, ListValue)) or result.length() != 2:
            raise UserCodeRaises(GradError("with has_aux=True, the function must return a pair"))
        result, aux = result.items
    if not isinstance(result, ArrayValue) or result.meta.shape != () or (
        result.meta.dtype.kind != "f"
    ):
        raise frame.unsupported(
            "the differentiated function does not return a floating-point scalar graph value")
    nodes = [n for n in list(ctx.graph.nodes)[start:] if n.op == "call_function"]
    grads = _reverse_mode(frame, nodes, result, leaves)
    grad_trees = []
    position = 0
    for rebuild, found in structures:
        grad_trees.append(rebuild(grads[position:position + len(found)]))
        position += len(found)
    grad_value = grad_trees[0] if gf.single_argnum else TupleValue(grad_trees)
    if gf.with_value:
        value = TupleValue([result, aux]) if gf.has_aux else result
        return TupleValue([value, grad_value])
    return TupleValue([grad_value, aux]) if gf.has_aux else grad_value


def _call(frame: Frame, fn: Value, args: list[Value], kwargs: dict) -> Value:
    if isinstance(fn, FunctionValue):
        return inline_call(frame, fn, args, kwargs)
    return call_value(frame, fn, args, kwargs)


def _reverse_mode(frame: Frame, nodes, result: ArrayValue, leaves: list[ArrayValue]) -> list[Value]:
    ctx = frame.ctx

    def emit(op, *args, **kwargs):
        wrapped = _wrap_nodes(args)
        return ctx.call_op(op, wrapped, _wrap_nodes(kwargs)).node

    try:
        cotangents = reverse_mode(nodes, result.node, [leaf.node for leaf in leaves], emit)
    except GradError as exc:
        raise UserCodeRaises(exc) from exc
    grads = []
    seen = set()
    for leaf, ct in zip(leaves, cotangents):
        if ct is None:
            grads.append(ctx.call_op(ops.REGISTRY["zeros_like"], (leaf,), {}))
            continue
        grad = ArrayValue(ct)
        # the tape hands out fresh, writable arrays: never a view, an input or a shared result
        if ct.op == "placeholder" or getattr(ct.target, "view", False) or ct in seen:
            grad = ctx.call_op(ops.REGISTRY["copy"], (grad,), {})
        seen.add(ct)
        grads.append(grad)
    return grads


def _wrap_nodes(obj):
    return map_values(obj, lambda v: ArrayValue(v) if isinstance(v, Node) else v)


def _flatten(frame: Frame, value: Value):
    """(rebuild(grads) -> tracked value, [array leaves]) of a differentiated argument."""
    if isinstance(value, ArrayValue):
        meta = value.meta
        if meta.dtype.kind != "f":
            raise UserCodeRaises(GradError(
                f"a differentiated argument has dtype {meta.dtype}; gradients are only defined "
                "for floating-point inputs"))
        if meta.scalar:
            raise frame.unsupported("differentiating with respect to a NumPy scalar")
        return (lambda grads: grads[0]), [value]
    if isinstance(value, DictValue):
        keys = list(value.items)
        parts = [_flatten(frame, value.items[k]) for k in keys]
        return _rebuild_with(parts, lambda items: DictValue(dict(zip(keys, items)))), [
            leaf for _r, found in parts for leaf in found]
    if isinstance(value, (ListValue, TupleValue)):
        parts = [_flatten(frame, v) for v in value.items]
        kind = type(value)
        return _rebuild_with(parts, lambda items: kind(list(items))), [
            leaf for _r, found in parts for leaf in found]
    if isinstance(value, Const) and value.value is None:
        return (lambda grads: Const(None)), []
    raise frame.unsupported(
        f"differentiating with respect to a {value.kind()} (only arrays and dicts/lists/tuples "
        "of arrays are captured)")


def _rebuild_with(parts, make):
    def rebuild(grads):
        items, position = [], 0
        for rebuild_part, found in parts:
            items.append(rebuild_part(grads[position:position + len(found)]))
            position += len(found)
        return make(items)

    return rebuild


BUILTINS[value_and_grad] = lambda frame, target, args, kwargs: make_grad_function(
    frame, args, kwargs, with_value=True)
BUILTINS[grad] = lambda frame, target, args, kwargs: make_grad_function(
    frame, args, kwargs, with_value=False)
VALUE_CALLS[GradFunctionValue] = call_grad_function
