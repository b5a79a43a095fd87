"""``npdynamo.cond``/``while_loop``/``fori_loop`` under capture: each function its own subgraph.

A call of one of them does not run its Python loop at capture time. Each function passed in is
inlined into a fresh ``Graph`` (a *sub-capture*): its placeholders are the carried values (a
loop's index first), and every outer graph value it reads is *lifted*: it becomes one more
placeholder, and the node passes the outer value in (``extra``). The finished subgraphs become
``GraphModule``s held by one ``cond``/``while_loop``/``fori_loop`` node of the enclosing graph
(``ops/higher_order.py``), whose results ``tuple_item`` nodes take apart. A loop of 20 or 2000
iterations is therefore the same graph.

The body runs once at capture time but many times (or not at all) at run time, so everything it
does must be a function of its inputs: it is refused (a graph break at the call, which then runs
plainly) when it writes into an outer or carried array in place, mutates an outside list, dict,
object or cell, reads the value of a carried Python number, or when a carried value changes
dtype, shape or structure. The checks compare the state reachable from the functions and their
arguments before and after the sub-capture.

Registers into ``registry.BUILTINS``; imported once by ``compile_frame``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo import ops
from npdynamo.capture.calls import call_value
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.subcapture import CARRY_HINT as _HINT
from npdynamo.capture.flow.subcapture import SubCapture
from npdynamo.capture.registry import builtin
from npdynamo.capture.values import (
    ArrayValue,
    BoundMethodValue,
    CellValue,
    Const,
    DictValue,
    ExternalCell,
    FunctionValue,
    GuardedConst,
    IteratorValue,
    ListValue,
    LoopIteratorValue,
    MixedScalarValue,
    ScalarInputValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)
from npdynamo.control_flow import cond, fori_loop, while_loop
from npdynamo.fx import Node
from npdynamo.fx.sizes import unbound_symbols
from npdynamo.ops.higher_order import COND, FORI_LOOP, WHILE_LOOP, describe
from npdynamo.ops.loop_index import index_symbol
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import SymInt
from npdynamo.ops.tuples import TUPLE_ITEM

_NUMBERS = (int, float, complex)


class LoopScalarValue(ScalarInputValue):
    """A Python number that a loop carries or computes: a graph value whose value is not known
    while capturing (it differs per iteration). Arithmetic with it stays in the graph; any use
    that needs its value (``if``, ``range``, indexing) refuses, every time it is asked."""

    def __init__(self, hint: object, node: Node, ctx, what: str) -> None:
        super().__init__(hint, None, None, node)
        self._ctx = ctx
        self._what = what

    @property
    def value(self) -> object:
        raise self._ctx.unsupported(
            f"{self._what} is used where Python needs its value, which changes from one "
            "iteration to the next", "compute with it as a number, or carry an array instead")


def inside_expression(frame) -> bool:
    """Whether the stack holds values of an expression being evaluated (a statement there is
    part of it); the iterators of the ``for`` loops around a statement do not count."""
    return any(not (isinstance(v, IteratorValue) and v.loop_owned) and not isinstance(
        v, LoopIteratorValue) for v in frame.stack)


def loop_place(frame) -> str:
    """The line and text of the statement ``frame`` is at, for a loop's note."""
    loc = frame.location()
    return f"line {loc.lineno} `{loc.source_line.strip()}`"


def note_loop(frame, text: str) -> None:
    """Say what became of the loop or ``if`` whose statement ``frame`` is at (``explain``)."""
    frame.ctx.loop_notes.setdefault(f"{loop_place(frame)}: {text}")


# -- carried structures --------------------------------------------------------------------------
def flatten(frame, value: Value, what: str) -> tuple[list[Value], Any]:
    """(leaves, structure) of a carried value: arrays and numbers inside tuples and lists."""
    if isinstance(value, (TupleValue, ListValue)):
        parts = [flatten(frame, v, what) for v in value.items]
        leaves = [leaf for found, _s in parts for leaf in found]
        return leaves, (type(value), [s for _f, s in parts])
    if isinstance(value, MixedScalarValue):  # its value and its kind, two NumPy scalars
        return [value.number, value.numpy], (_mixed, [None, None])
    if isinstance(value, (ArrayValue, ScalarInputValue)):
        return [value], None
    if isinstance(value, Const) and (type(value.value) in _NUMBERS
                                     or isinstance(value.value, np.generic)):
        return [value], None  # a NumPy scalar constant is carried as the array value it is
    raise frame.unsupported(
        f"{what} holds a {value.kind()}; only arrays, NumPy scalars, Python int/float/complex "
        "and tuples/lists of them can be carried", _HINT)


