"""Handlers for subscripts and slices: ``x[i]``, ``x[a:b]``, their stores and ``del``.

Array subscripts become ``getitem``/``setitem`` ops (a boolean-mask update goes through
``masked``); any other container's through its value kind (``containers``). A slice bound
the graph computes inside a rolled loop body (``val[ptr[i]:ptr[i + 1]]``) is an unbacked size
(``ops.unbacked``)."""

from __future__ import annotations

import numpy as np

from npdynamo import ops
from npdynamo.capture.calls import op_call, raw
from npdynamo.capture.containers import const_key, record, store_subscript, subscript
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.masked import (
    MASKED_KINDS,
    MaskedUpdate,
    masked_assign,
    masked_read,
    masked_store,
)
from npdynamo.capture.mixed_scalars import stored
from npdynamo.capture.opcalls import loop_int
from npdynamo.capture.registry import handler
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    DictValue,
    ListValue,
    MixedScalarValue,
    ScalarInputValue,
    SizeValue,
    TupleValue,
    Value,
)
from npdynamo.fx.node import Node
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.unbacked import bound_symbol


def index_value(frame: Frame, index: Value):
    """A tracked index as the plain index object ``ops.getitem`` takes (arrays stay tracked,
    and so does an int that only the run time knows inside a loop body: the loop's index)."""
    if loop_int(frame, index):
        return index
    if isinstance(index, (Const, ArrayValue)):
        return raw(index)
    if isinstance(index, IndexSlice):
        return index.index()
    if isinstance(index, TupleValue):
        return tuple(index_value(frame, v) for v in index.items)
    if isinstance(index, ListValue):
        raise frame.unsupported(
            "indexing an array with a Python list", "index with a tuple or an integer array"
        )
    raise frame.unsupported(f"an array index that is a {index.kind()}")


def get_item(frame: Frame, container: Value, index: Value) -> Value:
    if isinstance(container, ArrayValue):
        read = masked_read(frame, container, index)  # x[mask] op= v
        if read is not None:
            return read
        return op_call(frame, ops.REGISTRY["getitem"], (container, index_value(frame, index)), {})
    return subscript(frame, container, index)


@handler("BINARY_SUBSCR")
def _binary_subscr(frame: Frame, ins):
    index = frame.pop()
    container = frame.pop()
    frame.push(get_item(frame, container, index))


class IndexSlice(Value):
    """A slice bounded by a rolled loop's index (``A[:i, i + 1:]``), which only an array takes:
    its bounds are graph values at run time and size expressions for shapes
    (``ops.loop_index``); the other bounds are constants or symbolic sizes."""

    def __init__(self, parts: list[Value]) -> None:
        self.parts = parts

    def kind(self) -> str:
        return "slice bounded by a loop index"

    def index(self) -> slice:
        return slice(*(p if isinstance(p, ScalarInputValue) else p.expr
                       if isinstance(p, SizeValue) else p.value for p in self.parts))


class UnbackedBound(ScalarInputValue):
    """A slice bound the graph computes inside a rolled loop body (``ptr[i]``, a carried int):
    an unbacked size (``ops.unbacked``) for shapes, its node at run time. Only a slice holds
    it; Python never reads its value."""

    def __init__(self, node, expr, ctx) -> None:
        super().__init__(None, None, None, node)
        self.expr, self._ctx = expr, ctx

    @property
    def value(self) -> object:
        raise self._ctx.unsupported(
            "Python needs the value of a slice bound known only when the graph runs")


def _run_time_bound(frame: Frame, part: Value) -> Value:
    """``part`` as an unbacked bound when it is an integer only the run time knows inside a
    loop body (an element of an integer array, a number the loop carries or computes), else
    itself. Equal computations (``ptr[i]`` read twice) get the same symbol, so slices with
    equal bounds have equal sizes."""
    ctx = frame.ctx
    if ctx.lift is None or ctx.differentiating:
        return part
    if isinstance(part, ArrayValue):
        meta = part.meta
        if not (isinstance(meta, ArrayMeta) and meta.scalar and meta.dtype.kind in "iu"):
            return part
    elif not (isinstance(part, ScalarInputValue) and part.expr is None and part.source is None
              and part.node is not None and part.node.meta.get("val") == ScalarMeta(int)):
        return part
    node = ctx.lift(part)
    symbols = ctx.__dict__.setdefault("unbacked_bounds", {})
    key = _structure(node, {})
    if key not in symbols:
        symbols[key] = bound_symbol(f"the slice bound {node.name}")
    node.meta["size_expr"] = symbols[key]  # what the bound means for shapes (shape_prop)
    return UnbackedBound(part.node, symbols[key], ctx)


