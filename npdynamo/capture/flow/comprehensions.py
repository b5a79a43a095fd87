"""``np.array([<expr> for i in range(n)])`` captured as one ``fori_loop`` writing row ``i`` of a
preallocated result, instead of ``n`` unrolled copies of the element expression.

A list comprehension over ``range(n)`` whose list goes straight into ``np.array`` (or into the
``LIST_APPEND`` of an enclosing comprehension being formed: the nested 2-level form) is formed at
its first ``FOR_ITER`` (``form_comprehension``): the element expression is captured once into a
loop body with the index unknown; its value (a NumPy scalar or array of a fixed shape, a Python
float, bool or complex the graph computes, an inner formed comprehension, or a tuple/list of those
converted as ``np.array`` converts it) is written into row ``i`` of an ``np.empty((n, *shape))``
carried by the loop. The list itself never exists: a ``FormedList`` holds the loop's result and
``np.array`` of it (``opcodes/layout.do_call``) is that array, a new one as ``np.array`` makes.

``np.array`` of a list of ``n >= 1`` elements of one kind has that kind's dtype (a Python float:
float64, a float32 scalar: float32, a Python bool: bool) and shape ``(n, *shape)``; every element
the body computes has the same kind, so the loop's dtype is NumPy's. Left unrolled (today's
behaviour, exact): an ``if`` filter (the length depends on the data), a list used other than by
``np.array(list)`` (no keyword, no other argument), an empty or one-element range (NumPy gives
float64 for an empty one), a range whose step is not 1, and an element whose dtype depends on its
value (a Python int: int64, uint64 or object); a body that cannot be captured with the index
unknown unrolls through ``RollRefused`` (the frame is captured again with this comprehension
unrolled).

A short range (fewer than ``config.for_loop_min_trips``) is formed only at the graph's top level
and when its element reduces an array (``_reduces``: k-means' centroids, ``np.sum(A[labels == i,
j]) / np.sum(labels == i)`` over 5 and 10, were 50 masked reductions whose results each left a
kernel as a scalar, 3.4x slower than the loop on numba-examples' k-means). Its unrolled copies
cost less where the element reduces nothing (one elementwise kernel), and inside a loop body
being captured (they fuse in the body's kernels, which share one pass over the data: the inner
comprehension of the centroids formed too made k-means 2.5x slower).

Bytecode shapes: 3.11 runs a comprehension as a nested ``<listcomp>`` function called with
``iter(range(n))`` (its consumer is in the caller's frame); 3.12 and 3.13 inline it (PEP 709),
saving the names it binds with ``LOAD_FAST_AND_CLEAR`` below the list and restoring them with
``SWAP``/``STORE_FAST`` after ``END_FOR``.
"""

from __future__ import annotations

import math

import numpy as np

from npdynamo import config
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import PY
from npdynamo.capture.bytecode.liveness import _reads_writes
from npdynamo.capture.calls import call_value
from npdynamo.capture.errors import CaptureUnsupported, RollRefused, UserCodeRaises
from npdynamo.capture.flow import higher_order as cf
from npdynamo.capture.flow.if_statements import JUMPS_BACK, LEAVING
from npdynamo.capture.opcalls import op_call, raw
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import (
    NULL,
    ArrayValue,
    CellValue,
    ComprehensionSave,
    Const,
    FormedList,
    IteratorValue,
    ListValue,
    NullValue,
    ScalarInputValue,
    TupleValue,
    Value,
)
from npdynamo.ops import REGISTRY
from npdynamo.ops.higher_order import FORI_LOOP
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.scalar_ops import SCALAR_OPS
from npdynamo.ops.symbolic import SymbolicDecision

#: what ``np.array`` makes of a Python number the graph computes (a Python int: it depends on
#: its value, so it is not here)
_PYTHON_DTYPES = {float: np.dtype(np.float64), bool: np.dtype(np.bool_),
                  complex: np.dtype(np.complex128)}

#: the instructions between a 3.12+ comprehension's exit and its consumer
_CLEANUP = ("END_FOR", "POP_TOP", "SWAP", "STORE_FAST", "STORE_FAST_STORE_FAST")
#: ``BINARY_OP``'s argument for ``@`` and ``@=``
_MATMUL_ARGS = (4, 18)


def _instr(frame, index: int) -> tuple[int, bc.Instr | None]:
    """The first instruction at or after ``index`` (labels and markers skipped)."""
    instrs = frame.instrs
    while index < len(instrs) and not isinstance(instrs[index], bc.Instr):
        index += 1
    return index, instrs[index] if index < len(instrs) else None


