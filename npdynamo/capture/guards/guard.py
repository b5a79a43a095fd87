"""Guards: the facts a captured graph relies on, checked by one generated function per entry.

The translator records a ``Guard`` for every fact it used (an argument's type, an array's dtype and
shape, a constant's value, a global's identity, a list's length, a dict's keys). ``GuardSet``
compiles them into ONE Python function, cheapest checks first, and, when a call misses, re-checks
them one by one to name the failing one: ``x.shape[0]: expected 32, got 64 (train.py:12)``.
"""

from __future__ import annotations

import enum
import weakref
from dataclasses import dataclass, field

import numpy as np

from npdynamo.capture.guards.sources import Source
from npdynamo.capture.pysource import Namespace, literal, make_function


class GuardKind(enum.IntEnum):
    """Guard kinds, in the order their checks run (cheap identity/type checks first)."""

    TYPE = 0
    ID = 1
    CONSTANT = 2
    LENGTH = 3
    DICT_KEYS = 4
    DTYPE = 5
    SHAPE = 6
    ALIAS = 7  # the same object as another source (an argument passed twice)
    DISTINCT = 8  # not the same object as another source
    NO_OVERLAP = 9  # a written array shares no memory with another input array


@dataclass(eq=False)
class Guard:
    """One checked fact: ``kind`` of ``source`` must equal ``expected``; ``where`` is the user's
    (filename, lineno) of the instruction that first relied on it."""

    source: Source
    kind: GuardKind
    expected: object
    where: tuple[str, int] | None = None

    def key(self) -> tuple:
        relation = self.expected if self.kind >= GuardKind.ALIAS else None
        return (self.source, self.kind, relation)

    def describe(self) -> str:
        """Readable text of what is checked, for ``explain`` and the ``guards`` log."""
        name = self.source.short()
        exp = self.expected
        if self.kind is GuardKind.TYPE:
            return f"type({name}) is {exp.__qualname__}"
        if self.kind is GuardKind.ID:
            return f"{name} is {_obj_text(exp)}"
        if self.kind is GuardKind.CONSTANT:
            return f"{name} == {exp!r}"
        if self.kind is GuardKind.LENGTH:
            return f"len({name}) == {exp}"
        if self.kind is GuardKind.DICT_KEYS:
            return f"list({name}) == {list(exp)!r}"
        if self.kind is GuardKind.DTYPE:
            return f"{name}.dtype == {exp}"
        if self.kind is GuardKind.ALIAS:
            return f"{name} is {exp.short()}"
        if self.kind is GuardKind.NO_OVERLAP:
            return f"{name} shares no memory with {exp.short()}"
        if self.kind is GuardKind.DISTINCT:
            return f"{name} is not {exp.short()}"
        return f"{name}.shape == {exp}"


def _obj_text(obj: object) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"<{type(obj).__name__} {name}>" if name else f"<{type(obj).__name__}>"


def _check_expr(guard: Guard, ns: Namespace) -> str:
    """The Python expression that is true when ``guard`` holds."""
    e = guard.source.expr()
    exp = guard.expected
    kind = guard.kind
    if kind is GuardKind.TYPE:
        return f"type({e}) is {ns.bind(exp, 'T')}"
    if kind is GuardKind.ID:
        try:
            ref = weakref.ref(exp)  # never keep user objects alive through a guard
            return f"{e} is {ns.bind(ref, 'R')}()"
        except TypeError:
            return f"{e} is {ns.bind(exp, 'O')}"
    if kind is GuardKind.CONSTANT:
        if exp is None or type(exp) is bool:
            return f"{e} is {exp!r}"
        text = literal(exp)
        if type(exp) is float and text is None:
            if exp != exp:
                return f"(type({e}) is float and {e} != {e})"
            text = ns.bind(exp, "K")
        elif text is None:
            text = ns.bind(exp, "K")
        return f"(type({e}) is {ns.bind(type(exp), 'T')} and {e} == {text})"
    if kind is GuardKind.LENGTH:
        return f"len({e}) == {exp}"
    if kind is GuardKind.DICT_KEYS:
        return f"list({e}) == {ns.bind(list(exp), 'KEYS')}"
    if kind is GuardKind.ALIAS:
        return f"{e} is {exp.expr()}"
    if kind is GuardKind.NO_OVERLAP:
        return f"not {ns.bind(np.may_share_memory, 'may_share_memory')}({e}, {exp.expr()})"
    if kind is GuardKind.DISTINCT:
        return f"{e} is not {exp.expr()}"
    if kind is GuardKind.DTYPE:
        dt = ns.bind(exp, "DT")
        # identity first: NumPy hands out canonical dtype singletons, so `==` rarely runs
        return f"({e}.dtype is {dt} or {e}.dtype == {dt})"
    return f"{e}.shape == {literal(tuple(exp))}"


