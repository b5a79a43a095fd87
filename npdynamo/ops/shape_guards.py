"""Guards on symbolic sizes, as data: the checks under which one size-generic graph is valid.

A graph captured with symbolic sizes is valid for the inputs whose sizes satisfy (1) the
symbols' own assumption, ``s >= 2``, (2) the *facts* the op rules relied on
(``ops/symbolic.py``: ``s0 == s1`` for a broadcast, ``s0 % 2 == 0`` for a reshape with -1, ...),
and (3) the structure of each input: its number of dimensions, its static dimensions, and the
same symbol read at two places being one size. ``shape_guards`` turns that into a minimal list
of readable expressions over the inputs (``x.shape[0] == y.shape[0]``, ``x.shape[0] >= 2``)
and one generated Python function that checks them all on every call (no interpretation of
expressions at run time: one function call, a few tuple reads and integer comparisons).

Why 0 and 1 stay specialised (no symbol for them): a size of 1 broadcasts, squeezes and reduces
differently from every other size, and a size of 0 makes an array empty, where reductions
without an identity raise and ``argmax`` fails. A symbol standing for ">= 2" lets every rule
answer "is it 1?" and "is it 0?" without a guard, so one graph serves every size >= 2 with the
same semantics, as in TorchDynamo. An input dimension of size 0 or 1 is a static dimension.

Minimal: equalities between two symbols (``s0 == s1``) pick one representative (the symbol
bound first) and every other fact is restated over representatives, so duplicates collapse;
facts implied by ``s >= 2`` (``s >= 1``, ``s != 0``, ``s != 1``) are dropped, and a stronger
lower bound replaces ``s >= 2``.

Scalar inputs (``ScalarMeta``): the check is the type (``int``/``float``/``complex``), and for
an int, the int64 range, so that where NumPy converts it to an array its dtype is int64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from npdynamo.generated import evaluate, run
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic import Fact, Symbol, SymInt, free_symbols, rename_symbols
from npdynamo.ops.symbolic_code import python_source, symbol_name

_INT64 = (-(2**63), 2**63)


@dataclass
class Guard:
    """One check: its readable text and the Python condition the evaluator runs."""

    text: str
    code: str


@dataclass
class ShapeGuards:
    """The guards of one graph's symbolic inputs; call ``check(*inputs)`` on every call.

    ``inputs`` are the graph's input values in placeholder order. Inputs without symbolic
    dimensions and that are not dynamic scalars are not checked here (capture guards them as
    static inputs). ``check_shapes`` takes one shape tuple per input instead (the value itself
    for a scalar input, anything for an unchecked one).
    """

    names: list[str]
    structure: list[Guard] = field(default_factory=list)  # ndim, static sizes, scalar types
    relations: list[Guard] = field(default_factory=list)  # over the symbols' values
    symbols: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # (input, dim)
    check: Callable[..., bool] = field(default=lambda *a: True, repr=False)
    check_shapes: Callable[..., bool] = field(default=lambda *a: True, repr=False)
    source: str = field(default="", repr=False)
    _prelude: str = field(default="", repr=False)

    @property
    def guards(self) -> list[Guard]:
        return self.structure + self.relations

    @property
    def exprs(self) -> list[str]:
        """The guards as text, for ``explain`` and logs."""
        return [g.text for g in self.guards]

    def failing(self, *inputs: Any) -> list[str]:
        """The guards ``inputs`` violate (empty when ``check`` passes): for recompile reasons.

        Slow (it interprets each guard); only for explaining a failed ``check``."""
        env: dict[str, Any] = {f"_a{i}": v for i, v in enumerate(inputs)}
        env.update({f"_sh{i}": getattr(v, "shape", None) for i, v in enumerate(inputs)})
        bad = [g.text for g in self.structure if not evaluate(g.code, env)]
        if bad:
            return bad  # the symbols cannot be read from these shapes
        run(self._prelude, env, filename="<npdynamo-shape-guards>", lines=False)
        return [g.text for g in self.relations if not evaluate(g.code, env)]

    def __str__(self) -> str:
        return "\n".join(self.exprs)


def _var(sym: str) -> str:
    return f"_{sym}"


def shape_guards(inputs: Sequence[Any], facts: Iterable[Fact],
                 names: Sequence[str] | None = None,
                 scalar_sizes: Mapping[int, SymInt] | None = None) -> ShapeGuards:
    """The guards of a graph whose placeholders have the metas ``inputs`` (``ArrayMeta`` with
    symbolic dims, ``ScalarMeta``, or anything else, which is skipped), given the ``facts``
    recorded while its shapes were computed. ``names`` are the inputs' sources for printing
    (``x``, ``self.w``); default ``in0``, ``in1``, ... ``scalar_sizes``: input index -> the
    symbol an int input's value is (a loop's trip count, ``ops.loop_index``).

    Every symbolic dimension of an input must be a plain symbol (capture makes one per dynamic
    input dimension); a symbol appearing at several places is one size."""
    names = list(names) if names is not None else [f"in{i}" for i in range(len(inputs))]
    out = ShapeGuards(names)
    prelude: list[str] = []
    exprs: dict[str, SymInt] = {}
    same_place: list[Guard] = []
    arrays: list[int] = []  # inputs whose shape the guards read
    for i, meta in enumerate(inputs):
        if isinstance(meta, ScalarMeta):
            cond = f"type(_a{i}) is {meta.type.__name__}"
            if meta.type is int:
                cond += f" and {_INT64[0]} <= _a{i} < {_INT64[1]}"
            out.structure.append(Guard(f"type({names[i]}) is {meta.type.__name__}", cond))
            sym = symbol_name((scalar_sizes or {}).get(i))
            if sym is not None:
                out.symbols[sym] = (i, None)
                exprs[sym] = scalar_sizes[i]  # type: ignore[index]
                prelude.append(f"{_var(sym)} = _a{i}")
            continue
        if not isinstance(meta, ArrayMeta) or not any(isinstance(d, SymInt) for d in meta.shape):
            continue
        sh = f"_sh{i}"
        arrays.append(i)
        conds = [f"len({sh}) == {meta.ndim}"]
        texts = [f"{names[i]}.ndim == {meta.ndim}"]
        for d, size in enumerate(meta.shape):
            where = f"{names[i]}.shape[{d}]"
            if type(size) is int:
                conds.append(f"{sh}[{d}] == {size}")
                texts.append(f"{where} == {size}")
                continue
            sym = symbol_name(size)
            if sym is None:
                raise ValueError(f"input {names[i]}: dimension {d} is {size}, not a symbol")
            if sym not in out.symbols:
                out.symbols[sym] = (i, d)
                exprs[sym] = size
                prelude.append(f"{_var(sym)} = {sh}[{d}]")
            else:
                same_place.append(Guard(f"{where} == {_source(out, sym)}",
                                        f"{sh}[{d}] == {_var(sym)}"))
        out.structure.append(Guard(" and ".join(texts), " and ".join(conds)))
    out.relations = same_place + _relations(out, list(facts), exprs)
    _compile(out, prelude, arrays)
    return out


def _relations(out: ShapeGuards, facts: list[Fact], exprs: dict[str, SymInt]) -> list[Guard]:
    """Symbol equalities, lower bounds and the other facts, restated over representatives."""
    order = list(out.symbols)
    rep: dict[str, str] = {}

    def find(s: str) -> str:
        while rep.get(s, s) != s:
            s = rep[s]
        return s

    for f in facts:
        pair = _symbol_equality(f)
        if pair is not None:
            a, b = sorted((find(pair[0]), find(pair[1])), key=order.index)
            if a != b:
                rep[b] = a
    equal = [Guard(f"{_source(out, s)} == {_source(out, find(s))}",
                   f"{_var(s)} == {_var(find(s))}") for s in order if find(s) != s]
    mapping = {s: exprs[find(s)] for s in order if find(s) != s}
    lower = {s: _assumed(exprs[s]) for s in order if find(s) == s}
    seen: set[tuple] = set()
    rest: list[Guard] = []
    for f in facts:
        if _symbol_equality(f) is not None:
            continue
        expr = rename_symbols(f.expr, mapping)
        if type(expr) is int:
            continue  # constant after unification: it held at the hints, so it holds always
        if f.rel != ">=" and expr.terms[0][1] < 0:
            fact = Fact(-expr, f.rel, -f.value)  # type: ignore[arg-type]
        else:
            fact = Fact(expr, f.rel, f.value)
        sym = symbol_name(fact.expr)
        if sym is not None and fact.rel == ">=":
            lower[sym] = max(lower[sym], fact.value)
            continue
        if sym is not None and fact.rel == "!=" and fact.value < _assumed(exprs[sym]):
            continue  # implied by what the symbol assumes (>= 2, or >= 1 for a trip count)
        if fact.key not in seen:
            seen.add(fact.key)
            rest.append(_fact_guard(fact, out))
    bounds = [Guard(f"{_source(out, s)} >= {k}", f"{_var(s)} >= {k}") for s, k in lower.items()]
    return equal + bounds + rest


def _assumed(expr: SymInt) -> int:
    """What a symbol assumes of itself: >= 2 (a size), >= 1 (a trip count)."""
    return expr.terms[0][0][0].lower


def _symbol_equality(f: Fact) -> tuple[str, str] | None:
    """``(a, b)`` when ``f`` is ``a - b == 0`` for two symbols."""
    if f.rel != "==" or f.value != 0 or len(f.expr.terms) != 2:
        return None
    (m1, c1), (m2, c2) = f.expr.terms
    if {c1, c2} != {1, -1} or len(m1) != 1 or len(m2) != 1:
        return None
    if not (isinstance(m1[0], Symbol) and isinstance(m2[0], Symbol)):
        return None
    return m1[0].name, m2[0].name


def _source(guards: ShapeGuards, sym: str) -> str:
    i, d = guards.symbols[sym]
    return guards.names[i] if d is None else f"{guards.names[i]}.shape[{d}]"


def _fact_guard(fact: Fact, guards: ShapeGuards) -> Guard:
    names = {s: _source(guards, s) for s in free_symbols(fact.expr)}
    return Guard(fact.render(names), f"{python_source(fact.expr, _var)} {fact.rel} {fact.value}")


def _compile(guards: ShapeGuards, prelude: list[str], arrays: list[int]) -> None:
    """One generated function per guard set: structure first (the symbols are read from the
    shapes it checked), then every relation in one boolean expression."""
    params = ", ".join(f"_a{i}" for i in range(len(guards.names)))
    body = [f"    if not ({g.code}):\n        return False" for g in guards.structure]
    body += [f"    {line}" for line in prelude]
    body.append(f"    return {' and '.join(f'({g.code})' for g in guards.relations) or 'True'}")
    text = "\n".join(body)
    read = "".join(f"    _sh{i} = _a{i}.shape\n" for i in arrays)
    alias = "".join(f"    _sh{i} = _a{i}\n" for i in arrays)
    src_values = f"def check({params}):\n{read}{text}\n"
    src_shapes = f"def check_shapes({params}):\n{alias}{text}\n"
    env = run(src_values + src_shapes, {}, filename="<npdynamo-shape-guards>", lines=False)
    guards.check, guards.check_shapes = env["check"], env["check_shapes"]
    guards.source = src_values
    guards._prelude = "\n".join(prelude)
