"""``x[mask] op= v`` under capture: an augmented assignment through a boolean mask.

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

from npdynamo import ops
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.opcalls import op_call, raw
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import ArrayValue, Value
from npdynamo.ops.indexing import boolean_mask
from npdynamo.ops.writes import mask_update_rule


@dataclass(eq=False)
class MaskedRead(Value):
    """``x[mask]`` read by ``x[mask] op= v``; ``array``/``mask`` are the values at the read."""

    container: ArrayValue
    index: ArrayValue
    array: ArrayValue
    mask: ArrayValue

    def kind(self) -> str:
        return "boolean-mask selection"

    def rebuild_expr(self, rebuilder) -> str:
        return f"{rebuilder.expr(self.array)}[{rebuilder.expr(self.mask)}]"


@dataclass(eq=False)
class MaskedUpdate(Value):
    """``tmp op= v`` on a ``MaskedRead``, awaiting its store into the same ``x[mask]``."""

    read: MaskedRead
    ufunc: str
    other: object

    def kind(self) -> str:
        return "updated boolean-mask selection"


def masked_read(frame, container: ArrayValue, index: object) -> MaskedRead | None:
    """The read of ``x[mask] op= v``, or None for any other subscript."""
    if not isinstance(index, ArrayValue) or boolean_mask(index.meta) is None:
        return None
    stack = frame.stack
    if len(stack) < 2 or stack[-1] is not index or stack[-2] is not container:
        return None
    return MaskedRead(container, index, ArrayValue(container.node), ArrayValue(index.node))


def masked_inplace(frame, read: MaskedRead, symbol: str, other: Value) -> MaskedUpdate:
    """``tmp op= v``: checked now (a refusal breaks here, before the store)."""
    op = ops.INPLACE_OPERATORS.get(symbol + "=")
    if op is None or op.kind != "elementwise":
        raise frame.unsupported(f"x[mask] {symbol}= v is not captured")
    other_raw = raw(other)
    try:
        mask_update_rule(read.container.meta, read.array.meta, read.mask.meta,
                          read.mask.meta, _meta(other_raw), ufunc=op.name)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"x[mask] {symbol}= v cannot be captured: {exc}") from exc
    except Exception as exc:
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