def frame_params(arg_count: int, cell_count: int | None) -> tuple[str, str]:
    """Parameters of a generated per-entry function, and the line unpacking the cells."""
    params = [f"a{i}" for i in range(arg_count)]
    if cell_count is None:
        return ", ".join(params), ""
    unpack = "".join(f"CELL{i}, " for i in range(cell_count))
    return ", ".join(["C", *params]), (f"{unpack}= C" if cell_count else "")


def _value_text(value: object) -> str:
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, type):
        return value.__qualname__
    return repr(value)


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
        checks = [_check_expr(g, ns) for g in self.ordered()] or ["True"]
        body = " and\n            ".join(checks)
        unpack = f"        {unpack}\n" if unpack else ""
        # A failing type check can make a later attribute read raise: that is a miss too.
        self.source = (
            f"def check({params}):\n    try:\n{unpack}        return ({body})\n"
            "    except Exception:\n        return False\n"
        )
        self.check = make_function(self.source, "check", ns, "guards")

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
        exp = guard.expected
        kind = guard.kind
        if kind is GuardKind.TYPE:
            return (
                f"type({name}): expected {exp.__qualname__}, got {type(actual).__qualname__}{where}"
            )
        if kind is GuardKind.SHAPE:
            shape = getattr(actual, "shape", None)
            if shape is not None and len(shape) != len(exp):
                return f"{name}.ndim: expected {len(exp)}, got {len(shape)}{where}"
            if shape is not None:
                for i, (e, a) in enumerate(zip(exp, shape)):
                    if e != a:
                        return f"{name}.shape[{i}]: expected {e}, got {a}{where}"
        if kind is GuardKind.DTYPE:
            return f"{name}.dtype: expected {exp}, got {getattr(actual, 'dtype', '?')}{where}"
        if kind is GuardKind.LENGTH:
            return f"len({name}): expected {exp}, got {len(actual)}{where}"
        if kind is GuardKind.DICT_KEYS:
            return f"{name} keys: expected {list(exp)!r}, got {list(actual)!r}{where}"
        if kind is GuardKind.ALIAS:
            return f"{name}: expected the same object as {exp.short()}, got another{where}"
        if kind is GuardKind.NO_OVERLAP:
            return f"{name}: now shares memory with {exp.short()}, which it did not{where}"
        if kind is GuardKind.DISTINCT:
            return f"{name}: expected another object than {exp.short()}, got the same{where}"
        if kind is GuardKind.ID:
            return (
                f"{name}: expected the object seen at capture ({_obj_text(exp)}), "
                f"got {_obj_text(actual)}{where}"
            )
        if isinstance(actual, np.ndarray):  # ``x.base``: x was an owning array, now a view
            owner = name.removesuffix(".base")
            return f"{owner}: is now a view of another array; it owned its memory{where}"
        return f"{name}: expected {_value_text(exp)}, got {_value_text(actual)}{where}"

    def describe(self) -> list[str]:
        return [g.describe() for g in self.ordered()]
