"""Compact guards over large containers: one check per container instead of one per item.

Part of the guards stage, between the guards a capture recorded and the generated guard function
(``guard.GuardSet``). When at least ``COMPACT_MIN_ITEMS`` items of one container carry the same
facts (a dict of 2,000 arrays of one dtype and shape), their guards become one loop over the items
and one line of description. Many looked-up keys of one dict become one subset and one
disjointness check; pairwise "distinct objects" guards (every two arrays written in place) become
one set of identities. The facts checked stay exactly the per-item facts.

Groups run after every type, identity, constant, length and key guard, so the containers they
index are known to be what the capture saw (no user ``__getitem__`` runs in a guard).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from npdynamo.capture.guards.kinds import KINDS, GuardKind, SameFunction, Seen
from npdynamo.capture.guards.sources import AttrSource, ItemSource, Source, SuffixSource
from npdynamo.capture.pysource import Namespace

#: From this many items with identical guards on, a container's item guards become one loop.
COMPACT_MIN_ITEMS = 8


def compact_layout(ordered: list) -> list:
    """``ordered`` guards (cheapest kinds first) with those over large containers grouped."""
    ordered = _without_implied_keys(ordered)
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


@dataclass(frozen=True)
class _ItemVar(SuffixSource):
    """The loop variable standing for each item of the compacted container ``base``: named
    ``base[*]``, read as the loop's ``v``."""

    def suffix(self) -> str:
        return "[*]"

    def render(self, names) -> str:
        return "v"


@dataclass
class ItemGroup:
    """Items ``keys`` of ``container`` all carry the guards of ``profile`` (on ``_ItemVar``)."""

    container: Source
    keys: list
    profile: tuple  # (source relative to the item, kind, expected) per guard, in check order
    members: list  # the guards this group stands for

    def _facts(self) -> list[tuple[Source, GuardKind, object]]:
        var = _ItemVar(self.container)
        return [(_rebase(rel, var), kind, expected) for rel, kind, expected in self.profile]

    def check_lines(self, ns: Namespace) -> list[str]:
        getter = ns.bind(operator.itemgetter(*self.keys), "ITEMS")
        facts = [KINDS[kind].check(src.expr(), exp, ns) for src, kind, exp in self._facts()]
        return [
            f"for v in {getter}({self.container.expr()}):",
            f"    if not ({' and '.join(facts)}):",
            "        return False",
        ]

    def describe(self) -> str:
        facts = " and ".join(KINDS[k].describe(src.short(), e) for src, k, e in self._facts())
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


def _without_implied_keys(ordered: list) -> list:
    """A dict's key list, when guarded, already says which keys it has."""
    listed = {g.source for g in ordered if g.kind is GuardKind.DICT_KEYS}
    return [g for g in ordered if not (g.kind is GuardKind.HAS_KEY and g.source in listed)]


def _key_sets(ordered: list) -> tuple[list, list[KeySet]]:
    """Many looked-up keys of one dict: one subset and one disjointness check."""
    per_source: dict[Source, list] = {}
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


def _distinct_group(guards: list) -> DistinctGroup | None:
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


def _item_groups(ordered: list) -> list[ItemGroup]:
    """Groups of at least ``COMPACT_MIN_ITEMS`` items of one container with identical guards."""
    per_item: dict[ItemSource, list] = {}
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
    if isinstance(expected, Seen):
        return ("id", expected.id)
    if isinstance(expected, SameFunction):
        # items that are functions of the same globals share one check: the group's checks
        # the first one's identity, then the type and globals, which every other item passes
        return ("function", id(expected.globals))
    if isinstance(expected, (list, tuple)):
        return (type(expected), tuple(_hashable(e) for e in expected))
    if type(expected) in _BY_VALUE or isinstance(expected, (type, np.dtype, np.generic)):
        return (type(expected), expected)
    return ("id", id(expected))


_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))
