"""Unbacked sizes: integers known only when the graph runs (``val[ptr[i]:ptr[i + 1]]``).

Inside a rolled loop body, a slice bound may be a number the graph computes (an element of an
array, a carried Python int). Its value differs per iteration and no capture-time value stands
for it, so it cannot be guarded; TorchDynamo calls such sizes *unbacked*. Each such bound is an
``UnbackedSymbol`` (``bound_symbol``), and the length of a slice with such a bound is another
(``slice_size``): one per (start, stop, step, axis length), so two slices with the same bounds
of axes of the same length have the same size (``val[a:b] @ x[col[a:b]]`` needs no check).

NumPy's slice semantics (negative bounds wrap, clamping to the axis, the step) are applied by
NumPy, or by numba, which follows Python's, when the graph runs: the symbol only stands for the
result. A comparison involving an unbacked symbol that the expressions alone do not settle
(``u - u == 0`` does; ``u == 3`` does not) raises ``SymbolicDecision``: there is no hint to
decide it by and no guard could hold it, so the capture breaks there instead (an op whose rule
needs the size, Python code reading it). A slice size is >= 0 (its lower bound); a bound has
none. Generated code never reads these symbols: an op argument that computes with one is
refused at capture (``mentions_unbacked``).
"""

from __future__ import annotations

import itertools
import os

from npdynamo.ops.symbolic import (
    Dim,
    Symbol,
    SymbolicDecision,
    SymInt,
    _atom_expr,
    _key,
    compare,
    free_symbols,
)

#: one name per symbol: names identify them (generated code binds sizes by name), also in a
#: compile worker that receives a graph holding this process's symbols and makes its own
_NAMES = itertools.count()
_SIZES: dict[tuple, SymInt] = {}  # (start, stop, step, n) keys -> the slice's size


class UnbackedSymbol(Symbol):
    """An int known only at run time: a slice bound (no lower bound) or a slice's size (>= 0)."""

    __slots__ = ("what", "of")

    def __init__(self, what: str, lower: int | None, of: tuple | None = None) -> None:
        # no Symbol.__init__: no hint (0 stands in; nothing decides by it, see ``decide``)
        self.name = f"u{next(_NAMES)}_{os.getpid()}"
        self.hint, self.lower, self.what = 0, lower, what
        self.key = (0, self.name)
        self.of = of  # a slice's size: ((start, stop, step) keys, the axis length)

    def decide(self, diff: SymInt, rel: str) -> bool:
        """Only ``u == v`` for the sizes of two slices with the same bounds of axes whose
        lengths are equal (a fact on ordinary sizes, recorded as a guard: ``val[a:b]`` and
        ``col[a:b]`` of two inputs of one length); anything else is unknown until run time."""
        pair = _same_slices(diff) if rel in ("==", "!=") else None
        if pair is not None and compare(pair[0], "==", pair[1]):
            return rel == "=="
        raise SymbolicDecision(
            f"whether {diff} {rel} 0 depends on {self.what} ({self.name}), known only when "
            "the graph runs")


def _same_slices(diff: SymInt) -> tuple[Dim, Dim] | None:
    """The two axis lengths when ``diff`` is ``u - v`` for the sizes of slices with the same
    bounds and step, else None."""
    if len(diff.terms) != 2:
        return None
    (m1, c1), (m2, c2) = diff.terms
    if len(m1) != 1 or len(m2) != 1 or {c1, c2} != {1, -1}:
        return None
    a, b = m1[0], m2[0]
    if not (isinstance(a, UnbackedSymbol) and isinstance(b, UnbackedSymbol) and a.of and b.of
            and a.of[0] == b.of[0]):
        return None
    return a.of[1], b.of[1]


def bound_symbol(what: str) -> SymInt:
    """A new unbacked int (``what`` names it in reasons)."""
    return _atom_expr(UnbackedSymbol(what, None))


def mentions_unbacked(x: object) -> bool:
    """Whether ``x`` (a size, or nested tuples/lists/slices/dicts of them) has an unbacked
    symbol in it."""
    if isinstance(x, SymInt):
        return any(_unbacked_atom(atom) for mono, _c in x.terms for atom in mono)
    if isinstance(x, (tuple, list)):
        return any(mentions_unbacked(v) for v in x)
    if isinstance(x, dict):
        return any(mentions_unbacked(v) for v in x.values())
    if isinstance(x, slice):
        return any(mentions_unbacked(v) for v in (x.start, x.stop, x.step))
    return False


def _unbacked_atom(atom: object) -> bool:
    if isinstance(atom, UnbackedSymbol):
        return True
    return not isinstance(atom, Symbol) and (
        mentions_unbacked(atom.a) or mentions_unbacked(atom.b))  # type: ignore[attr-defined]


def unbacked_names(x: Dim) -> set[str]:
    """The names of the unbacked symbols in size ``x``."""
    return free_symbols(x, UnbackedSymbol)


def slice_size(start: Dim | None, stop: Dim | None, step: int, n: Dim) -> SymInt:
    """The length of ``[start:stop:step]`` of an axis of length ``n`` where a bound (or ``n``)
    is unbacked: the same symbol for the same four, a new one otherwise."""
    key = tuple(None if v is None else _key(v) for v in (start, stop)) + (step, _key(n))
    size = _SIZES.get(key)
    if size is None:
        text = ":".join("" if v is None else str(v) for v in (start, stop))
        what = f"the length of the slice [{text}{'' if step == 1 else f':{step}'}] of {n}"
        size = _SIZES[key] = _atom_expr(UnbackedSymbol(what, 0, (key[:3], n)))
    return size


__all__ = ["UnbackedSymbol", "bound_symbol", "mentions_unbacked", "slice_size",
           "unbacked_names"]