def _shape(frame, head: int) -> tuple[int, int, int] | None:
    """(body start, ``LIST_APPEND`` index, exit) of the comprehension whose ``FOR_ITER`` is at
    ``head``: a body that binds its variable, computes the element and appends it (no filter,
    no jump out, no store to a name outside the comprehension: ``y := ...``)."""
    instrs, labels = frame.instrs, frame.labels
    exit_index = labels[instrs[head].arg]
    body, store = _instr(frame, head + 1)
    if store is None or store.name not in ("STORE_FAST", "STORE_DEREF", "STORE_FAST_LOAD_FAST"):
        return None
    last = exit_index - 1
    while last > body and not isinstance(instrs[last], bc.Instr):
        last -= 1
    if instrs[last].name not in JUMPS_BACK or _instr(frame, labels[instrs[last].arg])[0] != head:
        return None
    append = last - 1
    while append > body and not isinstance(instrs[append], bc.Instr):
        append -= 1
    if instrs[append].name != "LIST_APPEND" or instrs[append].arg != 2:
        return None
    own = {_stored(store)}  # the variable, and those of inner comprehensions (3.12+, saved first)
    for i in range(body + 1, append):
        ins = instrs[i]
        if not isinstance(ins, bc.Instr):
            continue  # (3.12+: an inner comprehension's exception-table markers)
        if ins.name == "LOAD_FAST_AND_CLEAR":
            own.add(ins.arg)
        if ins.name in LEAVING or not set(_reads_writes(ins)[1]) <= own:
            return None
        if isinstance(ins.arg, bc.Label) and not body < labels[ins.arg] <= append:
            return None  # an ``if`` filter (back to the head), or a jump out
    return body, append, exit_index


def _stored(store: bc.Instr) -> str:
    """The name the instruction binding a comprehension's variable stores (3.13 may pair it
    with the next load; the ``bytecode`` library gives a cell variable as an object)."""
    arg = store.arg
    return arg[0] if isinstance(arg, tuple) else arg if isinstance(arg, str) else arg.name


def _comprehension_body(frame) -> int | None:
    """The ``LIST_APPEND`` index where ``frame`` (a formed comprehension's body) stops."""
    return frame.__dict__.get("comprehension_append")


def _is_np_array(slots: list[Value]) -> bool:
    """Whether the two slots under a call's one argument are ``np.array`` or ``np.asarray``
    with its NULL (either order: 3.11/3.12 put NULL below, 3.13 above)."""
    if len(slots) != 2 or not any(isinstance(s, NullValue) for s in slots):
        return False
    fn = next(s for s in slots if not isinstance(s, NullValue))
    return isinstance(fn, Const) and (fn.value is np.array or fn.value is np.asarray)


def _consumed_by_np_array(frame, exit_index: int) -> bool:
    """Whether the list goes straight into ``np.array(list)`` or into the ``LIST_APPEND`` of the
    enclosing comprehension being formed, so that no Python code sees it."""
    if PY >= (3, 12):
        saved = 0
        while saved + 3 <= len(frame.stack) and isinstance(
                frame.stack[-3 - saved], ComprehensionSave):
            saved += 1
        index, ins = _instr(frame, exit_index)
        while ins is not None and ins.name in _CLEANUP:
            index, ins = _instr(frame, index + 1)
        where, below = frame, frame.stack[:len(frame.stack) - 2 - saved]
    else:
        index, ins = _instr(frame, exit_index)
        where = frame.parent
        if ins is None or ins.name != "RETURN_VALUE" or where is None or (
                frame.code.co_name != "<listcomp>"):
            return False
        index, ins = _instr(where, where.ip)
        below = where.stack
        if ins is not None and ins.name == "PRECALL":
            if ins.arg != 1:
                return False
            index, ins = _instr(where, index + 1)
    if ins is None:
        return False
    if ins.name == "LIST_APPEND":  # the row of an outer comprehension being formed
        return ins.arg == 2 and _comprehension_body(where) == index
    return ins.name == "CALL" and ins.arg == 1 and _is_np_array(below[-2:])


