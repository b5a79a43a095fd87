"""Tracked generators: generator expressions and generator functions run lazily under capture.

Calling a generator function (a generator expression's code object included) inside the capture
makes a ``GeneratorValue``: a suspended ``Frame`` of its body that runs only when a consumer asks
for the next item (a ``for`` loop, ``next``, ``sum``/``any``/``tuple``/...), up to its next
``YIELD_VALUE``, as CPython resumes a generator. So ``any``/``all`` stop at the deciding item, a
``for`` loop left with ``break`` leaves the generator suspended, and the body's array operations
land in the consumer's graph. ``zip``/``enumerate`` over a generator advance it one item at a
time too (``LazyIterator``).

A generator handed back to Python (returned, stored, left live at a graph break) is rebuilt by
calling its function again while it has not started; once started its frame state cannot be
rebuilt, and the capture says so (the frame then runs in Python). ``send``/``throw``/``close``
and other attributes of a generator are not modelled: a graph break.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.values import Const, TupleValue, Value

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame


@dataclass(eq=False, repr=False)
class GeneratorValue(Value):
    """A generator object made inside the capture; ``frame`` is its suspended body. ``fn``
    called with ``args`` and ``kwargs`` again rebuilds an unstarted one."""

    frame: Frame
    fn: Value
    args: list[Value]
    kwargs: dict[str, Value]
    started: bool = False
    running: bool = False
    finished: bool = False

    def kind(self) -> str:
        return "generator"

    def __repr__(self) -> str:
        return f"GeneratorValue({self.frame.code.co_name})"


class LazyIterator(Value):
    """``zip(...)``/``enumerate(...)`` over a generator: each item is pulled when asked for."""

    def __init__(self, maker, args: list[Value], items: Iterator[Value]) -> None:
        self.maker = maker  # zip or enumerate (to rebuild it while unstarted)
        self.args = args
        self._items = items
        self.started = False

    def kind(self) -> str:
        return self.maker.__name__

    def __repr__(self) -> str:
        return f"LazyIterator({self.maker.__name__})"


LAZY_KINDS = (GeneratorValue, LazyIterator)


def is_lazy(value: Value) -> bool:
    """True for iterators whose items are computed only when asked for."""
    return isinstance(value, LAZY_KINDS)


def resume(gen: GeneratorValue) -> Value | None:
    """``next(gen)``: run the body to its next yield; None once it has returned."""
    if gen.finished:
        return None
    if gen.running:
        raise UserCodeRaises(ValueError("generator already executing"))
    frame = gen.frame
    # the consumer asking for the item: error locations name the line that iterates
    frame.parent = frame.ctx.current
    if gen.started:
        frame.push(Const(None))  # what the suspended YIELD_VALUE evaluates to (send(None))
    gen.started = gen.running = True
    frame.yielded = None
    try:
        frame.run()
    except UserCodeRaises as exc:
        gen.finished = True
        if isinstance(exc.error, StopIteration):  # PEP 479
            raise UserCodeRaises(RuntimeError("generator raised StopIteration")) from exc
        raise
    finally:
        gen.running = False
    item = frame.yielded
    if item is None:
        gen.finished = True
    return item


def next_item(it: Value) -> Value | None:
    """The next item of a tracked iterator (None when it is exhausted)."""
    if isinstance(it, GeneratorValue):
        return resume(it)
    if isinstance(it, LazyIterator):
        it.started = True
        return next(it._items, None)
    return it.next()


def each(it: Value) -> Iterator[Value]:
    """The items of a tracked iterator, each computed only when the caller asks for it."""
    while (item := next_item(it)) is not None:
        yield item


def drain(it: Value) -> list[Value]:
    """Every remaining item (what ``list(it)`` consumes)."""
    return list(each(it))


def lazy_zip(frame: Frame, iterators: list[Value], args: list[Value]) -> LazyIterator:
    """``zip`` over iterators one of which is lazy: items pulled in CPython's order."""
    streams = [each(it) for it in iterators]
    return LazyIterator(zip, args, (TupleValue(list(group)) for group in zip(*streams)))


def lazy_enumerate(frame: Frame, it: Value, start: Value, args: list[Value]) -> LazyIterator:
    if not isinstance(start, Const) or type(start.value) is not int:
        raise frame.unsupported("enumerate() of a generator with a start that is not an int")
    items = (TupleValue([Const(i), v]) for i, v in enumerate(each(it), start.value))
    return LazyIterator(enumerate, args, items)


def lazy_contains(frame: Frame, it: Value, item: Value) -> bool:
    """``item in it``: pulls items only up to the first equal one, as CPython does."""
    for member in each(it):
        if not isinstance(item, Const) or not isinstance(member, Const):
            raise frame.unsupported("`in` on values that are not Python constants")
        if member.value is item.value or member.value == item.value:
            return True
    return False


def rebuild_expr(rebuilder, value: Value) -> str:
    """The expression that remakes an unstarted lazy iterator in Python (a fresh call)."""
    if value.started:
        raise rebuilder.ctx.unsupported(
            f"a {value.kind()} that has already produced items cannot be handed back to Python",
            "consume it completely inside the function (e.g. list(gen)) or create it outside",
        )
    if isinstance(value, GeneratorValue):
        call = rebuilder.expr(value.fn)
        args, kwargs = value.args, value.kwargs
    else:
        call = rebuilder.namespace.bind(value.maker, value.maker.__name__)
        args, kwargs = value.args, {}
    parts = [rebuilder.expr(a) for a in args]
    parts += [f"{k}={rebuilder.expr(v)}" for k, v in kwargs.items()]
    return f"{call}({', '.join(parts)})"


__all__ = [
    "GeneratorValue",
    "LAZY_KINDS",
    "LazyIterator",
    "drain",
    "each",
    "is_lazy",
    "lazy_contains",
    "lazy_enumerate",
    "lazy_zip",
    "next_item",
    "rebuild_expr",
    "resume",
]
