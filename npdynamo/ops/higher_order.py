"""Higher-order ops: ``cond``, ``while_loop`` and ``fori_loop``, whose bodies are subgraphs.

A control-flow node holds its branches or loop bodies as arguments: callables (``fx.GraphModule``s
once captured) that take the carried values, then the outer values they read (``extra``), and
return a tuple. The node's own value is the tuple of results; ``tuple_item`` nodes take it apart.
Everything a pass or backend needs is here, so the IR stays one vocabulary:

* ``impl``: the loop or branch in plain Python (the eager backend runs exactly this, so results
  are bitwise those of the user's own loop, and may be the very input arrays or views of them,
  as the user's loop returns them: capture refuses in-place writes to them, ``capture/
  flow/higher_order.py``);
* ``rule``: carried values keep their dtype and shape (a Python number its type), a loop
  condition and a ``cond`` predicate are one value (shape ``()``), both branches of a ``cond``
  return the same kinds of values; anything else is refused with ``UnsupportedArguments``;
* ``subgraph_inputs``: which input metas each subgraph receives (shape propagation descends).

Subgraphs are only duck-typed here (``.graph`` with placeholders and an output node whose
arguments carry ``meta["val"]``): the ops layer sits below ``fx`` and imports nothing from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import Op, UnsupportedArguments, register
from npdynamo.ops.symbolic import SymInt

_PY_NUMBERS = (int, float, complex)


def carried_kind(meta: Any) -> Any:
    """What must stay the same for a carried value: the ``ArrayMeta`` of an array, the type of
    a Python number (a constant or a dynamic scalar). ``UnsupportedArguments`` otherwise."""
    if isinstance(meta, ArrayMeta):
        return meta
    if isinstance(meta, (np.ndarray, np.generic)):  # a constant
        return ArrayMeta.of(meta)
    if isinstance(meta, ScalarMeta):
        return ("Python", meta.type)
    if type(meta) in _PY_NUMBERS:
        return ("Python", type(meta))
    raise UnsupportedArguments(
        f"a carried value or branch result is a {type(meta).__name__}; only arrays, NumPy "
        "scalars and Python int/float/complex can be carried")


def describe(meta: Any) -> str:
    """A carried value's kind in words: ``float64[8]``, ``scalar float64[]``, ``Python int``."""
    kind = carried_kind(meta)
    return str(kind) if isinstance(kind, ArrayMeta) else f"Python {kind[1].__name__}"


def result_meta(meta: Any) -> ArrayMeta | ScalarMeta:
    """The meta of a result slot: an array's meta, or a dynamic scalar of the number's type."""
    kind = carried_kind(meta)
    return kind if isinstance(kind, ArrayMeta) else ScalarMeta(kind[1])


def _node_meta(value: Any) -> Any:
    meta = getattr(value, "meta", None)
    if isinstance(meta, dict):  # an fx node: its recorded meta
        return meta.get("val")
    if isinstance(value, (np.ndarray, np.generic)):  # a constant folded into the output
        return ArrayMeta.of(value)
    return value  # a Python number stands for itself


def subgraph_outputs(sub: Any) -> list[Any] | None:
    """The metas of what ``sub`` returns (None when it is a plain callable, not a graph)."""
    graph = getattr(sub, "graph", None)
    if graph is None:
        return None
    out = graph.output_node
    value = out.args[0] if out is not None and out.args else ()
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [_node_meta(v) for v in values]


def _check_inputs(where: str, sub: Any, metas: Sequence[Any]) -> None:
    graph = getattr(sub, "graph", None)
    if graph is None:
        return
    params = graph.placeholders
    if len(params) != len(metas):
        raise UnsupportedArguments(
            f"{where} takes {len(params)} inputs but is given {len(metas)}")
    for param, meta in zip(params, metas):
        have = param.meta.get("val")
        if have is not None and meta is not None and carried_kind(have) != carried_kind(meta):
            raise UnsupportedArguments(
                f"{where}: input {param.name} is {describe(have)} but receives {describe(meta)}")