def form_comprehension(frame, it: Value) -> bool:
    """At the first ``FOR_ITER`` of a list comprehension: capture it as one ``fori_loop`` (the
    frame then continues at its exit with a ``FormedList`` as the list) and return True; False
    when it stays unrolled for a reason known before trying; ``RollRefused`` when the attempt
    failed."""
    ctx = frame.ctx
    if not config.capture_for_loops or ctx.differentiating or len(frame.stack) < 2:
        return False
    target = frame.stack[-2]
    if not isinstance(it, IteratorValue) or it.mode != "items" or it.pos != 0 or (
            not isinstance(it.origin, range)) or it.source is not None or it.exhausted:
        return False
    span = it.origin
    short = len(span) < max(config.for_loop_min_trips, 1)
    if span.step != 1 or (short and len(span) < 2):
        return False
    if type(target) is not ListValue or not target.fresh or target._items != [] or (
            target.appended):
        return False
    head = frame.ip - 1
    shape = _shape(frame, head)
    if shape is None:
        return False
    body, append, exit_index = shape
    key = (frame.code, body)
    if key in ctx.unrolled_loops or not _consumed_by_np_array(frame, exit_index) or (
            short and (ctx.lift is not None or not _may_reduce(frame, body, append))):
        return False
    try:
        formed = _form(frame, span, body, append, short)
    except (CaptureUnsupported, UserCodeRaises, SymbolicDecision) as exc:
        why = exc.reason if isinstance(exc, CaptureUnsupported) else str(exc) if isinstance(
            exc, SymbolicDecision) else (
            f"the element raises {type(exc.error).__name__}: {exc.error}")
        raise RollRefused(key, f"{cf.loop_place(frame)}: comprehension unrolled: {why}") from exc
    cf.note_loop(frame, f"comprehension in the graph as one fori_loop filling a "
                 f"{formed.array.meta.dtype}{list(formed.array.meta.shape)} array "
                 f"({len(span)} iterations)")
    frame.stack[-2] = formed
    if PY >= (3, 12):
        frame.push(NULL)  # the exit's END_FOR (3.13: and POP_TOP) pops it and the iterator
    else:
        frame.pop()
    it.exhausted = True
    frame.jump(frame.instrs[head].arg)
    return True


def _may_reduce(frame, body: int, append: int) -> bool:
    """Whether the element's code calls something or multiplies matrices (``@``): what can
    reduce an array. Without either, a short comprehension stays unrolled with no attempt."""
    for ins in frame.instrs[body:append]:
        if isinstance(ins, bc.Instr) and (ins.name.startswith("CALL") or (
                ins.name == "BINARY_OP" and ins.arg in _MATMUL_ARGS)):
            return True
    return False


def _reduces(graph) -> bool:
    """Whether a body graph does work an unrolled copy per iteration would repeat as separate
    ops: a loop, or an op that is not a view and reads an array larger than what it gives (a
    reduction, a masked reduction, a product of matrices)."""
    for node in graph.nodes:
        op = node.target
        if node.op != "call_function" or getattr(op, "cost", "free") == "free":
            continue
        if getattr(op, "loop", None) is not None:
            return True
        result = node.meta.get("val")
        size = _elements(result) if isinstance(result, ArrayMeta) else 1
        if size is None:
            continue
        for arg in node.all_input_nodes:
            meta = arg.meta.get("val")
            n = _elements(meta) if isinstance(meta, ArrayMeta) else None
            if n is not None and n > size:
                return True
    return False


def _elements(meta: ArrayMeta) -> int | None:
    """The number of elements of an array of static shape, else None."""
    return math.prod(meta.shape) if all(type(d) is int for d in meta.shape) else None


def _element(frame, value: Value) -> tuple[Value, list[Value] | None]:
    """The element as a value ``out[i] = value`` writes exactly as ``np.array`` would convert it
    (one row), and for a flat list or tuple of numbers, its items (each written into its place
    of the row: the same casts as ``np.array`` of the row makes, without building the row); a
    graph break for an element whose dtype depends on its value."""
    if isinstance(value, FormedList):
        return value.array, None
    items = None
    if isinstance(value, (ListValue, TupleValue)):
        items = list(value.items)
        value = call_value(frame, Const(np.array), [value], {})
        if not all(isinstance(v, (ArrayValue, ScalarInputValue)) and _one_number(v)
                   for v in items):
            items = None
    if isinstance(value, ArrayValue):
        if value.meta.dtype == object or any(type(d) is not int for d in value.meta.shape):
            raise frame.unsupported("an element whose shape is a symbolic size or of dtype object")
        return value, items
    if isinstance(value, ScalarInputValue):
        if _one_number(value):
            return value, None
        raise frame.unsupported(
            f"an element that is a {value.kind()} whose np.array dtype depends on its value")
    if isinstance(value, Const) and (type(value.value) in (*_PYTHON_DTYPES, int) or isinstance(
            value.value, np.generic)) and np.asarray(value.value).dtype != object:
        return value, None
    raise frame.unsupported(f"an element that is a {value.kind()}, not a number or an array")


