"""``x[mask] op= v`` under capture: an augmented assignment through a boolean mask; also
``f(x[mask]).sum()`` and ``.mean()`` of a selection, one op (``masked_reduce``).

Python runs it as ``tmp = x[mask]; tmp op= v; x[mask] = tmp``. The read alone has a size that
depends on the mask (a graph break when it is used otherwise), but here it is only updated and
stored back, so the result has ``x``'s shape whatever the mask selects. The read, recognised by
the stack CPython builds for an augmented subscript (``COPY 2; COPY 2; BINARY_SUBSCR``: the
container and index under the popped ones are the same objects), becomes a ``MaskedRead``
holding the array and mask as they are now; ``op=`` on it a ``MaskedUpdate``; the store a
``mask_update`` node computing exactly Python's three steps, written back into ``x`` like
``x[mask] = v`` (``side_effects.write_array``). A break between the read and the store rebuilds
the read as ``x_then[mask_then]`` and lets Python go on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npdynamo import ops
from npdynamo.capture.errors import NUMPY_ERRORS, UserCodeRaises
from npdynamo.capture.opcalls import loop_int, op_call, raw
from npdynamo.capture.registry import VALUE_METHODS
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import ArrayValue, Const, TupleValue, Value
from npdynamo.ops.indexing import boolean_mask
from npdynamo.ops.inplace_functions import (
    MASKED_REDUCTIONS,
    evaluate_masked,
    mask_update_rule,
    program_meta,
)


@dataclass(eq=False)
class MaskedRead(Value):
    """``x[mask]`` read by ``x[mask] op= v``; ``array``/``mask`` are the values at the read."""

    container: ArrayValue
    index: ArrayValue
    array: ArrayValue
    mask: ArrayValue
    augmented: bool = False

    masked_selection = True  # opcalls refuses it as an op operand (a graph break)

    def kind(self) -> str:
        return "boolean-mask selection"

    def rebuild_expr(self, rebuilder) -> str:
        return f"{rebuilder.expr(self.array)}[{rebuilder.expr(self.mask)}]"

    @property
    def program(self) -> tuple:
        return (("leaf", 0),)

    @property
    def leaves(self) -> tuple:
        return (self,)


@dataclass(eq=False)
class MaskedExpr(Value):
    """Python operators applied to boolean-mask selections under one mask (``x[m] - L``,
    ``z[m] ** 2 + c[m]``): ``program`` is the postfix list of steps over ``leaves``."""

    leaves: tuple
    program: tuple

    masked_selection = True

    def kind(self) -> str:
        return "expression of boolean-mask selections"

    def rebuild_expr(self, rebuilder) -> str:
        mask = rebuilder.expr(self.leaves[0].mask)
        arrays = ", ".join(rebuilder.expr(leaf.array) for leaf in self.leaves)
        program = rebuilder.bind(self.program, "PROGRAM")
        return f"{rebuilder.bind(evaluate_masked, 'MASKED')}({program}, {mask}, ({arrays},))"


MASKED_KINDS = (MaskedRead, MaskedExpr)


@dataclass(eq=False)
class MaskedUpdate(Value):
    """``tmp op= v`` on a ``MaskedRead``, awaiting its store into the same ``x[mask]``."""

    read: MaskedRead
    ufunc: str
    other: object

    def kind(self) -> str:
        return "updated boolean-mask selection"


def masked_read(frame, container: ArrayValue, index: object) -> MaskedRead | None:
    """``x[mask]`` for one boolean mask, else None. Its size depends on the data, so it stays
    a ``MaskedRead``: updated in place by ``x[mask] op= v`` (``augmented``: the stack CPython
    builds for it), combined by operators into a ``MaskedExpr``, stored under the same mask;
    any other use is a graph break that computes it in Python."""
    stack = frame.stack
    augmented = len(stack) >= 2 and stack[-1] is index and stack[-2] is container
    if isinstance(index, TupleValue) and not augmented:
        return _masked_column(frame, container, index)
    if not isinstance(index, ArrayValue) or boolean_mask(index.meta) is None:
        return None
    return MaskedRead(container, index, ArrayValue(container.node), ArrayValue(index.node),
                      augmented)


def _masked_column(frame, container: ArrayValue, index: TupleValue) -> MaskedRead | None:
    """``A[mask, j]`` (integers after one leading mask): NumPy pairs each selected position
    with ``j``, which selects the same elements in the same order as ``A[:, j][mask]``, a
    selection of the basic view ``A[:, j]`` (and raises the same IndexError for a ``j`` out
    of range, even when the mask selects nothing). ``j`` may be a rolled loop's index."""
    mask, *rest = index.items
    if not rest or not isinstance(mask, ArrayValue) or boolean_mask(mask.meta) is None:
        return None
    if not all(loop_int(frame, v) or (isinstance(v, Const) and isinstance(
            v.value, (int, np.integer)) and not isinstance(v.value, (bool, np.bool_)))
               for v in rest):
        return None
    if mask.meta.ndim + len(rest) > container.meta.ndim:
        return None  # too many indices: NumPy's own IndexError, through the usual getitem
    lead = (slice(None),) * mask.meta.ndim
    column = op_call(frame, ops.REGISTRY["getitem"],
                     (container, (*lead, *(v if loop_int(frame, v) else v.value
                                           for v in rest))), {})
    return MaskedRead(container, index, ArrayValue(column.node), ArrayValue(mask.node), False)


