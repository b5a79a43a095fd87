"""Sources: where a value the translator relies on came from, so a guard can read it again.

A source is named the way the reports print it (``L['x'].shape``, ``G['np']``, ``L['self'].w``)
and renders itself as a Python expression inside the generated guard and run functions, where the
frame's arguments are positional parameters ``a0, a1, ...``, the function's globals are ``G`` and
its closure cells are ``CELL0, CELL1, ...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar


class Source:
    """Base of all sources; frozen dataclasses, so equal sources hash alike."""

    def name(self) -> str:
        """The canonical name: ``L['x'].w[0]``."""
        raise NotImplementedError

    def short(self) -> str:
        """The name a user reads in a reason: ``x.w[0]``."""
        raise NotImplementedError

    def expr(self, names: Mapping[Source, str] | None = None) -> str:
        """A Python expression reading the value inside generated guard/run code; a source in
        ``names`` (or under one) is read from that local (bound by an earlier check)."""
        if names:
            local = names.get(self)
            if local is not None:
                return local
        return self.render(names)

    def render(self, names: Mapping[Source, str] | None) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name()


@dataclass(frozen=True)
class _FrameSlot(Source):
    """A slot of the frame read by the name ``var`` the user wrote. Each kind declares, as its
    class keywords, the table letter of its report name (``L['x']``) and the code reading it
    (a format of the source: ``a{0.index}``)."""

    var: str
    letter: ClassVar[str]
    code: ClassVar[str]

    def __init_subclass__(cls, letter: str = "", code: str = "", **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.letter, cls.code = letter, code

    def name(self) -> str:
        return f"{self.letter}[{self.var!r}]"

    def short(self) -> str:
        return self.var

    def render(self, names: Mapping[Source, str] | None) -> str:
        return self.code.format(self)


@dataclass(frozen=True)
class LocalSource(_FrameSlot, letter="L", code="a{0.index}"):
    """The frame argument ``var`` (position ``index`` in the frame's argument tuple)."""

    index: int


@dataclass(frozen=True)
class GlobalSource(_FrameSlot, letter="G", code="G[{0.var!r}]"):
    """A name in the captured function's module globals."""


@dataclass(frozen=True)
class ClosureSource(_FrameSlot, letter="C", code="CELL{0.index}.cell_contents"):
    """The contents of the captured function's closure cell ``index`` (free variable ``var``)."""

    index: int


@dataclass(frozen=True)
class ClosureCellSource(_FrameSlot, letter="C", code="CELL{0.index}"):
    """The captured function's closure cell ``index`` itself: what a cell of another function
    read from outside is guarded to be (``ALIAS``), or not to be (``DISTINCT``)."""

    index: int

    def name(self) -> str:
        return f"cell {super().name()}"

    def short(self) -> str:
        return f"the cell of {self.var}"


@dataclass(frozen=True)
class ClassSource(Source):
    """The class of the object at ``via``, which that object's type guard fixes. One source
    per class (``key``: its id while the capture runs; ``via`` takes no part in equality): what
    a lookup on the class found is guarded once for all its objects (three layers of one class:
    one ``__call__``). ``held``: the class as its type guard holds it (a class made in a
    function by a weak reference: a source must not keep it alive either). The guard function
    reads it as the class itself where that is the class (``GuardSet``), else as ``type(via)``."""

    key: int
    via: Source = field(compare=False)
    held: object = field(compare=False)

    def name(self) -> str:
        return f"type({self.via.name()})"

    def short(self) -> str:
        return f"type({self.via.short()})"

    def render(self, names: Mapping[Source, str] | None) -> str:
        return f"type({self.via.expr(names)})"


@dataclass(frozen=True)
class SuffixSource(Source):
    """A value read off ``base`` by a constant suffix (``.attr``, ``[key]``), written the same in
    every form of the source."""

    base: Source

    def suffix(self) -> str:
        raise NotImplementedError

    def name(self) -> str:
        return self.base.name() + self.suffix()

    def short(self) -> str:
        return self.base.short() + self.suffix()

    def render(self, names: Mapping[Source, str] | None) -> str:
        return self.base.expr(names) + self.suffix()


@dataclass(frozen=True)
class AttrSource(SuffixSource):
    """``base.attr``."""

    attr: str

    def suffix(self) -> str:
        return f".{self.attr}"


@dataclass(frozen=True)
class ItemSource(SuffixSource):
    """``base[key]`` for a constant key (int or str)."""

    key: object

    def suffix(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class RemainingSource(Source):
    """The items a list/tuple/range iterator has left, read without advancing it."""

    base: Source

    def name(self) -> str:
        return f"remaining({self.base.name()})"

    def short(self) -> str:
        return f"remaining items of {self.base.short()}"

    def render(self, names: Mapping[Source, str] | None) -> str:
        return f"REMAINING({self.base.expr(names)})"


@dataclass(frozen=True)
class SourceTuple(Source):
    """Several sources read together (a graph's inputs in placeholder order, for its symbolic
    size guards; the input arrays that own their memory, for the aliasing guard of writes)."""

    inputs: tuple[Source, ...]

    def name(self) -> str:
        return f"({', '.join(s.name() for s in self.inputs)})"

    def short(self) -> str:
        if len(self.inputs) > 4:
            return f"{', '.join(s.short() for s in self.inputs[:3])}, ... ({len(self.inputs)})"
        return ", ".join(s.short() for s in self.inputs)

    def render(self, names: Mapping[Source, str] | None) -> str:
        return "(" + "".join(f"{s.expr(names)}, " for s in self.inputs) + ")"


def remaining_items(iterator) -> tuple:
    """What ``iterator`` would still yield (list, tuple and range iterators), without consuming."""
    reduced = iterator.__reduce__()
    seq = reduced[1][0] if reduced[1] else ()
    position = reduced[2] if len(reduced) > 2 else None
    # the iterator reads its sequence's own storage: a subclass's __getitem__ or __iter__ is
    # not called (nor may it be: it is user code), so the builtin base slices it
    base = next((b for b in (tuple, list, str, bytes, range) if isinstance(seq, b)), None)
    if base is None:
        return tuple(seq) if position is None else tuple(seq[position:])
    return tuple(base.__getitem__(seq, slice(position or 0, None)))


@dataclass(frozen=True)
class ModuleSource(Source):
    """``sys.modules[module]``: what an ``import`` statement inside the function finds."""

    module: str

    def name(self) -> str:
        return f"sys.modules[{self.module!r}]"

    def short(self) -> str:
        return self.module

    def render(self, names: Mapping[Source, str] | None) -> str:
        return f"MODULES[{self.module!r}]"
