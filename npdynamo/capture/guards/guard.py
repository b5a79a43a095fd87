"""Guards: the facts a captured graph relies on, checked by one generated function per entry.

The translator records a ``Guard`` for every fact it used (an argument's type, an array's dtype and
shape, a constant's value, a global's identity, a list's length, a dict's keys). ``GuardSet``
compiles them into ONE Python function, cheapest checks first, and, when a call misses, re-checks
them one by one to name the failing one: ``x.shape[0]: expected 32, got 64 (train.py:12)``.

Large containers stay compact: when at least ``COMPACT_MIN_ITEMS`` items of one container carry
the same facts (a dict of 2,000 arrays of one dtype and shape), those guards become one loop over
the items in the generated function and one line in the description, instead of one per item.
The facts checked are the same; a miss is still named item by item.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from npdynamo.capture.guards.kinds import KINDS, GuardKind
from npdynamo.capture.guards.sources import AttrSource, ItemSource, Source
from npdynamo.capture.pysource import Namespace, make_function

#: From this many items with identical guards on, a container's item guards become one loop.
COMPACT_MIN_ITEMS = 8


@dataclass(eq=False)
class Guard:
    """One checked fact: ``kind`` of ``source`` must equal ``expected``; ``where`` is the user's
    (filename, lineno) of the instruction that first relied on it."""

    source: Source
    kind: GuardKind
    expected: object
    where: tuple[str, int] | None = None

    def key(self) -> tuple:
        keyed = self.kind >= GuardKind.ALIAS or self.kind is GuardKind.HAS_KEY
        relation = self.expected if keyed else None
        return (self.source, self.kind, relation)

    def describe(self) -> str:
        """Readable text of what is checked, for ``explain`` and the ``guards`` log."""
        return KINDS[self.kind].describe(self.source.short(), self.expected)


def _check_expr(guard: Guard, ns: Namespace) -> str:
    """The Python expression that is true when ``guard`` holds."""
    return KINDS[guard.kind].check(guard.source.expr(), guard.expected, ns)


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

    def ordered(self) -> list[Guard]:
        return sorted(self.guards, key=lambda g: g.kind)

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

        for item in self.layout():
            if isinstance(item, (DistinctGroup, KeySet)):
                pending.append(item.check_expr(ns))
            elif isinstance(item, ItemGroup):
                if pending:
                    flush(final=False)
                getter = ns.bind(operator.itemgetter(*item.keys), "ITEMS")
                conjunction = " and ".join(_check_expr(g, ns) for g in item.loop_guards())
                lines += [
                    f"        for v in {getter}({item.container.expr()}):",
                    f"            if not ({conjunction}):",
                    "                return False",
                ]
            else:
                pending.append(_check_expr(item, ns))
        flush(final=True)
        # A failing type check can make a later attribute read raise: that is a miss too.
        lines += ["    except Exception:", "        return False", ""]
        self.source = "\n".join(lines)
        self.check = make_function(self.source, "check", ns, "guards")

    def layout(self) -> list[Guard | ItemGroup]:
        """The guards in checking order, item guards of large containers grouped.

        Groups run after every type, identity, constant, length and key guard, so the
        container they index is known to be what the capture saw (no user ``__getitem__``)."""
        ordered = _without_implied_keys(self.ordered())
        ordered, key_sets = _key_sets(ordered)
        groups = _item_groups(ordered)
        grouped = {id(g) for group in groups for g in group.members}
        plain = [g for g in ordered if id(g) not in grouped]
        head = [g for g in plain if g.kind <= GuardKind.DICT_KEYS] + key_sets
        tail = [g for g in plain if g.kind > GuardKind.DICT_KEYS]
        distinct = _distinct_group(tail)
        if distinct is not None:
            tail = [g for g in tail if g.kind is not GuardKind.DISTINCT] + [distinct]
        return [*head, *groups, *tail]

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
            expr = _check_expr(guard, ns)
            scope.update(ns.values)
            try:
                ok = eval(expr, scope)  # noqa: S307 (our own generated expression)
            except Exception:
                ok = False
            if not ok:
                return self._reason(guard, scope)
        return "no guard failed"

    def _reason(self, guard: Guard, scope: dict) -> str:
        where = f" ({guard.where[0].rsplit('/', 1)[-1]}:{guard.where[1]})" if guard.where else ""
        name = guard.source.short()
        try:
            actual = eval(guard.source.expr(), scope)  # noqa: S307
        except Exception as exc:
            return f"{name}: could not be read ({type(exc).__name__}: {exc}){where}"
        return KINDS[guard.kind].miss(name, guard.expected, actual) + where

    def describe(self) -> list[str]:
        return [item.describe() for item in self.layout()]


@dataclass(frozen=True)
class _ItemVar(Source):
    """The loop variable standing for each item of a compacted container."""

    container: Source

    def name(self) -> str:
        return f"{self.container.name()}[*]"

    def short(self) -> str:
        return f"{self.container.short()}[*]"

    def expr(self) -> str:
        return "v"


@dataclass
class ItemGroup:
    """Items ``keys`` of ``container`` all carry the guards of ``profile`` (on ``_ItemVar``)."""

    container: Source
    keys: list
    profile: tuple  # (source relative to the item, kind, expected) per guard, in check order
    members: list[Guard]

    def loop_guards(self) -> list[Guard]:
        var = _ItemVar(self.container)
        return [Guard(_rebase(rel, var), kind, expected) for rel, kind, expected in self.profile]

    def describe(self) -> str:
        facts = " and ".join(g.describe() for g in self.loop_guards())
        return f"{facts}, for each of {len(self.keys)} items of {self.container.short()}"


@dataclass
class KeySet:
    """The dict ``source`` has every key of ``present`` and none of ``absent``."""

    source: Source
    present: frozenset
    absent: frozenset

    def check_expr(self, ns: Namespace) -> str:
        keys = f"{self.source.expr()}.keys()"
        parts = []
        if self.present:
            parts.append(f"{keys} >= {ns.bind(self.present, 'KEYSET')}")
        if self.absent:
            parts.append(f"{keys}.isdisjoint({ns.bind(self.absent, 'KEYSET')})")
        return " and ".join(parts)

    def describe(self) -> str:
        name, parts = self.source.short(), []
        if self.present:
            parts.append(f"{name} has the {len(self.present)} keys {_few(self.present)}")
        if self.absent:
            parts.append(f"{name} has none of {_few(self.absent)}")
        return " and ".join(parts)


def _few(keys: frozenset) -> str:
    shown = sorted(keys, key=repr)
    text = ", ".join(repr(k) for k in shown[:4])
    return text + (f", ... ({len(shown)} in all)" if len(shown) > 4 else "")


def _without_implied_keys(ordered: list[Guard]) -> list[Guard]:
    """A dict's key list, when guarded, already says which keys it has."""
    listed = {g.source for g in ordered if g.kind is GuardKind.DICT_KEYS}
    return [g for g in ordered if not (g.kind is GuardKind.HAS_KEY and g.source in listed)]