def _structure(node, memo: dict) -> tuple:
    """A key equal for nodes that compute the same value: the same op of equal arguments (the
    graph is functional); a placeholder and an op that draws random numbers are themselves."""
    if node in memo:
        return memo[node]

    def arg(a):
        if isinstance(a, Node):
            return _structure(a, memo)
        if isinstance(a, (tuple, list)):
            return (type(a).__name__, *map(arg, a))
        if isinstance(a, slice):
            return ("slice", arg(a.start), arg(a.stop), arg(a.step))
        if a is None or type(a) in (bool, int, float, complex, str) or isinstance(a, np.generic):
            return (type(a).__name__, repr(a))  # (repr is exact for these)
        return ("object", id(a))  # an array's repr may elide: itself

    if node.op != "call_function" or getattr(node.target, "impure", False):
        key: tuple = ("node", id(node))
    else:
        key = (id(node.target), arg(tuple(node.args)),
               arg(tuple(sorted(node.kwargs.items()))))
    memo[node] = key
    return key


def make_slice(frame: Frame, parts: list[Value]) -> Value:
    parts = [_run_time_bound(frame, p) for p in parts]
    if any(isinstance(p, ScalarInputValue) and p.expr is not None for p in parts) and all(
            isinstance(p, Const) and (not isinstance(p, ScalarInputValue) or p.expr is not None)
            for p in parts):
        return IndexSlice(parts)
    if not all(isinstance(p, Const) for p in parts):
        raise frame.unsupported("a slice bound that is a graph value")
    return Const(slice(*(p.value for p in parts)))


@handler("BUILD_SLICE")
def _build_slice(frame: Frame, ins):
    frame.push(make_slice(frame, frame.popn(ins.arg)))


@handler("BINARY_SLICE", since=(3, 12))
def _binary_slice(frame: Frame, ins):
    stop = frame.pop()
    start = frame.pop()
    container = frame.pop()
    frame.push(get_item(frame, container, make_slice(frame, [start, stop])))


def set_item(frame: Frame, container: Value, index: Value, value: Value) -> None:
    if isinstance(value, MaskedUpdate) and masked_store(frame, container, index, value):
        return
    if isinstance(value, MASKED_KINDS) and masked_assign(frame, container, index, value):
        return
    if isinstance(value, MixedScalarValue) and not isinstance(container, (ListValue, DictValue)):
        value = stored(frame, value, container)  # its float64 (lists and dicts keep the object)
    if isinstance(container, ArrayValue):
        # a number the graph computes (a loop's or a cond's, ``out[i] = state``) stays a graph
        # scalar: NumPy converts (and range-checks) it when the graph runs, as it would here
        computed = isinstance(value, ScalarInputValue) and value.source is None and (
            value.node is not None)
        new = op_call(
            frame, ops.REGISTRY["setitem"],
            (container, index_value(frame, index), value if computed else raw(value)), {}
        )
        write_array(frame.ctx, container, new)
        return
    store_subscript(frame, container, index, value)


@handler("STORE_SUBSCR")
def _store_subscr(frame: Frame, ins):
    index = frame.pop()
    container = frame.pop()
    value = frame.pop()
    set_item(frame, container, index, value)


@handler("STORE_SLICE", since=(3, 12))
def _store_slice(frame: Frame, ins):
    stop = frame.pop()
    start = frame.pop()
    container = frame.pop()
    value = frame.pop()
    set_item(frame, container, make_slice(frame, [start, stop]), value)


@handler("DELETE_SUBSCR")
def _delete_subscr(frame: Frame, ins):
    index = frame.pop()
    container = frame.pop()
    if isinstance(container, DictValue):
        key = const_key(frame, index)
        if key not in container.items:
            raise UserCodeRaises(KeyError(key))
        del container.items[key]
        record(frame, "dict_del", container, key)
    elif isinstance(container, ListValue) and isinstance(index, Const):
        try:
            del container.items[index.value]
        except IndexError as exc:
            raise UserCodeRaises(exc) from exc
        record(frame, "list_state", container)
    else:
        raise frame.unsupported(f"del on a {container.kind()}")
