"""Python functions read from outside the capture, and the closure cells reached through them.

Part of capture, under the builder (``ValueBuilder.function`` and ``external_cell`` call here).
A function read from the frame (an argument, a local handed to a resume function, a global, an
attribute) becomes a ``FunctionValue``. Guarding it by identity would be exact but makes a
closure made anew on every call (``f = lambda v: v * k`` before a graph break) recompile the
resume function on every call. So it is guarded on what inlining a call of it reads, as
TorchDynamo's nested-function values are:

* its type (``types.FunctionType`` exactly) and the identity of its ``__globals__``, tested
  as "the function seen at capture, or else a function of those globals" (one ``is`` on most
  calls: ``SameFunction``), and the identity of its ``__code__`` (which fixes the number of
  closure cells and what the body does);
* ``__defaults__`` (None, or a tuple of that length) and ``__kwdefaults__`` (None, or a dict of
  those keys), guarded only once a call fills a parameter from them (``relies_on``: a call
  passing every parameter reads neither, and its entry does not check them on every call),
  whose items are wrapped through their own sources and guarded where used; a function
  guarded by identity has its ``__code__`` and defaults guarded the same way (each may be
  assigned: the entry must not run the old body);
* the contents of its closure cells, each read through its source and guarded where used, and
  which cell each is where that matters: a cell also reached another way (a cell of the resume
  function itself) is guarded to be that same cell (``ALIAS``); when the capture writes a cell
  (``nonlocal``), every cell reached through such a function is guarded to be another cell than
  the written one unless it was that one at capture (``DISTINCT``).

Anything that relies on the object itself reads ``FunctionValue.fn``, which installs the
identity guard first (handing it back to Python, passing it to a callee run natively, reading
``__name__``, importing in its body). ``is`` and ``id()`` go through ``identity.py`` with the
object's source, which guards the answer. Functions that npdynamo or ``functools.wraps`` made or
marked (a function with a ``__dict__``, generated code) keep the identity guard from the start.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.guards import AttrSource, GuardKind, ItemSource, SameFunction, Source
from npdynamo.capture.hooks.dispatch import is_generated_code
from npdynamo.capture.values import ExternalCell, FunctionValue

if TYPE_CHECKING:
    from npdynamo.capture.builder import ValueBuilder


def read_function(
    builder: ValueBuilder, fn: types.FunctionType, source: Source | None, pinned: bool = False
) -> FunctionValue:
    """``fn`` (a plain user function, neither disabled nor compiled) as a value to inline.
    ``pinned``: the object at ``source`` is ``fn`` by guards already installed (a read-only
    member of a class descriptor guarded by identity); its code and defaults are guarded."""
    ctx = builder.ctx
    loose = source is not None and not pinned and _by_contents(fn)
    if source is not None:
        if loose:  # (type and globals; the function itself first, which implies both)
            ctx.guard(source, GuardKind.FUNCTION, SameFunction.of(fn))
        elif not pinned:
            ctx.guard(source, GuardKind.ID, fn)
        # __code__, __defaults__ and __kwdefaults__ may be assigned, whatever the identity
        ctx.guard(AttrSource(source, "__code__"), GuardKind.ID, fn.__code__)
    defaults = tuple(
        builder.wrap(v, ItemSource(AttrSource(source, "__defaults__"), i) if source else None)
        for i, v in enumerate(fn.__defaults__ or ())
    )
    kwdefaults = {
        k: builder.wrap(v, ItemSource(AttrSource(source, "__kwdefaults__"), k) if source else None)
        for k, v in (fn.__kwdefaults__ or {}).items()
    }
    if fn.__closure__ and source is None:
        # Without a source a later call could not re-read the cells: refuse rather than guess.
        raise CaptureUnsupported(f"closure {fn.__qualname__} reached without a source")
    value = FunctionValue(
        fn.__code__, fn.__globals__, fn.__name__, defaults, kwdefaults, (), fn, source
    )
    if loose:
        value.pin = lambda: ctx.guard(source, GuardKind.ID, fn)
    if source is not None:
        value.defaults_guards = _defaults_guards(ctx, fn, source)
    cells = []
    for i, cell in enumerate(fn.__closure__ or ()):
        cell_source = ItemSource(AttrSource(source, "__closure__"), i)
        contents = AttrSource(cell_source, "cell_contents")
        cells.append(builder.external_cell(cell, contents, cell_source, value if loose else None))
    value.closure = tuple(cells)
    return value


def _by_contents(fn: types.FunctionType) -> bool:
    """Whether ``fn`` may be guarded on its parts rather than its identity: not a wrapper
    (``functools.wraps`` and ``npdynamo.disable`` leave a ``__dict__``; what is registered as
    disabled or compiled is looked up by identity) nor npdynamo's generated code."""
    return not fn.__dict__ and not is_generated_code(fn.__code__)


