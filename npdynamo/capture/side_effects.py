"""Side effects: mutations of data that outlives the frame, recorded during capture and replayed.

The graph is functional: an in-place array update (``w -= lr * g``, ``x[1:3] = v``, ``out=``)
becomes a new node, and the tracked value of that array points at it, so later reads see the new
data. What must reach the caller's objects is recorded here, in program order:

* arrays that came from outside (arguments, globals, attributes, container items) and were
  written: copied back into the SAME array object (``np.copyto``) after the graph ran, so their
  identity and memory are kept and a graph that raises writes nothing;
* lists, dicts and sets from outside that were mutated, attributes stored or deleted on user
  objects, globals and closure cells assigned: replayed as Python statements after the graph, or
  before the native instruction of a graph break.

Views: writing through a view (``row = x[0]; row += 1``) updates its base with ``setitem`` and
re-derives every view of that base, as NumPy's shared memory would.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from npdynamo import ops
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.guards import ItemSource
from npdynamo.capture.values import ArrayValue, Value

if TYPE_CHECKING:
    from npdynamo.capture.session import CaptureContext


@dataclass
class Mutation:
    """One recorded Python-level mutation: ``kind`` of ``target`` with ``args``."""

    kind: str  # list_append, list_extend, list_state, dict_set, dict_del, dict_clear,
    #             set_state, attr_set, attr_del, global_set, cell_set, iter_advance
    target: Value | None
    args: tuple = ()


@dataclass
class SideEffects:
    """What one capture must write back, in program order."""

    arrays: list[ArrayValue] = field(default_factory=list)
    mutations: list[Mutation] = field(default_factory=list)
    global_stores: dict[str, Value] = field(default_factory=dict)

    def array_written(self, array: ArrayValue) -> None:
        if array.source is not None and array not in self.arrays:
            self.arrays.append(array)

    def record(self, kind: str, target: Value | None, *args) -> None:
        if kind in ("list_state", "set_state"):
            # the final contents are written once; earlier records of the same object go
            self.mutations = [
                m
                for m in self.mutations
                if not (m.target is target and m.kind in ("list_append", kind))
            ]
        self.mutations.append(Mutation(kind, target, args))

    def __bool__(self) -> bool:
        return bool(self.arrays or self.mutations or self.global_stores)


# -- arrays ------------------------------------------------------------------------------------
def view_of(result: ArrayValue, base: ArrayValue, op, args: tuple, kwargs: dict) -> None:
    """Remember that ``result`` shares memory with ``base`` (NumPy returned a view)."""
    result.base = base
    result.recipe = (op, args, kwargs)
    base.views += 1
    # weakly: a view nobody holds any more need not be re-derived after a write (holding them
    # all made a loop of slice updates re-derive every earlier view: quadratic capture time);
    # a view's own views hold it through their ``base``
    base.derived.append(weakref.ref(result))


def write_array(ctx: CaptureContext, target: ArrayValue, new: ArrayValue) -> None:
    """``target`` now holds ``new``'s data (same shape and dtype): propagate through views."""
    if id(target) in ctx.loop_aliased:
        raise ctx.unsupported(
            "an in-place write into an array passed to or returned by npdynamo.cond/while_loop/"
            "fori_loop or a for loop that may run no iteration: the loop's results may be its "
            "input arrays or views of them",
            "write into a copy (r = r.copy()), or build a new array", kind="side_effect")
    if target.base is not None:
        op, args, kwargs = target.recipe
        if op.name != "getitem":
            raise ctx.unsupported(
                f"writing through a view made by {op.name} is not captured",
                "write into the original array with an index instead",
                kind="side_effect",
            )
        index = args[1]
        base = target.base
        updated = ctx.call_op(ops.REGISTRY["setitem"], (base, index, new), {})
        write_array(ctx, base, updated)
        return
    target.node = new.node
    ctx.side_effects.array_written(target)
    _rederive(ctx, target)


def _rederive(ctx: CaptureContext, array: ArrayValue) -> None:
    live = [view for view in (ref() for ref in array.derived) if view is not None]
    array.derived = [weakref.ref(view) for view in live]
    for view in live:
        op, args, kwargs = view.recipe
        fresh = ctx.call_op(op, (array, *args[1:]), kwargs)
        view.node = fresh.node
        _rederive(ctx, view)


def cast_for_inplace(ctx: CaptureContext, result: ArrayValue, target: ArrayValue) -> ArrayValue:
    """NumPy's rules for writing ``result`` into ``target`` in place (same_kind, broadcast)."""
    res, tgt = result.meta, target.meta
    if (result.node.target is ops.REGISTRY["square"] and res.dtype.kind == "c"
            and (target.source is not None or target.base is not None)):
        # NumPy's complex square rounds as power does (no fused multiply-add) when it writes
        # into a strided array and as the graph's square does otherwise: the layout of an
        # input or a view, which the graph does not know, picks the last bit (an array the
        # graph made, not a view, is contiguous)
        raise ctx.unsupported(
            "a complex square (x **= 2, np.square(x, out=y)) written in place: NumPy's result "
            "depends on the written array's strides",
            "write z = z ** 2 (a new array)", kind="side_effect")
    if res.dtype != tgt.dtype:
        if not np.can_cast(res.dtype, tgt.dtype, "same_kind"):
            raise UserCodeRaises(
                TypeError(
                    f"Cannot cast ufunc output from dtype('{res.dtype}') to dtype('{tgt.dtype}') "
                    "with casting rule 'same_kind'"
                )
            )
        result = ctx.call_op(ops.REGISTRY["astype"], (result,), {"dtype": tgt.dtype})
    if result.meta.shape != tgt.shape:
        try:
            shape = np.broadcast_shapes(
                ctx.concrete_shape(result.meta.shape), ctx.concrete_shape(tgt.shape))
        except ValueError:
            shape = None
        if shape != ctx.concrete_shape(tgt.shape):  # Python raises NumPy's own error here
            raise UserCodeRaises(ValueError("non-broadcastable output operand"))
        result = ctx.call_op(ops.REGISTRY["broadcast_to"], (result, tgt.shape), {})
    return result


