"""The symbols of one capture (``SymbolTable``), and whether recorded facts hold for sizes.

Capture makes one ``SymbolTable`` per frame: each dynamic input dimension becomes a new symbol
with its hint and the source it is read from (``x.shape[0]``). ``evaluate``/``failing`` check
facts (``symbolic.Fact``) against concrete sizes: the slow, interpreted form of the generated
guard check (``shape_guards``), for tests and explanations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from npdynamo.ops.symbolic import Fact, Symbol, SymInt, _atom_expr


def evaluate(facts: Iterable[Fact], bindings: Mapping[str, int]) -> bool:
    """Whether every fact holds for the concrete symbol sizes ``bindings`` (the guard check)."""
    return all(f.holds(bindings) for f in facts)


def failing(facts: Iterable[Fact], bindings: Mapping[str, int]) -> list[Fact]:
    """The facts that do not hold for ``bindings`` (for guard-failure reasons)."""
    return [f for f in facts if not f.holds(bindings)]


class SymbolTable:
    """Creates the symbols of one capture: ``s0``, ``s1``, ... with their hints and sources."""

    def __init__(self) -> None:
        self.symbols: dict[str, Symbol] = {}
        self.sources: dict[str, str] = {}

    def new(self, hint: int, source: str | None = None, lower: int = 2) -> SymInt:
        """A new symbol; ``lower`` 1: a count that may be 1 (a trip count, not a size)."""
        name = f"s{len(self.symbols)}"
        sym = Symbol(name, hint)
        sym.lower = lower
        self.symbols[name] = sym
        self.sources[name] = source or name
        return _atom_expr(sym)

    def hints(self) -> dict[str, int]:
        return {name: s.hint for name, s in self.symbols.items()}

    def guard_facts(self) -> list[Fact]:
        """``s >= 2`` (``>= 1`` for a trip count) for every symbol: what the symbols assume."""
        return [Fact(_atom_expr(s), ">=", s.lower) for s in self.symbols.values()]
