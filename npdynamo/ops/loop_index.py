"""The index of a rolled loop as a size: ``A[i, :i]`` inside a ``fori_loop`` body.

A body is captured once and run for every ``i`` in ``[first, last]``, so a slice bounded by
``i`` has a shape that is an expression of ``i`` (``A[:i, i:]`` of an ``(n, n)`` array is
``(i, n - i)``). Such an index is an ``IndexSymbol``: a size symbol whose comparisons are not
decided by a hint and recorded as a guard (a guard is checked once per call, the index changes
every iteration) but answered only when the answer is the same for every value of the range.

Comparisons reach ``decide`` with ``diff rel 0`` (``symbolic.compare``). The rule: ``diff``
must be linear in the index with an integer coefficient (``i``, ``n - i - 1``; never ``i*i``
nor inside ``//``, ``%``, ``max``). A linear function of ``i`` takes its extremes at the
range's ends, so ``diff >= 0`` holds everywhere when it holds at ``first`` and at ``last``, and
fails everywhere when it fails at both; ``diff != 0`` holds everywhere when ``diff`` has one
strict sign at both ends. The ends are size expressions of the outer symbols (or ints), whose
comparisons may record ordinary guards. Any other case depends on the iteration and raises
``SymbolicDecision``: the capture refuses to roll the loop, which is then unrolled as before.
The index may be 0 or 1 (unlike a size symbol, which is >= 2): its lower bound is ``first``'s.
"""

from __future__ import annotations

from npdynamo.ops.symbolic import (
    Dim,
    Symbol,
    SymbolicDecision,
    SymInt,
    _atom_expr,
    _lower,
    _ranged_atom,
    compare,
    free_symbols,
    hint_of,
    rename_symbols,
)


class IndexSymbol(Symbol):
    """A loop index ranging over ``[first, last]`` (``last`` None: not known as a size)."""

    __slots__ = ("first", "last")

    def __init__(self, name: str, first: Dim, last: Dim | None) -> None:
        # no Symbol.__init__: the index may be 0 or 1, which a size symbol may not
        self.name, self.first, self.last = name, first, last
        self.hint = hint_of(first)
        self.lower = first if type(first) is int else _lower(first)
        self.key = (0, name)

    def decide(self, diff: SymInt, rel: str) -> bool:
        """``diff rel 0`` (rel in ``==``, ``!=``, ``>=``) when it is the same for every index."""
        if not self._linear(diff) or self.last is None:
            raise self._depends(diff, rel)
        ends = [rename_symbols(diff, {self.name: end}) for end in (self.first, self.last)]
        if rel == ">=":
            at = {compare(end, ">=", 0) for end in ends}
            if len(at) == 1:
                return at.pop()
        elif all(compare(end, ">", 0) for end in ends) or all(
                compare(end, "<", 0) for end in ends):
            return rel == "!="
        raise self._depends(diff, rel)

    def _linear(self, diff: SymInt) -> bool:
        for mono, c in diff.terms:
            if self in mono and (len(mono) != 1 or type(c) is not int):
                return False
            if any(not isinstance(a, Symbol) and self.name in free_symbols(_atom_expr(a))
                   for a in mono):
                return False  # inside //, % or max: not linear
        return True

    def _depends(self, diff: SymInt, rel: str) -> SymbolicDecision:
        return SymbolicDecision(
            f"whether {diff} {rel} 0 depends on the loop index {self.name} (it ranges over "
            f"[{self.first}, {'?' if self.last is None else self.last}])")


def index_symbol(name: str, first: Dim | None, last: Dim | None) -> SymInt | None:
    """The expression of a new loop index over ``[first, last]``; None when ``first`` is not
    known as a size (a graph input: then no slice may depend on the index)."""
    if first is None:
        return None
    return _atom_expr(IndexSymbol(name, first, last))


def mentions_index(x: object) -> bool:
    """Whether ``x`` is a size that changes with a loop index."""
    return isinstance(x, SymInt) and _ranged_atom(x) is not None


__all__ = ["IndexSymbol", "index_symbol", "mentions_index"]