def _defaults_guards(ctx, fn: types.FunctionType, source: Source) -> dict:
    """Which parameters have defaults, guarded once a call fills a parameter from them
    (``FunctionValue.relies_on``; a call passing every one reads neither): the length of
    ``__defaults__`` (it decides the parameters its items go to) and the keys of
    ``__kwdefaults__``. The values are guarded where a call uses them. (Not their identity: a
    function made anew on each call has new ones, and a guard must not keep a default array
    alive.)"""

    def install(name: str, cls: type, kind: GuardKind, expected: object) -> None:
        part = AttrSource(source, name)
        if getattr(fn, name) is None:
            ctx.guard(part, GuardKind.ID, None)
        else:
            ctx.guard(part, GuardKind.TYPE, cls)
            ctx.guard(part, kind, expected)

    return {
        "__defaults__": lambda: install(
            "__defaults__", tuple, GuardKind.LENGTH, len(fn.__defaults__ or ())),
        "__kwdefaults__": lambda: install(
            "__kwdefaults__", dict, GuardKind.DICT_KEYS, tuple(fn.__kwdefaults__ or ())),
    }


class CellLedger:
    """The closure cells from outside a capture has reached, one tracked value per cell object,
    and the guards on which cell is which (see the module text)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._cells: dict[int, ExternalCell] = {}
        #: id(cell value) -> the function read by its parts that it was reached through
        self._loose: dict[int, FunctionValue] = {}
        self._written: dict[int, ExternalCell] = {}

    def cell(
        self,
        cell: object,
        source: Source | None,
        cell_source: Source | None = None,
        through: FunctionValue | None = None,
    ) -> ExternalCell:
        """The tracked value of ``cell``; ``through``: the function read by its parts whose
        ``__closure__`` holds it (its identity is not guarded, so neither is the cell's)."""
        seen = self._cells.get(id(cell))
        if seen is None:
            seen = self._cells[id(cell)] = ExternalCell(cell, source, cell_source=cell_source)
            if through is not None:
                self._loose[id(seen)] = through
                for written in self._written.values():
                    self._distinct(seen, written)
        elif cell_source != seen.cell_source and (
            through is not None or id(seen) in self._loose
        ):
            # the same cell another way (the frame's own, another function's): on later calls
            # too (the frame's arguments are read before its own cells)
            if seen.cell_source is None or cell_source is None:
                for loose in (through, self._loose.get(id(seen))):
                    if loose is not None:
                        loose.fn  # noqa: B018 - guards the function's identity instead
            else:
                self.ctx.guard(cell_source, GuardKind.ALIAS, seen.cell_source)
        return seen

    def written(self, cell: ExternalCell) -> None:
        """The capture stores into ``cell``: every cell whose identity is not fixed and that was
        another cell at capture must still be another cell."""
        if id(cell) in self._written:
            return
        self._written[id(cell)] = cell
        for other in self._cells.values():
            if other is not cell and (id(other) in self._loose or id(cell) in self._loose):
                self._distinct(other, cell)

    def _distinct(self, a: ExternalCell, b: ExternalCell) -> None:
        if a.cell_source is None or b.cell_source is None:
            for side in (a, b):  # no way to name the cell: the function's identity instead
                loose = self._loose.get(id(side))
                if loose is not None:
                    loose.fn  # noqa: B018 - installs the identity guard
            return
        self.ctx.guard(a.cell_source, GuardKind.DISTINCT, b.cell_source)
