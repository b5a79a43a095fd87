"""``for row in a``, ``for i, row in enumerate(a, start)`` and ``for x, y in zip(a, b)`` over
arrays of the graph, formed like a ``for`` over ``range(len(a))`` (``for_loops``): at the
``GET_ITER`` of the statement (``opcodes.control``), or at the ``enumerate``/``zip`` call a
``for`` statement iterates next (``builtin_calls``), a ``LazyRows`` stands for the loop; its
variable at index ``i`` is the view ``a[i]`` (with ``i + start`` before it for ``enumerate``;
``zip``: the tuple of rows, as many as the shortest array has, a number known at capture
unless every array has the same size), indexed when the iteration starts, as NumPy's iterator
does. Not formed (too short, the variable read after the loop, a body that leaves it or needs
the index's value, ``zip(..., strict=True)``), the loop iterates the rows as before
(``unformed``).

Each array iterated is the one the statement started with, as Python's iterator keeps it:

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
    """Iterating the rows of ``arrays`` by a ``for`` statement: the loop over
    ``range(first, size)`` whose variable is ``pack(frame, index, rows)`` of the rows at the
    index (the row itself; ``enumerate``'s pair; ``zip``'s tuple); unformed, ``unformed()``."""

    unpacks = True  # (a row of a 2-d array, enumerate's pair or zip's tuple may be unpacked)

    def __init__(self, arrays: list[ArrayValue], size: Value, kept: list[str | None],
                 pack: Callable, unformed: Callable[[], Value], first: int = 0) -> None:
        hint = size._value if isinstance(size, GuardedConst) else size.value
        super().__init__([Const(first), size], [first, hint])
        self.arrays, self.size, self.kept, self.pack = arrays, size, kept, pack
        self.reads = tuple(name for name in kept if name is not None)  # (written through rows)
        self._unformed = unformed

    def item(self, frame, index: Value) -> Value:
        at = index if isinstance(index, ScalarInputValue) else index.value  # (a graph int)
        # a local in ``kept`` holds its array (as the body carries it)
        rows = [op_call(frame, ops.REGISTRY["getitem"], (
            array if name is None else frame.locals[name], at), {})
            for array, name in zip(self.arrays, self.kept)]
        return self.pack(frame, index, rows)

    def starting_at(self, start: int) -> LazyRange:
        return LazyRows(self.arrays, self.size, self.kept, self.pack, self._unformed, start)

    def unformed(self) -> Value:
        return self._unformed()


def lazy_rows(frame, arrays: list[Value], shape: tuple | None, pack: Callable,
              unformed: Callable[[], Value]) -> LazyRows | None:
    """A ``LazyRows`` when ``arrays`` all have rows (as many, or a number known now: ``zip``
    stops at the shortest) and the plain ``for`` statement ``shape`` (``for_shape``) iterates
    them; None: iterated as before (a 0-d array raises then)."""
    if not config.capture_for_loops or shape is None or not arrays or not all(
            isinstance(a, ArrayValue) and a.meta.ndim > 0 for a in arrays):
        return None
    sizes = {a.meta.shape[0] for a in arrays}
    if len(sizes) > 1 and not all(type(n) is int for n in sizes):
        return None  # the shortest of sizes known per call only
    size = frame.ctx.size_value(min(sizes) if len(sizes) > 1 else sizes.pop())
    kept = [_kept_name(frame, a, shape) for a in arrays]
    return LazyRows(arrays, size, kept, pack, unformed)


def rows_at_get_iter(frame, array: Value) -> LazyRows | None:
    """At a ``GET_ITER`` just run: ``for row in array``, maybe formed."""
    if not isinstance(array, ArrayValue):
        return None
    return lazy_rows(frame, [array], for_shape(frame, frame.ip, True), only_row, lambda: array)


def only_row(frame, index: Value, rows: list[Value]) -> Value:
    """The variable of ``for row in a``."""
    return rows[0]


def row_tuple(frame, index: Value, rows: list[Value]) -> Value:
    """The variable of ``for x, y in zip(a, b)``."""
    return TupleValue(rows)


def _kept_name(frame, array: ArrayValue, shape: tuple) -> str | None:
    """A local that holds ``array`` now and that the loop body never stores to."""
    _head, body, exit_index, _var = shape
    stored: set[str] = set()
    for ins in frame.instrs[body:exit_index]:
        if isinstance(ins, bc.Instr):
            stored.update(_reads_writes(ins)[1])
    return next((name for name, value in frame.locals.items()
                 if value is array and name not in stored), None)


__all__ = ["LazyRows", "lazy_rows", "row_tuple", "rows_at_get_iter"]
