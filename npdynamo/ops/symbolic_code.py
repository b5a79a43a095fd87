"""Symbolic sizes as code and as structure: what the stages after the rules need of a ``SymInt``.

Generated code (the fx codegen, the numba program, shape guards) computes a symbolic size at run
time from the symbols' values: ``python_source`` renders an expression as a Python expression
over local names chosen by the caller. Backends compare shapes *structurally* (``same_dim``,
``same_shape``): two sizes are the same when their expressions are identical, never by asking
the hints, because a backend must not add facts the guards do not check. Different expressions
that happen to be equal at run time are treated as different, which only costs a fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from npdynamo.ops.symbolic import Dim, Symbol, SymInt, free_symbols, substitute


def same_dim(a: Dim, b: Dim) -> bool:
    """Whether two sizes are the same expression (ints by value); records no fact."""
    if type(a) is int or type(b) is int:
        return type(a) is type(b) and a == b
    return isinstance(a, SymInt) and isinstance(b, SymInt) and a.terms == b.terms


def same_shape(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    """``same_dim`` for every dimension of two shapes of the same length."""
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


def is_one(d: Dim) -> bool:
    """Whether ``d`` is the int 1 (a symbolic size never is: 1 stays specialised)."""
    return type(d) is int and d == 1


def symbol_name(d: Dim) -> str | None:
    """The name of ``d`` when it is exactly one symbol (``s0``), else None."""
    if isinstance(d, SymInt) and len(d.terms) == 1:
        ((mono, coeff),) = d.terms
        if coeff == 1 and len(mono) == 1 and isinstance(mono[0], Symbol):
            return mono[0].name
    return None


def has_symbols(a: Any) -> bool:
    """Whether a (nested tuple/list/dict/slice) argument holds a symbolic size."""
    if isinstance(a, SymInt):
        return True
    if isinstance(a, (tuple, list)):
        return any(has_symbols(x) for x in a)
    if isinstance(a, dict):
        return any(has_symbols(x) for x in a.values())
    if isinstance(a, slice):
        return has_symbols(a.start) or has_symbols(a.stop) or has_symbols(a.step)
    return False


def concretize(a: Any, bindings: Mapping[str, int]) -> Any:
    """``a`` with every symbolic size replaced by its value for ``bindings``."""
    if isinstance(a, SymInt):
        return substitute(a, bindings)
    kind = type(a)
    if kind is tuple:
        return tuple(concretize(x, bindings) for x in a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return kind(*(concretize(x, bindings) for x in a))
    if kind is list:
        return [concretize(x, bindings) for x in a]
    if kind is dict:
        return {k: concretize(v, bindings) for k, v in a.items()}
    if kind is slice:
        return slice(*(concretize(x, bindings) for x in (a.start, a.stop, a.step)))
    return a


def python_source(x: Dim, names: Mapping[str, str] | Callable[[str], str]) -> str:
    """A Python expression computing ``x`` with each symbol read from ``names[symbol]``.

    The result has the operators' Python meaning on ints (``//`` floors, ``%`` takes the
    divisor's sign, ``max`` is the builtin), which is what the expression stands for.
    """
    lookup = names if callable(names) else names.__getitem__
    if type(x) is int:
        return repr(x)
    parts = []
    for mono, coeff in x.terms:
        factors = [repr(coeff)] if coeff != 1 or not mono else []
        factors += [_atom_source(atom, lookup) for atom in mono]
        parts.append("*".join(factors))
    return "(" + " + ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _atom_source(atom: Any, lookup: Callable[[str], str]) -> str:
    if isinstance(atom, Symbol):
        return lookup(atom.name)
    a, b = python_source(atom.a, lookup), python_source(atom.b, lookup)
    if atom.op == "max":
        return f"max({a}, {b})"
    return f"({a} {atom.op} {b})"


def free_symbol_names(args: Iterable[Any]) -> set[str]:
    """The names of the symbols appearing anywhere in nested arguments."""
    found: set[str] = set()

    def walk(a: Any) -> None:
        if isinstance(a, SymInt):
            found.update(free_symbols(a))
        elif isinstance(a, (tuple, list)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
        elif isinstance(a, slice):
            walk(a.start), walk(a.stop), walk(a.step)

    for arg in args:
        walk(arg)
    return found