def _mixed(leaves: list[Value]) -> MixedScalarValue:
    return MixedScalarValue(*leaves)


def unflatten(structure: Any, leaves: list[Value]) -> Value:
    position = itertools.count()

    def build(s):
        if s is None:
            return leaves[next(position)]
        kind, parts = s
        return kind([build(p) for p in parts])

    return build(structure)


def leaf_meta(leaf: Value) -> Any:
    if isinstance(leaf, ArrayValue):
        return leaf.meta
    if isinstance(leaf, ScalarInputValue):
        return leaf.node.meta["val"]
    if isinstance(leaf.value, np.generic):
        return ArrayMeta.of(leaf.value)
    return leaf.value


def sub_inputs(sub: SubCapture, leaves: list[Value]) -> list[Value]:
    """A placeholder per carried leaf, as the values the captured function receives."""
    inside = []
    for i, leaf in enumerate(leaves):
        meta = leaf_meta(leaf)
        if isinstance(meta, ArrayMeta):
            inside.append(ArrayValue(sub.placeholder(f"carry_{i}", meta)))
        else:
            kind = meta.type if isinstance(meta, ScalarMeta) else type(meta)
            node = sub.placeholder(f"carry_{i}", ScalarMeta(kind))
            hint = leaf._value if isinstance(leaf, GuardedConst) else leaf.value
            inside.append(LoopScalarValue(hint, node, sub.ctx, "a carried Python number"))
    return inside


def same_kinds(frame, structure: Any, leaves: list[Value], out: Value, what: str,
               refusal: str) -> list[Value]:
    """The leaves of ``out`` when it has ``structure`` and leaves of the same kinds as ``leaves``
    (arrays: dtype and shape; numbers: type); else a graph break saying ``refusal``."""
    out_leaves, out_structure = flatten(frame, out, what)
    if out_structure != structure or any(
            _kind(leaf_meta(a)) != _kind(leaf_meta(b)) for a, b in zip(leaves, out_leaves)):
        want = _describe_tree(structure, leaves)
        got = _describe_tree(out_structure, out_leaves)
        raise frame.unsupported(
            refusal.format(want=want, got=got),
            "cast inside the function (x.astype(...)) so that the kinds always agree")
    return out_leaves


def _kind(meta: Any) -> Any:
    if isinstance(meta, ArrayMeta):
        return meta
    return ("number", meta.type if isinstance(meta, ScalarMeta) else type(meta))


def _describe_tree(structure: Any, leaves: list[Value]) -> str:
    metas = iter([leaf_meta(v) for v in leaves])

    def show(s):
        if s is None:
            return describe(next(metas))
        kind, parts = s
        inner = ", ".join(show(p) for p in parts)
        if kind is _mixed:
            return f"a float or numpy.float64 ({inner})"
        return f"({inner})" if kind is TupleValue else f"[{inner}]"

    return show(structure)


# -- the state a body must leave alone -----------------------------------------------------------
def _snapshot(roots: list) -> dict[int, tuple]:
    """What each value reachable from ``roots`` holds, by identity (containers: their items'
    identities; cells: their contents; arrays: their node; iterators: their position)."""
    state: dict[int, tuple] = {}
    stack = [r for r in roots if r is not None]
    while stack:
        v = stack.pop()
        if id(v) in state:
            continue
        if isinstance(v, FunctionValue):
            state[id(v)] = ("function",)
            stack += [*v.closure, *v.defaults, *v.kwdefaults.values()]
        elif isinstance(v, (CellValue, ExternalCell)):
            state[id(v)] = ("cell", id(v.contents))
            if v.contents is not None:
                stack.append(v.contents)
        elif isinstance(v, (TupleValue, ListValue, DictValue)):
            items = v._items  # never loads lazily-read items: reading them is no change
            values = [] if items is None else list(
                dict.values(items) if isinstance(items, dict) else items)
            stack += values
            if isinstance(v, TupleValue) or not v.fresh or items is None:
                # immutable, or from outside: loading its items on a read changes what is
                # held here, and a write to it is a recorded side effect (checked apart)
                state[id(v)] = ("held",)
            elif isinstance(items, dict):
                state[id(v)] = ("dict", tuple((k, id(x)) for k, x in dict.items(items)),
                                len(v.appended))
            else:
                state[id(v)] = ("items", tuple(id(x) for x in items), len(v.appended))
        elif isinstance(v, SetValue):
            state[id(v)] = ("set", tuple(id(x) for x in v.items))
        elif isinstance(v, ArrayValue):
            state[id(v)] = ("array", id(v.node))
        elif isinstance(v, UserObjectValue):
            # an object from outside: reading an attribute caches it in ``attrs``; storing one
            # is a recorded side effect
            state[id(v)] = ("object",)
            stack += list(v.attrs.values())
        elif isinstance(v, BoundMethodValue):
            state[id(v)] = ("method",)
            stack += [v.func, v.self_value]
        elif isinstance(v, IteratorValue):
            state[id(v)] = ("iterator", v.pos, v.count, v.exhausted)
        else:
            state[id(v)] = ("other",)
    return state


