"""``for row in a`` and ``for i, row in enumerate(a, start)`` over an array of the graph, formed
like a ``for`` over ``range(len(a))`` (``for_loops``): at the ``GET_ITER`` of the statement
(``opcodes.control``), or at the ``enumerate`` call a ``for`` statement iterates next
(``builtin_calls``), a ``LazyRows`` stands for the loop; its variable at index ``i`` is the view
``a[i]`` (with ``i + start`` before it for ``enumerate``), indexed when the iteration starts, as
NumPy's iterator does. Not formed (too short, the variable read after the loop, a body that
leaves it or needs the index's value), the loop iterates the rows as before (``unformed``).

The array iterated is the one the statement started with, as Python's iterator keeps it:

* a local holding it that the body never rebinds is carried by the loop (its rows are read
  through it: ``reads``), so a row is indexed from its state at that iteration: writes of
  earlier iterations are seen, and a write into the row (``row /= row.sum()``) is one into it;
* otherwise (the body rebinds that local, or the array is no local's: ``a.T``, ``x[1:]``) it is
  an array from outside the body, which the body may not write into (``sub_capture`` refuses),
  so every iteration indexes the array as it was when the loop started.
"""

from __future__ import annotations

from collections.abc import Callable

from npdynamo import config, ops
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.liveness import _reads_writes
from npdynamo.capture.flow.for_loops import LazyRange, for_shape
from npdynamo.capture.opcalls import op_call
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    GuardedConst,
    ScalarInputValue,
    TupleValue,
    Value,
)


class LazyRows(LazyRange):
    """Iterating the rows of ``array`` by a ``for`` statement: the loop over
    ``range(first, len(array))`` whose variable is the row at the index, or with ``count``
    (``enumerate``) the pair ``(count(frame, index), row)``; unformed, ``unformed()``."""

    unpacks = True  # (a row of a 2-d array, or enumerate's pair, may be unpacked)

    def __init__(self, array: ArrayValue, size: Value, kept: str | None,
                 count: Callable | None, unformed: Callable[[], Value], first: int = 0) -> None:
        hint = size._value if isinstance(size, GuardedConst) else size.value
        super().__init__([Const(first), size], [first, hint])
        self.array, self.size, self.kept, self.count = array, size, kept, count
        self.reads = () if kept is None else (kept,)  # (writes through a row are into it)
        self._unformed = unformed

    def item(self, frame, index: Value) -> Value:
        # the local ``kept`` holds the array (as the body carries it)
        array = self.array if self.kept is None else frame.locals[self.kept]
        at = index if isinstance(index, ScalarInputValue) else index.value  # (a graph int)
        row = op_call(frame, ops.REGISTRY["getitem"], (array, at), {})
        return row if self.count is None else TupleValue([self.count(frame, index), row])

    def starting_at(self, start: int) -> LazyRange:
        return LazyRows(self.array, self.size, self.kept, self.count, self._unformed, start)

    def unformed(self) -> Value:
        return self._unformed()


def lazy_rows(frame, array: Value, shape: tuple | None, count: Callable | None,
              unformed: Callable[[], Value]) -> LazyRows | None:
    """A ``LazyRows`` when ``array`` has rows and the plain ``for`` statement ``shape``
    (``for_shape``) iterates it; None: iterated as before (a 0-d array raises then)."""
    if not config.capture_for_loops or shape is None or not isinstance(array, ArrayValue):
        return None
    if array.meta.ndim == 0:
        return None
    size = frame.ctx.size_value(array.meta.shape[0])
    return LazyRows(array, size, _kept_name(frame, array, shape), count, unformed)


def rows_at_get_iter(frame, array: Value) -> LazyRows | None:
    """At a ``GET_ITER`` just run: ``for row in array``, maybe formed."""
    if not isinstance(array, ArrayValue):
        return None
    return lazy_rows(frame, array, for_shape(frame, frame.ip, True), None, lambda: array)


def _kept_name(frame, array: ArrayValue, shape: tuple) -> str | None:
    """A local that holds ``array`` now and that the loop body never stores to."""
    _head, body, exit_index, _var = shape
    stored: set[str] = set()
    for ins in frame.instrs[body:exit_index]:
        if isinstance(ins, bc.Instr):
            stored.update(_reads_writes(ins)[1])
    return next((name for name, value in frame.locals.items()
                 if value is array and name not in stored), None)


__all__ = ["LazyRows", "lazy_rows", "rows_at_get_iter"]
