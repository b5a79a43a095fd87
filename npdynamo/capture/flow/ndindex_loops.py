"""``for idx in np.ndindex(shape)`` of a shape known now, formed like a ``for`` over a range
(``for_loops``): the builtin call (``builtin_calls``) gives a ``LazyNdindex`` when a plain ``for``
statement iterates it next; at its ``GET_ITER`` the loop is captured as one ``fori_loop`` over
the flat index ``i`` of ``range(prod(shape))``, whose loop variable is the tuple NumPy would
give at ``i``, computed in the graph in C order (``unravel``). Not formed (too short, the
variable read after the loop, a body that needs its values), the loop iterates NumPy's own
index tuples (``snapshot``), unrolled as before.
"""

from __future__ import annotations

from npdynamo import config
from npdynamo.capture.flow.for_loops import LazyRange, iterated_next
from npdynamo.capture.values import Const, Value


class LazyNdindex(LazyRange):
    """``np.ndindex(shape)`` about to be iterated by a ``for`` statement: the loop over
    ``range(start, prod(shape))`` whose variable is its index unravelled into a tuple of graph
    ints (``unravel(frame, index)``); unformed, the tuples ``snapshot()`` gives."""

    def __init__(self, count: int, unravel, snapshot, start: int = 0) -> None:
        super().__init__([Const(start), Const(count)], [start, count])
        self.unravel, self.snapshot = unravel, snapshot

    def item(self, frame, index: Value) -> Value:
        return self.unravel(frame, index)

    def starting_at(self, start: int) -> LazyRange:
        return LazyNdindex(self.hints[-1], self.unravel, self.snapshot, start)

    def unformed(self) -> Value:
        return self.snapshot()


def lazy_ndindex(frame, count: int, unravel, snapshot) -> LazyNdindex | None:
    """A ``LazyNdindex`` when a plain ``for`` statement iterates ``np.ndindex`` next."""
    if not config.capture_for_loops or not iterated_next(frame):
        return None
    return LazyNdindex(count, unravel, snapshot)


__all__ = ["LazyNdindex", "lazy_ndindex"]