def _check_same(where: str, expected: Sequence[Any], got: Sequence[Any] | None) -> None:
    if got is None:
        return
    if len(got) != len(expected) or any(
            carried_kind(a) != carried_kind(b) for a, b in zip(expected, got)):
        want = ", ".join(describe(m) for m in expected)
        have = ", ".join(describe(m) for m in got)
        raise UnsupportedArguments(f"{where} returns ({have}) where ({want}) is needed")


def _check_predicate(where: str, pred: Any) -> None:
    if isinstance(pred, ArrayMeta):
        if pred.shape != ():
            raise UnsupportedArguments(
                f"{where} is an array of shape {pred.shape}; it must be one value (shape ())")
        return
    if isinstance(pred, ScalarMeta) or type(pred) in (bool, *_PY_NUMBERS):
        return
    raise UnsupportedArguments(f"{where} is a {type(pred).__name__}, not one value")


def _check_bound(where: str, bound: Any) -> None:
    if type(bound) is int or isinstance(bound, SymInt) or (
            isinstance(bound, ScalarMeta) and bound.type is int):
        return
    raise UnsupportedArguments(f"fori_loop's {where} bound must be a Python int, not {bound!r}")


# -- cond ----------------------------------------------------------------------------------------
def _cond_impl(pred, true_fn, false_fn, operands, true_extra=(), false_extra=()) -> tuple:
    if pred:
        return true_fn(*operands, *true_extra)
    return false_fn(*operands, *false_extra)


def _cond_rule(pred, true_fn, false_fn, operands, true_extra=(), false_extra=()) -> tuple:
    _check_predicate("the cond predicate", pred)
    _check_inputs("cond's true branch", true_fn, (*operands, *true_extra))
    _check_inputs("cond's false branch", false_fn, (*operands, *false_extra))
    true_out = subgraph_outputs(true_fn)
    if true_out is None:
        raise UnsupportedArguments("cond needs its branches as graphs to infer its results")
    _check_same("cond's false branch", true_out, subgraph_outputs(false_fn))
    return tuple(result_meta(m) for m in true_out)


def _inputs(*metas: Any) -> tuple:
    # a Python number passed in is a dynamic scalar inside: the body runs for many values
    return tuple(ScalarMeta(type(m)) if type(m) in _PY_NUMBERS else m for m in metas)


def _cond_inputs(pred, true_fn, false_fn, operands, true_extra=(), false_extra=()) -> list:
    return [(true_fn, _inputs(*operands, *true_extra)),
            (false_fn, _inputs(*operands, *false_extra))]


# -- while_loop ----------------------------------------------------------------------------------
def _while_impl(cond_fn, body_fn, carried, cond_extra=(), body_extra=()) -> tuple:
    values = tuple(carried)
    while cond_fn(*values, *cond_extra)[0]:
        values = body_fn(*values, *body_extra)
    return values


def _while_rule(cond_fn, body_fn, carried, cond_extra=(), body_extra=()) -> tuple:
    _check_inputs("the while_loop condition", cond_fn, (*carried, *cond_extra))
    _check_inputs("the while_loop body", body_fn, (*carried, *body_extra))
    test = subgraph_outputs(cond_fn)
    if test is not None:
        if len(test) != 1:
            raise UnsupportedArguments("the while_loop condition must return one value")
        _check_predicate("the while_loop condition's result", test[0])
    _check_same("the while_loop body", carried, subgraph_outputs(body_fn))
    return tuple(result_meta(m) for m in carried)


def _while_inputs(cond_fn, body_fn, carried, cond_extra=(), body_extra=()) -> list:
    return [(cond_fn, _inputs(*carried, *cond_extra)), (body_fn, _inputs(*carried, *body_extra))]


