"""Symbolic sizes: array dimensions that stand for "any size >= 2", and the facts rules rely on.

A ``SymInt`` is an integer polynomial over *atoms*: symbols (``s0``, ``s1``, ...) and the few
non-polynomial forms shape rules need (``a // b``, ``a % b``, ``max(a, b)``). Arithmetic builds
canonical expressions (``s0*s1 == s1*s0`` holds structurally); an expression that folds to a
constant is a plain ``int``. Every expression carries a *hint*: its value for the sizes seen at
capture. Plain ints never enter this module's code paths, so a rule given only ints costs what
it always did.

Symbols are >= 2. A symbol's hint is never 0 or 1, as in TorchDynamo: a size of 1 broadcasts
(``(1, 3) + (5, 3)`` is legal, ``(2, 3) + (5, 3)`` is not), squeezes and reduces differently,
and a size of 0 makes an array empty (reductions without identity raise, ``argmax`` raises).
Keeping 0 and 1 specialised lets rules answer ``d != 1`` and ``d != 0`` for a symbol without a
guard, so one graph serves every size >= 2 with the same semantics.

Decisions. A rule compares sizes with ordinary Python operators (``==``, ``<``, ``bool(d %
k)``). When the answer follows from the expressions alone (``s0 + 1 > s0``, ``s0 != 1``) it is
given without a record. Otherwise the answer implied by the hints is returned and *recorded* as
a ``Fact`` in the active ``FactRecorder``: the result is only valid for sizes where the fact
holds. With no recorder active such a comparison raises ``SymbolicDecision`` (an
``UnsupportedArguments``: capture then specialises). Nothing is assumed silently. ``SymInt``
has no ``__index__``/``__int__``: ``range(s0)`` or ``np.zeros(s0)`` is a TypeError, never a
quiet specialisation.

How the stages use this:
- Symbol creation (capture): for an input dimension that is dynamic and >= 2,
  ``symbol_table.SymbolTable.new(size, source="x.shape[0]")``; the placeholder's ``ArrayMeta``
  carries it. Sizes 0 and 1 stay ints (specialised). A dynamic Python scalar input is a
  ``ScalarMeta``.
- Rules: ``op.infer`` runs inside one ``FactRecorder`` per frame (``with recorder:``);
  ``fx.passes.propagate_shapes(graph, metas, facts=recorder)`` does the same and returns facts.
- Facts -> guards: ``ops.shape_guards.shape_guards(metas, facts, names)`` gives the minimal
  readable guards and one generated check per graph (``ShapeGuards.check(*inputs)``).
- Code: ``fx.sizes`` binds each symbol from a placeholder's shape; generated code computes
  every size expression per call (``ops.symbolic_code.python_source``). Backends compare
  shapes structurally (``same_shape``) and take size-dependent decisions per call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Union

from npdynamo.ops.unsupported import UnsupportedArguments

Dim = Union[int, "SymInt"]


class SymbolicDecision(UnsupportedArguments):
    """A rule needed a fact about symbolic sizes with no recorder active to keep it."""


# -- atoms ----------------------------------------------------------------------------------


class _Atom:
    """A factor of a monomial: a symbol or an opaque compound (``//``, ``%``, ``max``)."""

    __slots__ = ("key", "hint", "lower")
    key: tuple
    hint: int
    lower: int | None  # a lower bound, None when unknown

    def value(self, bindings: Mapping[str, int]) -> int:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError

    def __lt__(self, other: _Atom) -> bool:  # monomials keep their atoms sorted
        return self.key < other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Atom) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


class Symbol(_Atom):
    __slots__ = ("name",)

    def __init__(self, name: str, hint: int) -> None:
        if type(hint) is not int or hint < 2:
            raise ValueError(f"a size symbol stands for a size >= 2 (0 and 1 are specialised), "
                             f"not {hint!r}")
        self.name, self.hint, self.lower = name, hint, 2
        self.key = (0, name)

    def value(self, bindings: Mapping[str, int]) -> int:
        return bindings[self.name]

    def text(self) -> str:
        return self.name