# -- replay ------------------------------------------------------------------------------------
def array_write_statements(ctx: CaptureContext, rebuilder) -> list[str]:
    """``np.copyto`` of every outside array the graph wrote. They read only graph outputs and
    sources, and must run before any rebuilt value is made: a view of a written array rebuilt
    as ``a.transpose(...).reshape(...)`` copies the data it sees at that moment.

    A backend may compute a written array's new value straight into the array itself (see
    ``write_back_targets``): then the output IS the array, and there is nothing to copy.
    The copy is ``target[...] = value``: the target is a plain ndarray (subclasses are never
    captured) and the value has its dtype and shape, so this is ``np.copyto`` exactly, at half
    its per-call cost (which counts for the small arrays of a small model's update)."""
    inputs = {src for _node, src in ctx.placeholders}
    lines = []
    for array in ctx.side_effects.arrays:
        if array.node.op == "placeholder":
            continue  # an array written and restored to the value it had: nothing changed
        target, value = rebuilder.source_expr(array.source), rebuilder.graph_value(array)
        copy = f"{target}[...] = {value}"
        lines.append(f"if {value} is not {target}: {copy}" if array.source in inputs else copy)
    return lines


def write_back_targets(ctx: CaptureContext, rebuilder) -> dict[int, str]:
    """Graph output position -> name of the input placeholder that output is copied into, for
    the outputs nothing else reads (no returned value, no other write-back, no stack slot): a
    backend may compute them straight into that input's memory. Call once every expression of
    the rebuilder exists."""
    placeholder_of = {src: node for node, src in ctx.placeholders}
    targets = {}
    for array in ctx.side_effects.arrays:
        node = array.node
        holder = placeholder_of.get(array.source)
        if node.op == "placeholder" or holder is None or rebuilder.reads.get(node) != 1:
            continue
        targets[rebuilder.index[node]] = holder.name
    return targets


def replay_statements(ctx: CaptureContext, rebuilder) -> list[str]:
    """Python statements writing the recorded Python-level side effects back, in program order
    (the array writes come first, from ``array_write_statements``)."""
    effects = ctx.side_effects
    lines: list[str] = []
    touched: set = set()  # (dict, key) slots written so far, (dict, None) for a cleared dict
    for m in effects.mutations:
        if m.kind == "dict_set" and _stores_its_own_item(m, touched):
            # ``d[k] op= v`` stores back the object it read from that slot, untouched since:
            # for a plain dict (the only kind tracked) that changes nothing, not even the order
            continue
        if m.kind.startswith("dict_"):
            touched.add((id(m.target), m.args[0] if m.kind != "dict_clear" else None))
        lines += _mutation_lines(m, rebuilder)
    for name, value in effects.global_stores.items():
        lines.append(f"G[{name!r}] = {rebuilder.expr(value)}")
    return lines


def _stores_its_own_item(m: Mutation, touched: set) -> bool:
    key, value = m.args
    source = m.target.source if m.target is not None else None
    return (
        source is not None
        and getattr(value, "source", None) == ItemSource(source, key)
        and (id(m.target), key) not in touched
        and (id(m.target), None) not in touched
    )


def _mutation_lines(m: Mutation, rebuilder) -> list[str]:
    kind = m.kind
    target = (rebuilder.source_expr(m.target.source)
              if m.target is not None and m.target.source else None)
    if kind == "list_append":
        return [f"{target}.append({rebuilder.expr(m.args[0])})"]
    if kind == "list_state":
        items = ", ".join(rebuilder.expr(v) for v in m.target.items)
        return [f"{target}[:] = [{items}]"]
    if kind == "dict_set":
        return [f"{target}[{rebuilder.bind(m.args[0], 'KEY')}] = {rebuilder.expr(m.args[1])}"]
    if kind == "dict_del":
        return [f"del {target}[{rebuilder.bind(m.args[0], 'KEY')}]"]
    if kind == "dict_clear":
        return [f"{target}.clear()"]
    if kind == "set_state":
        items = ", ".join(rebuilder.expr(v) for v in m.target.items)
        return [f"{target}.clear()", f"{target}.update([{items}])"]
    if kind == "attr_set":
        return [f"{target}.{m.args[0]} = {rebuilder.expr(m.args[1])}"]
    if kind == "attr_del":
        return [f"del {target}.{m.args[0]}"]
    if kind == "iter_advance":
        if not m.target.pos:
            return []
        return [f"for _ in range({m.target.pos}): next({target})"]
    if kind == "cell_set":
        return [f"{m.args[0]} = {rebuilder.expr(m.args[1])}"]
    raise AssertionError(f"unknown mutation {kind}")