# -- fori_loop -----------------------------------------------------------------------------------
def _fori_impl(lower, upper, body_fn, carried, body_extra=()) -> tuple:
    values = tuple(carried)
    for i in range(lower, upper):
        values = body_fn(i, *values, *body_extra)
    return values


def _fori_rule(lower, upper, body_fn, carried, body_extra=()) -> tuple:
    _check_bound("lower", lower)
    _check_bound("upper", upper)
    _check_inputs("the fori_loop body", body_fn, (ScalarMeta(int), *carried, *body_extra))
    _check_same("the fori_loop body", carried, subgraph_outputs(body_fn))
    return tuple(result_meta(m) for m in carried)


def _fori_inputs(lower, upper, body_fn, carried, body_extra=()) -> list:
    return [(body_fn, _inputs(ScalarMeta(int), *carried, *body_extra))]


# -- the backward of fori_loop ---------------------------------------------------------------------
def _fori_vjp_impl(lower, upper, body_fn, body_vjp, carried, extra, cts, grad_extra) -> tuple:
    """Run the loop again keeping every carried value, then run ``body_vjp`` backwards over
    them: ``body_vjp(i, *carried_i, *extra, *cts) -> (*cts_before, *extra_cts)``. Returns the
    cotangents of the initial carried values, then of ``extra[j]`` for ``j in grad_extra``
    (summed over the iterations)."""
    saved = []
    values = tuple(carried)
    for i in range(lower, upper):
        saved.append(values)
        values = body_fn(i, *values, *extra)
    cts, total = tuple(cts), None
    for i in range(upper - 1, lower - 1, -1):
        out = body_vjp(i, *saved[i - lower], *extra, *cts)
        cts, extra_cts = out[:len(cts)], out[len(cts):]
        total = extra_cts if total is None else tuple(a + b for a, b in zip(total, extra_cts))
    if total is None:  # no iteration: nothing flowed into the outer values
        total = tuple(_zeros_like(extra[j]) for j in grad_extra)
    return (*cts, *total)


def _zeros_like(x: Any) -> Any:
    zeros = np.zeros_like(x)
    return zeros[()] if isinstance(x, np.generic) else zeros


def _fori_vjp_rule(lower, upper, body_fn, body_vjp, carried, extra, cts, grad_extra) -> tuple:
    _fori_rule(lower, upper, body_fn, carried, extra)
    _check_inputs("the fori_loop backward body", body_vjp,
                  (ScalarMeta(int), *carried, *extra, *cts))
    return (*(result_meta(m) for m in cts), *(result_meta(extra[j]) for j in grad_extra))


def _fori_vjp_inputs(lower, upper, body_fn, body_vjp, carried, extra, cts, grad_extra) -> list:
    return [(body_fn, _inputs(ScalarMeta(int), *carried, *extra)),
            (body_vjp, _inputs(ScalarMeta(int), *carried, *extra, *cts))]


def _control_flow_op(name: str, impl: Callable, rule: Callable, inputs: Callable,
                     loop: tuple[int, int] | None = None) -> Op:
    # differentiated by autograd's control-flow step, not by a per-op VJP rule
    return register(Op(name, impl, rule, kind="opaque", differentiable=False,
                       subgraph_inputs=inputs, loop=loop))


COND = _control_flow_op("cond", _cond_impl, _cond_rule, _cond_inputs)
# (loop: the body's position among the arguments, its inputs before the carried values)
WHILE_LOOP = _control_flow_op("while_loop", _while_impl, _while_rule, _while_inputs, (1, 0))
FORI_LOOP = _control_flow_op("fori_loop", _fori_impl, _fori_rule, _fori_inputs, (2, 1))
FORI_LOOP_VJP = _control_flow_op("fori_loop_vjp", _fori_vjp_impl, _fori_vjp_rule,
                                 _fori_vjp_inputs)

CONTROL_FLOW_OPS = frozenset({COND, WHILE_LOOP, FORI_LOOP, FORI_LOOP_VJP})