def _one_number(value: Value) -> bool:
    """A NumPy scalar, or a Python float/bool/complex, the graph computes."""
    if isinstance(value, ArrayValue):
        return value.meta.shape == ()
    meta = value.node.meta.get("val") if value.node is not None else None
    return isinstance(meta, ScalarMeta) and meta.type in _PYTHON_DTYPES


def _write(frame, out: ArrayValue, index, value: Value) -> None:
    """``out[index] = value`` (a row of the loop's result): a number the graph computes stays
    a graph scalar, NumPy converts it when the graph runs, as ``out[i] = v`` does."""
    computed = isinstance(value, ScalarInputValue) and value.source is None and (
        value.node is not None)
    new = op_call(frame, REGISTRY["setitem"], (out, index, value if computed else raw(value)), {})
    write_array(frame.ctx, out, new)


def _kind(value: Value) -> tuple[np.dtype, tuple[int, ...]]:
    if isinstance(value, ArrayValue):
        return value.meta.dtype, value.meta.shape
    if isinstance(value, ScalarInputValue):
        return _PYTHON_DTYPES[value.node.meta["val"].type], ()
    return np.asarray(value.value).dtype, ()


def _form(frame, span: range, body: int, append: int, short: bool) -> FormedList:
    """Capture the element once into a loop body writing row ``i - start`` of the result; a
    ``short`` range (fewer than ``config.for_loop_min_trips``) only when the body reduces an
    array (``_reduces``), else ``CaptureUnsupported`` (it is unrolled)."""
    ctx = frame.ctx
    count = len(span)
    cells = dict(frame.cells)
    contents = {name: cell.contents for name, cell in cells.items()
                if isinstance(cell, CellValue)}

    def run(sub):
        node = sub.placeholder("i", ScalarMeta(int))
        index = cf.LoopScalarValue(span.start, node, ctx, "the comprehension's variable")
        index.expr = cf.index_size(ctx, node, span.start, span.stop)
        out_node = sub.placeholder("carry_0", ArrayMeta((count,), np.float64))
        out = ArrayValue(out_node)
        step = cf.sub_frame(frame, body, append)
        step.comprehension_append = append
        step.push(index)
        step.run()
        if len(step.stack) != 1 or step.return_value is not None:
            raise frame.unsupported("the comprehension's body does not end at its append")
        element, items = _element(step, step.stack[0])
        dtype, shape = _kind(element)
        out_node.meta["val"] = ArrayMeta((count, *shape), dtype)
        row = index
        if span.start != 0:
            moved = ctx.call_op(SCALAR_OPS["py_sub"], (index, span.start), {}).node
            row = cf.LoopScalarValue(0, moved, ctx, "the comprehension's row")
            row.expr = None if index.expr is None else index.expr - span.start
        if items is None:
            _write(step, out, row, element)
        else:
            for j, item in enumerate(items):
                _write(step, out, (row, j), item)
        return out, dtype, shape

    # the variable's cell (3.11, read by an inner comprehension) is the body's own: not a root
    var = _stored(frame.instrs[body])
    roots = [*frame.locals.values(), *(c for n, c in frame.cells.items() if n != var)]
    sub, (out, dtype, shape) = cf.sub_capture(frame, "fori_loop", "comprehension", run, roots,
                                              "the comprehension's element")
    if short and not _reduces(sub.graph):
        raise frame.unsupported(
            f"{count} iterations (fewer than config.for_loop_min_trips, "
            f"{config.for_loop_min_trips}) and the element reduces no array: unrolled copies "
            "cost less than a loop")
    for name, cell in cells.items():
        if name in contents:
            cell.contents = contents[name]
    empty = ctx.call_op(REGISTRY["empty"], (), {"shape": (count, *shape), "dtype": dtype})
    node_args = (span.start, span.stop, sub.finish([out]), (empty,), cf.extras_of(sub))
    metas = cf.infer_results(frame, FORI_LOOP, node_args)
    before = set(ctx.loop_aliased)
    (result,) = cf.record_node(frame, FORI_LOOP, node_args, metas, [None],
                               "the comprehension's array", (sub,))
    # the range is not empty: the result is the array the loop filled, never its input
    for key in set(ctx.loop_aliased) - before:
        del ctx.loop_aliased[key]
    return FormedList(result)


__all__ = ["form_comprehension"]