def _changed(before: dict[int, tuple], after: dict[int, tuple]) -> bool:
    return any(after.get(key) != was for key, was in before.items())


def _side_effect_state(ctx) -> tuple:
    se = ctx.side_effects
    return (tuple(id(a) for a in se.arrays), tuple(id(m) for m in se.mutations),
            tuple((k, id(v)) for k, v in se.global_stores.items()))


def sub_capture(frame, api: str, role: str, run: Callable[[SubCapture], Value], roots: list,
                what: str) -> tuple[SubCapture, Value]:
    """Run ``run(sub)`` with a new subgraph active: what it captures goes there. Refuses
    (naming ``what``) when it changed anything reachable from ``roots`` or a side effect."""
    ctx = frame.ctx
    names = ctx.__dict__.setdefault("subgraph_names", itertools.count())
    sub = SubCapture(ctx, f"{api}_{role}_{next(names)}")
    before, effects = _snapshot(roots), _side_effect_state(ctx)
    with sub.active():
        result = run(sub)
    if _side_effect_state(ctx) != effects or _changed(before, _snapshot(roots)):
        raise frame.unsupported(
            f"{what} changes objects outside it (a list, dict, attribute, global or closure "
            "variable), which a loop body run once at capture time cannot repeat", _HINT,
            kind="side_effect")
    unbound = unbound_symbols(sub.graph)
    if unbound:  # y[i:n] with n = x.shape[0], and x not read in the body
        raise frame.unsupported(f"{what} computes with the sizes {sorted(unbound)}, which "
                                "none of the arrays it reads gives")
    return sub, result


def capture_function(frame, api: str, role: str, fn: Value, make_inputs: Callable,
                     roots: list) -> tuple[SubCapture, Value]:
    """Inline ``fn`` into a new subgraph; ``make_inputs(sub)`` gives its arguments. Returns the
    sub-capture and what ``fn`` returned (not yet closed into a graph)."""
    try:
        return sub_capture(
            frame, api, role, lambda sub: call_value(frame, fn, make_inputs(sub), {}),
            [fn, *roots], f"npdynamo.{api}'s {role} function")
    except CaptureUnsupported as exc:
        if not exc.reason.startswith("npdynamo."):
            exc.reason = f"npdynamo.{api}: its {role} function cannot be captured: {exc.reason}"
        raise


def sub_frame(frame, start: int, stop: int | None):
    """A frame running ``frame``'s own code from instruction ``start`` (to ``stop``) on a copy
    of its locals: the body of a loop or a branch, captured into a subgraph."""
    body = type(frame)(frame.ctx, frame.func, dict(frame.locals), parent=frame)
    body.cells = frame.cells
    body.ip, body.stop_at = start, stop
    return body


def _carried_inputs(sub: SubCapture, leaves, structure, prefix: tuple = ()) -> list:
    inside = sub_inputs(sub, leaves)
    sub.carried_inside = inside
    return [*prefix, unflatten(structure, inside)]


def check_untouched(frame, api: str, sub: SubCapture) -> None:
    for value in getattr(sub, "carried_inside", []):
        if isinstance(value, ArrayValue) and value.node.op != "placeholder":
            raise frame.unsupported(
                f"the body of npdynamo.{api} writes into its carried array in place (the caller's "
                "array would change)", "build a new array (x = x.copy() first, or np.where)",
                kind="side_effect")