def masked_binary(frame, symbol: str, left: Value, right: Value) -> MaskedExpr:
    """``left <symbol> right`` with a masked selection on one side or both: the other side a
    Python number or a selection under the same mask."""
    if symbol not in ops.BINARY_OPERATORS or symbol == "@":
        raise frame.unsupported(f"a boolean-mask selection {symbol} a value")
    leaves: list = []
    program: list = []
    for side in (left, right):
        if isinstance(side, MASKED_KINDS):
            if leaves and not same_value(leaves[0].mask.node, side.leaves[0].mask.node):
                raise frame.unsupported("selections under different boolean masks combined")
            start = len(leaves)
            leaves.extend(side.leaves)
            program.extend(("leaf", step[1] + start) if step[0] == "leaf" else step
                           for step in side.program)
        elif isinstance(side, Const) and type(side.value) in (bool, int, float, complex):
            program.append(("const", side.value))
        else:
            raise frame.unsupported(f"a boolean-mask selection {symbol} a {side.kind()}")
    program.append(("op", symbol))
    expr = MaskedExpr(tuple(leaves), tuple(program))
    try:  # dtypes and errors as NumPy's, on one selected element
        _program_meta(expr, 1)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"this boolean-mask expression cannot be captured: {exc}") from exc
    except NUMPY_ERRORS as exc:  # (anything else is npdynamo's own failure: a graph break)
        raise UserCodeRaises(exc) from exc
    return expr


def masked_reduction(frame, value: Value, name: str, args: list, kwargs: dict) -> Value:
    """``x[mask].sum()``, ``f(x[mask], y[mask]).mean()``: one ``masked_reduce`` node, the
    selection never made a graph value (the numba backend folds it as a masked loop)."""
    if name not in MASKED_REDUCTIONS or args or kwargs:
        raise frame.unsupported(f"x[mask].{name}() with arguments is not captured")
    return op_call(frame, ops.REGISTRY["masked_reduce"],
                   (value.leaves[0].mask, *(leaf.array for leaf in value.leaves)),
                   {"program": value.program, "kind": name})


for _kind in (MaskedRead, MaskedExpr):
    VALUE_METHODS[_kind] = (frozenset(MASKED_REDUCTIONS), masked_reduction)


def masked_assign(frame, container: Value, index: Value, value: Value) -> bool:
    """``y[mask] = <selection or expression under the same mask>``: one ``mask_apply`` node
    computing exactly what Python computes; False when the mask or shapes differ (the usual
    store then decides)."""
    if not isinstance(container, ArrayValue) or not isinstance(index, ArrayValue):
        return False
    mask = value.leaves[0].mask
    if not same_value(index.node, mask.node) or any(
            leaf.array.meta.shape != container.meta.shape for leaf in value.leaves):
        return False
    new = op_call(frame, ops.REGISTRY["mask_apply"],
                  (container, index, *(leaf.array for leaf in value.leaves)),
                  {"program": value.program})
    write_array(frame.ctx, container, new)
    return True


def same_value(a, b) -> bool:
    """Whether two graph nodes compute the same value (what CSE would merge)."""
    if a is b:
        return True
    if getattr(a, "op", None) != "call_function" or getattr(b, "op", None) != "call_function":
        return False
    if a.target is not b.target or a.is_impure() or a.kwargs != b.kwargs:
        return False
    if len(a.args) != len(b.args):
        return False
    return all(same_value(x, y) if hasattr(x, "op") else
               (type(x) is type(y) and x == y) for x, y in zip(a.args, b.args))


def _program_meta(expr: MaskedExpr, k: int):
    metas = [ops.ArrayMeta((k, *leaf.array.meta.shape[leaf.mask.meta.ndim:]),
                           leaf.array.meta.dtype) for leaf in expr.leaves]
    return program_meta(expr.program, metas)


def masked_inplace(frame, read: MaskedRead, symbol: str, other: Value) -> MaskedUpdate:
    """``tmp op= v``: checked now (a refusal breaks here, before the store)."""
    if not read.augmented:
        raise frame.unsupported("an in-place update of a boolean-mask selection")
    op = ops.INPLACE_OPERATORS.get(symbol + "=")
    if op is None or op.kind != "elementwise":
        raise frame.unsupported(f"x[mask] {symbol}= v is not captured")
    other_raw = raw(other)
    if getattr(other_raw, "masked_selection", False):  # x[m] += y[m]: no rule takes it
        raise frame.unsupported(f"x[mask] {symbol}= a boolean-mask selection is not captured")
    try:
        mask_update_rule(read.container.meta, read.array.meta, read.mask.meta,
                          read.mask.meta, _meta(other_raw), ufunc=op.name)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"x[mask] {symbol}= v cannot be captured: {exc}") from exc
    except NUMPY_ERRORS as exc:  # (anything else is npdynamo's own failure: a graph break)
        raise UserCodeRaises(exc) from exc
    return MaskedUpdate(read, op.name, other_raw)


def masked_store(frame, container: Value, index: Value, update: MaskedUpdate) -> bool:
    """``x[mask] = tmp`` after ``tmp op= v``; False when it is not the matching store."""
    read = update.read
    if container is not read.container or index is not read.index:
        return False
    new = op_call(frame, ops.REGISTRY["mask_update"],
                  (container, read.array, read.mask, index, update.other),
                  {"ufunc": update.ufunc})
    write_array(frame.ctx, container, new)
    return True


def _meta(value: object) -> object:
    return value.meta if isinstance(value, ArrayValue) else value