def _key_sets(ordered: list[Guard]) -> tuple[list[Guard], list[KeySet]]:
    """Many looked-up keys of one dict: one subset and one disjointness check."""
    per_source: dict[Source, list[Guard]] = {}
    for guard in ordered:
        if guard.kind is GuardKind.HAS_KEY:
            per_source.setdefault(guard.source, []).append(guard)
    sets, merged = [], set()
    for source, guards in per_source.items():
        if len(guards) >= COMPACT_MIN_ITEMS:
            present = frozenset(g.expected[0] for g in guards if g.expected[1])
            absent = frozenset(g.expected[0] for g in guards if not g.expected[1])
            sets.append(KeySet(source, present, absent))
            merged.update(id(g) for g in guards)
    return [g for g in ordered if id(g) not in merged], sets


@dataclass
class DistinctGroup:
    """Every two of ``sources`` are different objects (arrays written in place, read together)."""

    sources: list[Source]

    def _parts(self, render_items) -> list[str]:
        by_container: dict[Source, list] = {}
        for source in self.sources:
            if isinstance(source, ItemSource):
                by_container.setdefault(source.base, []).append(source.key)
        parts, covered = [], set()
        for container, keys in by_container.items():
            if len(keys) >= COMPACT_MIN_ITEMS:
                parts.append(render_items(container, keys))
                covered.update(ItemSource(container, k) for k in keys)
        return parts + [s for s in self.sources if s not in covered]

    def check_expr(self, ns: Namespace) -> str:
        def items(container: Source, keys: list) -> str:
            return f"*{ns.bind(operator.itemgetter(*keys), 'ITEMS')}({container.expr()})"

        parts = [p if isinstance(p, str) else p.expr() for p in self._parts(items)]
        return f"len(set(map(id, ({', '.join(parts)}, )))) == {len(self.sources)}"

    def describe(self) -> str:
        def items(container: Source, keys: list) -> str:
            return f"{len(keys)} items of {container.short()}"

        parts = [p if isinstance(p, str) else p.short() for p in self._parts(items)]
        return f"{', '.join(parts)}: {len(self.sources)} distinct objects"