def record_node(frame, op, args: tuple, metas: tuple, hints: list, what: str,
            subs: tuple[SubCapture, ...]) -> list[Value]:
    """Append the control-flow node and one ``tuple_item`` per result; the result values.

    Like the user's own loop, the node may return its input arrays themselves (a loop that
    never runs) or views of them: every array it read or returned is remembered, and an
    in-place write into one of them later is a graph break (``side_effects.write_array``).
    A node whose results are all NumPy scalars or Python numbers returns no array, so no
    alias of one (``diag = H[i - 1, j - 1] + (match if s[i] == t[j] else mismatch)``, then
    ``H[i, j] = ...``)."""
    ctx = frame.ctx
    whole = ctx.call_op(op, args, {})
    results = []
    for i, meta in enumerate(metas):
        item = ctx.call_op(TUPLE_ITEM, (whole, i), {})
        if isinstance(meta, ScalarMeta):
            item = LoopScalarValue(hints[i], item.node, ctx, what)
        results.append(item)
    if all(isinstance(meta, ScalarMeta) or meta.scalar for meta in metas):
        return results
    read = [v for a in args if isinstance(a, tuple) for v in a] + [
        v for sub in subs for v, _node in sub.watched]
    for value in (*read, *results):
        while isinstance(value, ArrayValue):  # and the arrays it is a view of
            ctx.loop_aliased[id(value)] = value
            value = value.base
    return results


def infer_results(frame, op, args: tuple) -> tuple:
    meta = lambda v: leaf_meta(v) if isinstance(v, Value) else v  # noqa: E731
    metas = tuple(tuple(meta(v) for v in a) if isinstance(a, tuple) else meta(a) for a in args)
    try:
        return op.infer(*metas)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"npdynamo.{op.name}: {exc}", _HINT) from exc


def leaf_values(leaves: list[Value]) -> tuple:
    return tuple(leaf if isinstance(leaf, (ArrayValue, ScalarInputValue)) else leaf.value
                 for leaf in leaves)


def extras_of(sub: SubCapture) -> tuple:
    return tuple(ArrayValue(n) for n in sub.extra)


# -- the three calls -----------------------------------------------------------------------------
def _expect(frame, api: str, args: list[Value], count: int) -> None:
    if len(args) != count if count >= 0 else len(args) < -count:
        raise frame.unsupported(f"npdynamo.{api} called with {len(args)} arguments")


def leaf_hint(leaf: Value) -> object:
    if isinstance(leaf, ArrayValue):
        return None
    return leaf._value if isinstance(leaf, GuardedConst) else leaf.value


def capture_cond(frame, target, args: list[Value], kwargs: dict) -> Value:
    """``cond(pred, true_fun, false_fun, *operands)``: both branches into one ``cond`` node
    when ``pred`` is a graph value; Python's own ``if`` (specialised) when it is known."""
    _expect(frame, "cond", args, -3)
    pred, true_fn, false_fn, *operands = args
    if not isinstance(pred, (ArrayValue, ScalarInputValue)):
        if not isinstance(pred, Const):
            raise frame.unsupported(f"npdynamo.cond with a {pred.kind()} predicate")
        return call_value(frame, true_fn if pred.value else false_fn, list(operands), {})
    if isinstance(pred, ArrayValue) and pred.meta.shape != ():
        raise frame.unsupported(
            f"the predicate of npdynamo.cond is an array of shape {pred.meta.shape}; a graph "
            "can branch on one value (shape ())", "reduce it first (p.any(), p.all())")
    branches = []
    for role, fn in (("true", true_fn), ("false", false_fn)):
        branches.append(capture_function(
            frame, "cond", role, fn, lambda sub: list(operands), list(operands)))
    (t_sub, t_out), (f_sub, f_out) = branches
    t_leaves, structure = flatten(frame, t_out, "the value cond's true branch returns")
    f_leaves = same_kinds(
        frame, structure, t_leaves, f_out, "the value cond's false branch returns",
        "the branches of npdynamo.cond return different kinds of values: {want} and {got}")
    node_args = (pred, t_sub.finish(t_leaves), f_sub.finish(f_leaves), (),
                 extras_of(t_sub), extras_of(f_sub))
    metas = infer_results(frame, COND, node_args)
    hints = [leaf_hint(leaf) for leaf in t_leaves]
    results = record_node(frame, COND, node_args, metas, hints, "a number npdynamo.cond returns",
                      (t_sub, f_sub))
    return unflatten(structure, results)


def _predicate_leaf(frame, api: str, out: Value) -> Value:
    if isinstance(out, ArrayValue) and out.meta.shape == ():
        return out
    if isinstance(out, ScalarInputValue) or (
            isinstance(out, Const) and type(out.value) in (bool, *_NUMBERS)):
        return out
    raise frame.unsupported(
        f"the condition of npdynamo.{api} returns a {out.kind()}, not one value (an array of "
        "shape () or a NumPy scalar)", "reduce it first (err.max() > tol)")