class _Compound(_Atom):
    __slots__ = ("op", "a", "b")
    _OPS = {"//": lambda x, y: x // y, "%": lambda x, y: x % y, "max": max}

    def __init__(self, op: str, a: Dim, b: Dim, lower: int | None) -> None:
        self.op, self.a, self.b = op, a, b
        self.hint = self._OPS[op](hint_of(a), hint_of(b))
        self.lower = lower
        self.key = (1, op, _key(a), _key(b))

    def value(self, bindings: Mapping[str, int]) -> int:
        return self._OPS[self.op](substitute(self.a, bindings), substitute(self.b, bindings))

    def text(self) -> str:
        if self.op == "max":
            return f"max({self.a}, {self.b})"
        return f"{_paren(self.a)}{self.op}{_paren(self.b)}"


def _paren(x: Dim) -> str:
    return f"({x})" if isinstance(x, SymInt) and (len(x.terms) > 1 or _coeff_shown(x)) else str(x)


def _coeff_shown(x: SymInt) -> bool:
    ((mono, coeff),) = x.terms
    return coeff != 1 or len(mono) > 1


def _key(x: Dim) -> tuple:
    return (x,) if type(x) is int else x.terms


# -- expressions ----------------------------------------------------------------------------

_Mono = tuple  # sorted tuple of atoms; () is the constant monomial


def _make(terms: dict) -> Dim:
    """A canonical expression from {monomial: coefficient}; a constant is returned as an int."""
    terms = {m: c for m, c in terms.items() if c}
    if not terms:
        return 0
    if len(terms) == 1 and () in terms:
        return terms[()]
    out = SymInt.__new__(SymInt)
    out.terms = tuple(sorted(terms.items(), key=lambda t: (-len(t[0]), [a.key for a in t[0]])))
    hint = 0
    for mono, c in out.terms:
        for atom in mono:
            c *= atom.hint
        hint += c
    out.hint = hint
    return out


def _terms(x: Dim) -> dict:
    return {(): x} if type(x) is int else dict(x.terms)


def _atom_expr(atom: _Atom) -> SymInt:
    return _make({(atom,): 1})  # type: ignore[return-value]


def _lower(x: Dim) -> int | None:
    """A lower bound of ``x``, or None; sizes are >= 0, so positive sums of them are easy."""
    if type(x) is int:
        return x
    total = 0
    for mono, c in x.terms:
        if not mono:
            total += c
            continue
        if c < 0:
            return None
        for atom in mono:
            if atom.lower is None or atom.lower < 0:
                return None
            c *= atom.lower
        total += c
    return total


def _comparison(rel: str) -> Callable[[SymInt, object], bool]:
    """The dunder for comparison ``rel``: ``compare`` decides it for two sizes; any other
    operand gets NotImplemented, so Python tries its reflected method."""

    def method(self: SymInt, other: object) -> bool:
        return compare(self, rel, other) if _is_dim(other) else NotImplemented  # type: ignore

    return method


class SymInt:
    """A symbolic size: an integer polynomial over symbols and compound atoms, with a hint."""

    __slots__ = ("terms", "hint")
    terms: tuple
    hint: int

    # arithmetic builds expressions
    def __add__(self, other: object) -> Dim:
        if not _is_dim(other):
            return NotImplemented
        terms = _terms(self)
        for m, c in _terms(other).items():  # type: ignore[arg-type]
            terms[m] = terms.get(m, 0) + c
        return _make(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return _make({m: -c for m, c in self.terms})

    def __sub__(self, other: object) -> Dim:
        return self + -other if _is_dim(other) else NotImplemented  # type: ignore[operator]

    def __rsub__(self, other: object) -> Dim:
        return -self + other if _is_dim(other) else NotImplemented

    def __mul__(self, other: object) -> Dim:
        if not _is_dim(other):
            return NotImplemented
        if type(other) is int:
            return _make({m: c * other for m, c in self.terms})
        terms: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:  # type: ignore[union-attr]
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return _make(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> Dim:
        return floordiv(self, other) if _is_dim(other) else NotImplemented  # type: ignore[arg-type]

    def __rfloordiv__(self, other: object) -> Dim:
        return floordiv(other, self) if _is_dim(other) else NotImplemented  # type: ignore[arg-type]

    def __mod__(self, other: object) -> Dim:
        return mod(self, other) if _is_dim(other) else NotImplemented  # type: ignore[arg-type]

    def __rmod__(self, other: object) -> Dim:
        return mod(other, self) if _is_dim(other) else NotImplemented  # type: ignore[arg-type]

    # comparisons decide (statically or by hint, recording a fact)
    __eq__ = _comparison("==")
    __ne__ = _comparison("!=")
    __lt__ = _comparison("<")
    __le__ = _comparison("<=")
    __gt__ = _comparison(">")
    __ge__ = _comparison(">=")

    def __bool__(self) -> bool:
        return compare(self, "!=", 0)

    def __hash__(self) -> int:
        # Structural: equal expressions hash alike. (A hint-decided ``s0 == 5`` does not.)
        return hash(self.terms)

    def __repr__(self) -> str:
        return _format(self.terms)

    def __reduce__(self):
        raise TypeError("a symbolic size cannot be pickled")


def _is_dim(x: object) -> bool:
    return type(x) is int or isinstance(x, SymInt)


def _format(terms: Iterable) -> str:
    out = ""
    for mono, c in terms:
        factors = [a.text() if isinstance(a, Symbol) or len(mono) == 1 and abs(c) == 1
                   else f"({a.text()})" for a in mono]
        mag = abs(c)
        body = "*".join(([str(mag)] if mag != 1 or not mono else []) + factors)
        if not out:
            out = f"-{body}" if c < 0 else body
        else:
            out += f" - {body}" if c < 0 else f" + {body}"
    return out or "0"


def hint_of(x: Dim) -> int:
    """The value of ``x`` for the sizes seen at capture."""
    return x if type(x) is int else x.hint


def is_symbolic(x: object) -> bool:
    return isinstance(x, SymInt)


def floordiv(a: Dim, b: Dim) -> Dim:
    """``a // b``: exact parts are divided out, the rest becomes a ``//`` atom."""
    if type(a) is int and type(b) is int:
        return a // b
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    if type(b) is int:
        # floor((b*P + Q) / b) == P + floor(Q / b) for integer P: split each coefficient.
        whole: dict = {}
        rest: dict = {}
        for m, c in _terms(a).items():
            q, r = divmod(c, b)
            whole[m], rest[m] = q, r
        left = _make(rest)
        if type(left) is int:
            return _make(whole) + left // b
        lower = _lower(left)
        atom = _Compound("//", left, b, None if lower is None or b < 0 else lower // b)
        return _make(whole) + _atom_expr(atom)
    quotient = _exact_quotient(a, b)
    if quotient is not None:
        return quotient
    la, lb = _lower(a), _lower(b)
    nonneg = la is not None and la >= 0 and lb is not None and lb > 0
    return _atom_expr(_Compound("//", a, b, 0 if nonneg else None))


def _exact_quotient(a: Dim, b: SymInt) -> Dim | None:
    """``a / b`` when ``b`` is one monomial dividing every term of ``a`` exactly."""
    if len(b.terms) != 1:
        return None
    ((bm, bc),) = b.terms
    out: dict = {}
    for m, c in _terms(a).items():
        rest = list(m)
        for atom in bm:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % bc:
            return None
        out[tuple(rest)] = c // bc
    return _make(out)


def mod(a: Dim, b: Dim) -> Dim:
    """``a % b``: zero when the division is exact, else a ``%`` atom of the inexact part."""
    if type(a) is int and type(b) is int:
        return a % b
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    if type(b) is int:
        rest = _make({m: c % b for m, c in _terms(a).items()})
        if type(rest) is int:
            return rest % b
        return _atom_expr(_Compound("%", rest, b, 0 if b > 0 else None))
    if _exact_quotient(a, b) is not None:
        return 0
    lb = _lower(b)
    return _atom_expr(_Compound("%", a, b, 0 if lb is not None and lb > 0 else None))


def sym_max(a: Dim, b: Dim) -> Dim:
    """``max(a, b)`` without a recorded fact: decided when the expressions allow, else an atom."""
    if type(a) is int and type(b) is int:
        return max(a, b)
    decided = _decide(a - b, ">=")
    if decided is not None:
        return a if decided else b
    if _decide(b - a, ">=") is True:  # (``max(0, u)`` of a size u >= 0)
        return b
    la, lb = _lower(a), _lower(b)
    lower = None if la is None and lb is None else max(x for x in (la, lb) if x is not None)
    return _atom_expr(_Compound("max", a, b, lower))


def sym_product(dims: Iterable[Dim]) -> Dim:
    n: Dim = 1
    for d in dims:
        n *= d  # type: ignore[assignment]
    return n


def substitute(x: Dim, bindings: Mapping[str, int]) -> int:
    """The value of ``x`` for concrete symbol sizes ``bindings`` (name -> int)."""
    if type(x) is int:
        return x
    total = 0
    for mono, c in x.terms:
        for atom in mono:
            c *= atom.value(bindings)
        total += c
    return total


def rename_symbols(x: Dim, mapping: Mapping[str, Dim]) -> Dim:
    """``x`` with the symbols named in ``mapping`` replaced by expressions (others kept)."""
    if type(x) is int:
        return x
    total: Dim = 0
    for mono, c in x.terms:
        for atom in mono:
            if isinstance(atom, Symbol):
                c = c * mapping.get(atom.name, _atom_expr(atom))
            else:
                a, b = rename_symbols(atom.a, mapping), rename_symbols(atom.b, mapping)
                c = c * (floordiv(a, b) if atom.op == "//" else mod(a, b) if atom.op == "%"
                         else sym_max(a, b))
        total = total + c
    return total


def free_symbols(x: Dim, kind: type = Symbol) -> set[str]:
    """The names of the symbols of ``kind`` (a subclass of ``Symbol``: all of them by default)
    in size ``x``."""
    if type(x) is int:
        return set()
    names: set[str] = set()
    for mono, _ in x.terms:
        for atom in mono:
            if isinstance(atom, kind):
                names.add(atom.name)
            elif not isinstance(atom, Symbol):
                names |= (free_symbols(atom.a, kind)  # type: ignore[attr-defined]
                          | free_symbols(atom.b, kind))  # type: ignore[attr-defined]
    return names


# -- facts ----------------------------------------------------------------------------------

_FLIP = {"==": "!=", "!=": "=="}


class Fact:
    """``expr rel value`` with ``rel`` one of ``==``, ``!=``, ``>=``; true at the hints.

    Canonical: ``expr`` has no constant term and, for ``==``/``!=``, a positive leading
    coefficient; so ``s1 == s0``, ``s0 - s1 == 0`` and ``s0 == s1`` are one fact.
    """

    __slots__ = ("expr", "rel", "value")

    def __init__(self, expr: SymInt, rel: str, value: int) -> None:
        self.expr, self.rel, self.value = expr, rel, value

    @property
    def key(self) -> tuple:
        return (self.expr.terms, self.rel, self.value)

    def holds(self, bindings: Mapping[str, int]) -> bool:
        v = substitute(self.expr, bindings)
        if self.rel == "==":
            return v == self.value
        if self.rel == "!=":
            return v != self.value
        return v >= self.value

    def render(self, names: Mapping[str, str] | None = None) -> str:
        """Readable form: positive terms left, negative ones right (``s0 == s1``)."""
        pos = [(m, c) for m, c in self.expr.terms if c > 0]
        neg = [(m, -c) for m, c in self.expr.terms if c < 0]
        left = _format(pos)
        right = _format(neg) if neg else ""
        if self.value or not neg:
            value = str(abs(self.value))
            right = (f"{right} + {value}" if self.value > 0 else f"{right} - {value}") if neg \
                else str(self.value)
        text = f"{left} {self.rel} {right}"
        for sym, src in (names or {}).items():
            text = _replace_name(text, sym, src)
        return text

    def __repr__(self) -> str:
        return self.render()


def _replace_name(text: str, sym: str, src: str) -> str:
    out, i = [], 0
    while i < len(text):
        j = text.find(sym, i)
        if j < 0:
            break
        end = j + len(sym)
        if (j == 0 or not text[j - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            out.append(text[i:j] + src)
        else:
            out.append(text[i:end])
        i = end
    out.append(text[i:])
    return "".join(out)


def _normalize(diff: SymInt, rel: str) -> Fact:
    """The fact ``diff rel 0`` in canonical form (``rel`` in ``==``, ``!=``, ``>=``)."""
    terms = dict(diff.terms)
    const = terms.pop((), 0)
    expr = _make(terms)
    if rel != ">=" and expr.terms[0][1] < 0:  # type: ignore[union-attr]
        expr, const = -expr, -const  # type: ignore[assignment]
    return Fact(expr, rel, -const)  # type: ignore[arg-type]


def _decide(diff: Dim, rel: str) -> bool | None:
    """``diff rel 0`` when the expression settles it (rel in ==, !=, >=), else None."""
    if type(diff) is int:
        return diff == 0 if rel == "==" else diff != 0 if rel == "!=" else diff >= 0
    low = _lower(diff)
    if low is not None and low > 0:
        return rel != "=="
    if low is not None and low >= 0 and rel == ">=":
        return True
    neg_low = _lower(-diff)
    if neg_low is not None and neg_low > 0:
        return rel == "!="
    return None


def compare(a: Dim, rel: str, b: Dim) -> bool:
    """``a rel b`` for sizes; a hint-decided answer is recorded as a fact (see module doc)."""
    if rel in ("<=", "<"):
        a, b, rel = b, a, (">=" if rel == "<=" else ">")
    diff = a - b
    if rel == ">":
        diff, rel = diff - 1, ">="
    decided = _decide(diff, rel)
    if decided is not None:
        return decided
    ranged = _ranged_atom(diff)  # a loop index: the answer must hold for every iteration
    if ranged is not None:
        return ranged.decide(diff, rel)  # type: ignore[attr-defined]
    result = (diff.hint == 0 if rel == "==" else diff.hint != 0 if rel == "!="  # type: ignore
              else diff.hint >= 0)  # type: ignore[union-attr]
    if result:
        fact = _normalize(diff, rel)  # type: ignore[arg-type]
    elif rel == ">=":
        fact = _normalize(-diff - 1, ">=")  # type: ignore[arg-type, operator]
    else:
        fact = _normalize(diff, _FLIP[rel])  # type: ignore[arg-type]
    _record(fact)
    return result


def _ranged_atom(x: Dim) -> _Atom | None:
    """A symbol in ``x`` that stands for every value of a range (``ops.loop_index``), or None."""
    for atom in (a for mono in _terms(x) for a in mono):
        found = atom if hasattr(atom, "decide") else isinstance(atom, _Compound) and (
            _ranged_atom(atom.a) or _ranged_atom(atom.b))
        if found:
            return found
    return None


# -- recording ------------------------------------------------------------------------------

_ACTIVE: list[FactRecorder] = []


def _record(fact: Fact) -> None:
    if not _ACTIVE:
        raise SymbolicDecision(
            f"a shape rule needs to know that {fact.render()}, and no guard can be recorded here"
        )
    _ACTIVE[-1].add(fact)


class FactRecorder:
    """Collects the facts rules rely on while it is active (``with recorder: op.infer(...)``).

    Facts are kept in first-seen order without duplicates; nothing is checked or applied here.
    """

    def __init__(self) -> None:
        self._facts: dict[tuple, Fact] = {}

    def add(self, fact: Fact) -> None:
        self._facts.setdefault(fact.key, fact)

    @property
    def facts(self) -> list[Fact]:
        return list(self._facts.values())

    def __enter__(self) -> FactRecorder:
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.remove(self)

    def __len__(self) -> int:
        return len(self._facts)