def _distinct_group(guards: list[Guard]) -> DistinctGroup | None:
    """The DISTINCT guards as one group when they say that every two of their sources differ
    (the pairs grow with the square of the number of arrays written in place)."""
    pairs = {frozenset((g.source, g.expected)) for g in guards if g.kind is GuardKind.DISTINCT}
    sources = list(dict.fromkeys(s for pair in pairs for s in sorted(pair, key=str)))
    n = len(sources)
    if n < 4 or len(pairs) != n * (n - 1) // 2:
        return None
    return DistinctGroup(sources)


def _split_item(source: Source) -> tuple[ItemSource, tuple[str, ...]] | None:
    """``B[k].a.b`` -> (``B[k]``, ('a', 'b')); None when no item access is at the bottom."""
    attrs: list[str] = []
    while isinstance(source, AttrSource):
        attrs.append(source.attr)
        source = source.base
    if not isinstance(source, ItemSource):
        return None
    return source, tuple(reversed(attrs))


def _rebase(attrs: tuple[str, ...], base: Source) -> Source:
    for attr in attrs:
        base = AttrSource(base, attr)
    return base


def _item_groups(ordered: list[Guard]) -> list[ItemGroup]:
    """Groups of at least ``COMPACT_MIN_ITEMS`` items of one container with identical guards."""
    per_item: dict[ItemSource, list[Guard]] = {}
    for guard in ordered:
        split = _split_item(guard.source) if guard.kind < GuardKind.ALIAS else None
        if split is not None:  # relations between two sources stay one guard each
            per_item.setdefault(split[0], []).append(guard)
    by_profile: dict[tuple, ItemGroup] = {}
    for item, guards in per_item.items():
        try:
            profile = tuple(
                (_split_item(g.source)[1], g.kind, _hashable(g.expected)) for g in guards
            )
            key = (item.base, profile)
            hash(key)
        except TypeError:
            continue
        group = by_profile.get(key)
        if group is None:
            profile_guards = tuple((_split_item(g.source)[1], g.kind, g.expected) for g in guards)
            group = by_profile[key] = ItemGroup(item.base, [], profile_guards, [])
        group.keys.append(item.key)
        group.members.extend(guards)
    return [g for g in by_profile.values() if len(g.keys) >= COMPACT_MIN_ITEMS]


def _hashable(expected: object) -> object:
    """A key telling expected values apart exactly (``1 == 1.0 == True`` must not merge); other
    objects (identity guards) by identity, so no user ``__eq__`` runs."""
    if isinstance(expected, (list, tuple)):
        return (type(expected), tuple(_hashable(e) for e in expected))
    if type(expected) in _BY_VALUE or isinstance(expected, (type, np.dtype, np.generic)):
        return (type(expected), expected)
    return ("id", id(expected))


_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))