def capture_while_loop(frame, target, args: list[Value], kwargs: dict) -> Value:
    """``while_loop(cond_fun, body_fun, init_val)`` as one ``while_loop`` node."""
    _expect(frame, "while_loop", args, 3)
    cond_fn, body_fn, init = args
    leaves, structure = flatten(frame, init, "the initial value of npdynamo.while_loop")
    inputs = lambda sub: _carried_inputs(sub, leaves, structure)  # noqa: E731
    c_sub, c_out = capture_function(frame, "while_loop", "cond", cond_fn, inputs, [init])
    check_untouched(frame, "while_loop", c_sub)
    test = _predicate_leaf(frame, "while_loop", c_out)
    b_sub, out_leaves = _loop_body(frame, "while_loop", body_fn, inputs, init, leaves, structure)
    node_args = (c_sub.finish([test]), b_sub.finish(out_leaves), leaf_values(leaves),
                 extras_of(c_sub), extras_of(b_sub))
    return _loop_result(frame, WHILE_LOOP, node_args, leaves, structure, (c_sub, b_sub))


def _loop_body(frame, api: str, body_fn: Value, inputs: Callable, init: Value,
               leaves: list[Value], structure: Any) -> tuple[SubCapture, list[Value]]:
    sub, out = capture_function(frame, api, "body", body_fn, inputs, [init])
    check_untouched(frame, api, sub)
    out_leaves = same_kinds(
        frame, structure, leaves, out, f"the value {api}'s body returns",
        f"the body of npdynamo.{api} changes the carried value from {{want}} to {{got}}; a "
        "loop's carried values must keep their structure, dtype and shape")
    return sub, out_leaves


def _loop_result(frame, op, node_args: tuple, leaves: list[Value], structure: Any,
                 subs: tuple[SubCapture, ...]) -> Value:
    metas = infer_results(frame, op, node_args)
    results = record_node(frame, op, node_args, metas, [leaf_hint(v) for v in leaves],
                      f"a number npdynamo.{op.name} returns", subs)
    return unflatten(structure, results)


def _bound(frame, value: Value, which: str) -> Value | int:
    if isinstance(value, ScalarInputValue) and value.node.meta.get("val") == ScalarMeta(int):
        return value
    if isinstance(value, Const) and not isinstance(value, ScalarInputValue):
        bound = value.value
        if type(bound) is int or isinstance(bound, np.integer):
            return int(bound)
    raise frame.unsupported(
        f"the {which} bound of npdynamo.fori_loop is a {value.kind()}, not a Python int",
        "pass an int (x.shape[0], a function argument)")


def index_size(ctx, node, lower, upper) -> SymInt | None:
    """The loop index as a size over the range (``ops.loop_index``): slices it bounds get
    shapes computed from it; ``node`` (the body's index input) gives its value at run time."""
    count = ctx.__dict__.setdefault("index_symbols", [0])  # unique names in one capture
    name = f"i{count[0]}"
    count[0] += 1
    first = lower.expr if isinstance(lower, ScalarInputValue) else lower  # None: unknown
    last = upper if not isinstance(upper, ScalarInputValue) else upper.expr
    last = None if last is None else last - 1
    expr = index_symbol(name, first, last)
    if expr is not None:
        node.meta["size_symbol"] = name  # where generated code reads the symbol (fx.sizes)
        node.meta["size_expr"] = expr  # what a slice bound by it means (shape propagation)
    return expr


def capture_fori_loop(frame, target, args: list[Value], kwargs: dict) -> Value:
    """``fori_loop(lower, upper, body_fun, init_val)`` as one ``fori_loop`` node; the bounds
    may be dynamic scalars, so a new trip count reuses the graph."""
    _expect(frame, "fori_loop", args, 4)
    lower, upper = _bound(frame, args[0], "lower"), _bound(frame, args[1], "upper")
    body_fn, init = args[2], args[3]
    leaves, structure = flatten(frame, init, "the initial value of npdynamo.fori_loop")

    def inputs(sub: SubCapture) -> list[Value]:
        start = lower if type(lower) is int else leaf_hint(lower)
        node = sub.placeholder("i", ScalarMeta(int))
        index = LoopScalarValue(start, node, sub.ctx, "the loop index of npdynamo.fori_loop")
        index.expr = index_size(sub.ctx, node, lower, upper)  # an empty range runs no body
        return _carried_inputs(sub, leaves, structure, prefix=(index,))

    b_sub, out_leaves = _loop_body(frame, "fori_loop", body_fn, inputs, init, leaves, structure)
    node_args = (lower, upper, b_sub.finish(out_leaves), leaf_values(leaves), extras_of(b_sub))
    return _loop_result(frame, FORI_LOOP, node_args, leaves, structure, (b_sub,))


builtin(cond, keywords=())(capture_cond)
builtin(while_loop, keywords=())(capture_while_loop)
builtin(fori_loop, keywords=())(capture_fori_loop)
