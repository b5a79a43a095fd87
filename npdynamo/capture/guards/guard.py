"""Guards: the facts a captured graph relies on, checked by one generated function per entry.

The translator records a ``Guard`` for every fact it used (an argument's type, an array's dtype and
shape, a constant's value, a global's identity, a list's length, a dict's keys). ``GuardSet``
compiles them into ONE Python function, cheapest checks first, and, when a call misses, re-checks
them one by one to name the failing one: ``x.shape[0]: expected 32, got 64 (train.py:12)``.

Guards over large containers are compacted first (``compact``); a miss is still named item by
item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from npdynamo.capture.guards.compact import ItemGroup, compact_layout
from npdynamo.capture.guards.kinds import KINDS, GuardKind, Seen, held, one_dim_shape, unwrap
from npdynamo.capture.guards.sources import (
    AttrSource,
    ClassSource,
    GlobalSource,
    ItemSource,
    Source,
    SourceTuple,
)
from npdynamo.capture.pysource import Namespace, make_function
from npdynamo.generated import evaluate

#: Kinds whose expected value is part of what a guard is (one per related source or key).
_RELATIONS = frozenset(
    {GuardKind.ALIAS, GuardKind.DISTINCT, GuardKind.NO_OVERLAP, GuardKind.HAS_KEY,
     GuardKind.NONEMPTY_RANGE}
)


@dataclass(eq=False)
class Guard:
    """One checked fact: ``kind`` of ``source`` must equal ``expected``; ``where`` is the user's
    (filename, lineno) of the instruction that first relied on it."""

    source: Source
    kind: GuardKind
    expected: object
    where: tuple[str, int] | None = None

    def __post_init__(self) -> None:
        self.expected = held(self.kind, self.expected)  # a user object is not owned (``Seen``)

    def key(self) -> tuple:
        keyed = self.kind in _RELATIONS
        relation = self.expected if keyed else None
        return (self.source, self.kind, relation)

    def describe(self) -> str:
        """Readable text of what is checked, for ``explain`` and the ``guards`` log."""
        return KINDS[self.kind].describe(self.source.short(), self.expected)

    def check_expr(self, ns: Namespace) -> str:
        """The Python expression that is true when this guard holds."""
        return KINDS[self.kind].check(self.source.expr(), self.expected, ns)


#: Kinds whose check reads its source exactly once, unconditionally, first among its checks.
_BINDING = frozenset({GuardKind.TYPE, GuardKind.ID})
#: ... and those that read it once, unconditionally, after a constant: a source they share
#: with later checks is read once into a local too (``'m' not in (S1 := a0.__dict__)``).
_READ_FIRST = _BINDING | {GuardKind.HAS_KEY, GuardKind.LENGTH}


def _read_again(layout: list) -> set[Source]:
    """Attribute and item sources that several plain guards read (themselves or under them):
    worth one local each, so a chain like ``a0.layers[0].w`` is walked once per call."""
    seen: set[Source] = set()
    again: set[Source] = set()
    for item in layout:
        if not isinstance(item, Guard):
            continue
        source = item.source
        while isinstance(source, (AttrSource, ItemSource, GlobalSource)):
            (again if source in seen else seen).add(source)
            source = getattr(source, "base", None)
    return again


def _bases(source: Source) -> list[Source]:
    """The sources ``source`` is read through, nearest first (``a0.w.shape``: ``a0.w``, ``a0``)."""
    bases = []
    while isinstance(source, (AttrSource, ItemSource)):
        source = source.base
        bases.append(source)
    return bases


def frame_params(arg_count: int, cell_count: int | None) -> tuple[str, str]:
    """Parameters of a generated per-entry function, and the line unpacking the cells."""
    params = [f"a{i}" for i in range(arg_count)]
    if cell_count is None:
        return ", ".join(params), ""
    unpack = "".join(f"CELL{i}, " for i in range(cell_count))
    return ", ".join(["C", *params]), (f"{unpack}= C" if cell_count else "")


@dataclass
class GuardSet:
    """All guards of one cache entry; ``check`` is the generated function."""

    guards: list[Guard] = field(default_factory=list)
    arg_count: int = 0
    namespace_base: dict = field(default_factory=dict)
    #: resume functions: the closure cells come first, as a tuple ``C`` unpacked into CELLi
    cell_count: int | None = None

    def __post_init__(self) -> None:
        self._index: dict[tuple, Guard] = {}
        self.check = None
        self.source = ""

    def add(self, guard: Guard) -> None:
        if guard.key() not in self._index:
            self._index[guard.key()] = guard
            self.guards.append(guard)

    def has(self, source: Source, kind: GuardKind) -> bool:
        """Whether a guard of ``kind`` (a fact about one source, not a relation) is on it."""
        return (source, kind, None) in self._index

    def expected(self, source: Source, kind: GuardKind) -> object | None:
        """What the guard of ``kind`` on ``source`` expects (None: no such guard)."""
        guard = self._index.get((source, kind, None))
        return None if guard is None else guard.expected

    def class_of(self, source: Source, obj: object) -> Source | None:
        """``ClassSource`` of ``obj`` (read at ``source``) where a type guard on ``source``
        fixes its class and that class is a plain one (``type`` its metaclass: its MRO starts
        with it and its ``__dict__`` is its own); else None."""
        klass = type(obj)
        if type(klass) is not type or unwrap(self.expected(source, GuardKind.TYPE)) is not klass:
            return None
        return ClassSource(id(klass), source, held(GuardKind.TYPE, klass))

    def ordered(self) -> list[Guard]:
        """The guards cheapest kinds first, except that the type, identity and function guards
        of what a guard reads its source through come before it (``G['STAGES'][0]``'s function
        guard after ``G['STAGES']``'s type): the container is then known before its items are
        read (no user ``__getitem__`` runs in a guard), and read once into a local."""
        by_kind = sorted(self.guards, key=lambda g: g.kind)
        binding: dict[Source, list[Guard]] = {}
        for guard in by_kind:
            if guard.kind in _BINDING or guard.kind is GuardKind.FUNCTION:
                binding.setdefault(guard.source, []).append(guard)
        order: dict[int, Guard] = {}

        def place(guard: Guard) -> None:
            if id(guard) in order:
                return
            order[id(guard)] = guard  # (first: a guard is never its own base's)
            for base in reversed(_bases(guard.source)):
                for first in binding.get(base, ()):
                    place(first)
            del order[id(guard)]
            order[id(guard)] = guard

        for guard in by_kind:
            place(guard)
        return list(order.values())

    def compile(self) -> None:
        """Generate the single guard function ``check(a0, a1, ...) -> bool``."""
        ns = Namespace(self.namespace_base)
        params, unpack = frame_params(self.arg_count, self.cell_count)
        lines = [f"def check({params}):", "    try:"]
        if unpack:
            lines.append(f"        {unpack}")
        pending: list[str] = []  # plain checks not yet emitted, joined by ``and``

        def flush(final: bool) -> None:
            body = " and\n            ".join(pending) or "True"
            lines.append(f"        return ({body})" if final else f"        if not ({body}):")
            if not final:
                lines.append("            return False")
            pending.clear()

        layout = self.layout()
        shared = _read_again(layout)
        names = self._classes(ns)  # sources held in locals (by an earlier check) or bound
        for item in layout:
            if isinstance(item, ItemGroup):  # a loop over the items, between plain checks
                if pending:
                    flush(final=False)
                lines += [f"        {line}" for line in item.check_lines(ns)]
            elif isinstance(item, Guard):
                e = item.source.expr(names)
                if item.kind in _READ_FIRST and item.source in shared and \
                        item.source not in names:
                    # the type or identity check reads the value first and unconditionally
                    # (``and`` stops at a failed check, and a miss returns at once): later
                    # checks of it and of what lies under it read the local
                    local = f"S{len(names)}"
                    e, names[item.source] = f"({local} := {e})", local
                rules = KINDS[item.kind]
                if rules.check_each is not None and isinstance(item.source, SourceTuple):
                    items = [s.expr(names) for s in item.source.inputs]
                    pending.append(rules.check_each(items, item.expected, ns))
                else:
                    pending.append(self._read_once(item, e, names, ns))
            else:
                pending.append(item.check_expr(ns))
        flush(final=True)
        # A failing type check can make a later attribute read raise: that is a miss too.
        lines += ["    except Exception:", "        return False", ""]
        self.source = "\n".join(lines)
        self.check = make_function(self.source, "check", ns, "guards")

    def _classes(self, ns: Namespace) -> dict[Source, str]:
        """Each class read as a ``ClassSource``, and its ``__dict__``, bound as a constant
        where the type guards hold that class as it is (not a class made in a function, held
        by a weak reference: ``Seen``): ``T3.__dict__`` is a view of the one dict the class has
        for its life."""
        names: dict[Source, str] = {}
        for guard in self.guards:
            source = (_bases(guard.source) or [guard.source])[-1]  # what it is read through first
            if isinstance(source, ClassSource) and source not in names and \
                    not isinstance(source.held, Seen):
                names[source] = ns.bind(source.held, "T")
                names[AttrSource(source, "__dict__")] = ns.bind(source.held.__dict__, "D")
        return names

    def _read_once(self, guard: Guard, e: str, names: dict[Source, str], ns: Namespace) -> str:
        """``guard``'s check, reading ``e`` once where the check reads it several times
        (``type(v) is float and v == 0.5`` of a closure cell's contents, each read a chain of
        attribute and item reads): the first read binds a local, which the rest of the check
        and the later checks of the same source read (the first read comes first in the
        check, and a failed check returns at once)."""
        check = KINDS[guard.kind].check
        if guard.kind is GuardKind.SHAPE and len(guard.expected) == 1 and \
                self.expected(guard.source, GuardKind.TYPE) is np.ndarray:
            check = one_dim_shape  # (cheaper than building the shape's tuple)
        if e.isidentifier():
            return check(e, guard.expected, ns)
        local = f"S{len(names)}"
        text = check(local, guard.expected, ns)
        reads = re.compile(rf"\b{local}\b")
        if len(reads.findall(text)) < 2:
            return check(e, guard.expected, ns)
        names[guard.source] = local
        return reads.sub(f"({local} := {e})", text, count=1)

    def layout(self) -> list:
        """The guards in checking order, those over large containers compacted (``compact``)."""
        return compact_layout(self.ordered())

    def miss_reason(self, frame_args: tuple) -> str:
        """The first guard that fails for these arguments, in words."""
        ns = Namespace(self.namespace_base)
        scope = dict(ns.values)
        if self.cell_count is not None:
            cells, frame_args = frame_args[0], frame_args[1:]
            scope.update({f"CELL{i}": c for i, c in enumerate(cells)})
        for i, arg in enumerate(frame_args):
            scope[f"a{i}"] = arg
        for guard in self.guards:  # discovery order: a container is checked before its items
            expr = guard.check_expr(ns)
            scope.update(ns.values)
            try:
                ok = evaluate(expr, scope)
            except Exception:
                ok = False
            if not ok:
                return self._reason(guard, scope)
        return "no guard failed"

    def _reason(self, guard: Guard, scope: dict) -> str:
        where = f" ({guard.where[0].rsplit('/', 1)[-1]}:{guard.where[1]})" if guard.where else ""
        name = guard.source.short()
        try:
            actual = evaluate(guard.source.expr(), scope)
        except Exception as exc:
            return f"{name}: could not be read ({type(exc).__name__}: {exc}){where}"
        return KINDS[guard.kind].miss(name, guard.expected, actual) + where

    def describe(self) -> list[str]:
        return [item.describe() for item in self.layout()]
