"""Guard kinds: for each, the generated check, the readable description and the miss reason.

One row per kind (``KINDS[kind]``), so adding a kind means adding one row. The kinds are ordered
by cost: the generated guard function runs cheap identity and type checks first.
"""

from __future__ import annotations

import enum
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from npdynamo.capture.pysource import Namespace, literal


class GuardKind(enum.IntEnum):
    """Guard kinds, in the order their checks run (cheap identity/type checks first)."""

    # (first: it reads a function's source before the guards of what lies under it do)
    FUNCTION = 0  # expected ``SameFunction``: the function seen, or one of the same globals
    TYPE = 1
    ID = 2
    CONSTANT = 3
    METHOD = 4  # a bound builtin method (new on every read): which C method, whatever its self
    LENGTH = 5
    HAS_KEY = 6  # expected (key, present): whether a dict has that key
    DICT_KEYS = 7
    DTYPE = 8
    SHAPE = 9
    ALIAS = 10  # the same object as another source (an argument passed twice)
    DISTINCT = 11  # not the same object as another source
    NO_OVERLAP = 12  # a written array shares no memory with another input array
    SIZES = 13  # symbolic sizes: the inputs' dims satisfy a graph's ``ShapeGuards``
    OWNERS = 14  # expected ``Owners``: arrays that own their memory, distinct, some writeable
    NONEMPTY_RANGE = 15  # expected ``NonEmptyRange``: the range of these bounds has an item
    WRITEABLE = 16  # arrays written in place (views) are still writeable (names expected)
    READ_ONLY = 17  # an array is read-only (a frame that writes it runs in Python)
    NOT_ID = 18  # not the object seen at capture (an ``is`` that was False against it)


@dataclass(frozen=True)
class NonEmptyRange:
    """``range(lower, upper)`` is not empty; a bound given as None is the next guarded value
    (the bounds of an in-graph loop that are graph inputs: its results are then always computed
    in an iteration, never its initial values, as the loop that the guard saw)."""

    lower: int | None
    upper: int | None
    text: str

    def holds(self, *values) -> bool:
        given = iter(values)
        lower = next(given) if self.lower is None else self.lower
        upper = next(given) if self.upper is None else self.upper
        return lower < upper


@dataclass(frozen=True)
class Owners:
    """The expected fact of an ``OWNERS`` guard: the arrays ``names`` each own their memory and
    are distinct objects (so no two can overlap), and those at ``written`` (written in place)
    are writeable. One call checks it all: a step updating many parameters pays one guard."""

    names: tuple[str, ...]
    written: tuple[int, ...] = ()

    def holds(self, *arrays) -> bool:
        for a in arrays:
            if a.base is not None:
                return False
        for i in self.written:
            if not arrays[i].flags.writeable:
                return False
        return len(set(map(id, arrays))) == len(arrays)

    def describe(self, name: str) -> str:
        text = f"{name}: {len(self.names)} distinct arrays, each owning its memory"
        return text + (f", {len(self.written)} of them writeable" if self.written else "")

    def miss(self, arrays: tuple) -> str:
        for i, (name, a) in enumerate(zip(self.names, arrays)):
            if getattr(a, "base", None) is not None:
                return f"{name}: is now a view of another array; it owned its memory"
            if i in self.written and not getattr(getattr(a, "flags", None), "writeable", 0):
                return f"{name}: is now read-only; it was writeable"
        seen: dict[int, str] = {}
        for name, a in zip(self.names, arrays):
            if id(a) in seen:
                return f"{name}: is now the same array as {seen[id(a)]}"
            seen[id(a)] = name
        return "the arrays written in place may now overlap"


#: Up to this many arrays, an ``OWNERS``/``WRITEABLE`` guard is written out inline: a call with
#: the arrays as arguments costs about as much as the checks (a training step's parameters).
INLINE_ARRAYS = 8


def _owners_inline(items: list[str], exp: Owners, ns: Namespace) -> str:
    if len(items) > INLINE_ARRAYS:
        return f"{ns.bind(exp.holds, 'OWN')}({', '.join(items)})"
    checks = [f"{e}.base is None" for e in items]
    checks += [f"{items[i]}.flags.writeable" for i in exp.written]
    checks.append(f"len({{{', '.join(f'id({e})' for e in items)}}}) == {len(items)}")
    return "(" + " and ".join(checks) + ")"


def _writeable_inline(items: list[str], exp: object, ns: Namespace) -> str:
    if len(items) > INLINE_ARRAYS:
        return f"{ns.bind(all_writeable, 'WRITEABLE')}({', '.join(items)})"
    return "(" + " and ".join(f"{e}.flags.writeable" for e in items) + ")"


def all_writeable(*arrays) -> bool:
    """Every array may be written (a read-only one makes the in-place write raise)."""
    for a in arrays:
        if not a.flags.writeable:
            return False
    return True


def _writeable_miss(names: tuple[str, ...], arrays: tuple) -> str:
    for name, a in zip(names, arrays):
        if not getattr(getattr(a, "flags", None), "writeable", False):
            return f"{name}: is now read-only; it was writeable"
    return "an array written in place is now read-only"


@dataclass(frozen=True)
class KindRules:
    """How one kind is checked (``e``: the source's expression), described and explained."""

    check: Callable[[str, object, Namespace], str]
    describe: Callable[[str, object], str]
    miss: Callable[[str, object, object], str]
    #: for a kind over several sources read together: the check from each one's expression
    check_each: Callable[[list[str], object, Namespace], str] | None = None


def _type_name(exp: object) -> str:
    return getattr(unwrap(exp), "__qualname__", repr(unwrap(exp)))


def obj_text(obj: object) -> str:
    obj = unwrap(obj)
    if isinstance(obj, enum.Enum):
        return repr(obj)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"<{type(obj).__name__} {name}>" if name else f"<{type(obj).__name__}>"


def value_text(value: object) -> str:
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, type):
        return value.__qualname__
    return safe_repr(value)


def safe_repr(value: object) -> str:
    """``repr(value)``, also for an int past ``sys.get_int_max_str_digits()``."""
    try:
        return repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"<{type(value).__name__} of {value.bit_length()} bits>"
        return f"<{type(value).__name__}>"


#: what ``Seen`` holds as it is (see there)
_HELD = (types.CodeType, types.ModuleType)


class Seen:
    """The object an identity guard (or a type guard on a class made inside a function) was
    captured against, held by a weak reference where it can be: the entry lives as long as its
    code, and holding the object would keep it alive past the user's last reference (a weak
    reference or a finaliser of it would see it never die). A dead reference matches nothing:
    no object can be the one seen any more (an id alone could be reused by a new object).

    Code objects and modules are held as they are: a code object holds only the constants
    compiled into it and a module lives in ``sys.modules``, so holding either frees nothing a
    user could see freed, and the check is then a plain ``is`` (no call of the reference on
    every warm call: a function's ``__code__`` and ``np`` are guarded on most calls)."""

    __slots__ = ("_ref", "_strong", "id", "__weakref__")

    def __init__(self, obj: object) -> None:
        self.id = id(obj)
        if isinstance(obj, _HELD):
            self._ref, self._strong = None, obj
            return
        try:
            self._ref, self._strong = weakref.ref(obj), None
        except TypeError:  # None, ints, builtins: nothing to free, held as they are
            self._ref, self._strong = None, obj

    def get(self) -> object:
        """The object, or ``DEAD`` once it was freed."""
        if self._ref is None:
            return self._strong
        obj = self._ref()
        return DEAD if obj is None else obj

    def check(self, e: str, ns: Namespace) -> str:
        """``e is <the object>``, false for every value once the object is dead."""
        if self._ref is None:
            return f"{e} is {ns.bind(self._strong, 'O')}"
        # a dead reference answers None: then no value is the object seen (None included)
        return f"{e} is {ns.bind(self._ref, 'R')}() is not None"


class _Dead:
    def __repr__(self) -> str:
        return "<an object freed since the capture>"


DEAD = _Dead()


def held(kind: GuardKind, expected: object) -> object:
    """What a guard of ``kind`` keeps of ``expected`` (``Seen`` where it must not own it)."""
    if kind in (GuardKind.ID, GuardKind.NOT_ID) or (
        kind is GuardKind.TYPE and "<locals>" in getattr(expected, "__qualname__", "")
    ):
        return expected if isinstance(expected, Seen) else Seen(expected)
    return expected


def unwrap(expected: object) -> object:
    return expected.get() if isinstance(expected, Seen) else expected


def _check_id(e: str, exp: object, ns: Namespace) -> str:
    if not isinstance(exp, Seen):
        exp = Seen(exp)
    return exp.check(e, ns)


def _check_type(e: str, exp: object, ns: Namespace) -> str:
    if isinstance(exp, Seen):
        return exp.check(f"type({e})", ns)
    return f"type({e}) is {ns.bind(exp, 'T')}"


def _check_constant(e: str, exp: object, ns: Namespace) -> str:
    if exp is None or type(exp) is bool:
        return f"{e} is {exp!r}"
    text = literal(exp)
    if type(exp) is float and text is None and exp != exp:
        return f"(type({e}) is float and {e} != {e})"
    if text is None:
        text = ns.bind(exp, "K")
    check = f"type({e}) is {ns.bind(type(exp), 'T')} and {e} == {text}"
    exact = _exact_repr(exp) if _equal_is_not_same(exp) else None
    if exact is not None:
        # equal values that are not the same value: their reprs tell them apart
        check += f" and repr({e}) == {ns.bind(exact, 'R')}"
    return f"({check})"


def _exact_repr(exp: object) -> str | None:
    try:
        return repr(exp)
    except ValueError:  # an int past sys.get_int_max_str_digits(): no float equals it anyway
        return None


def _equal_is_not_same(exp: object) -> bool:
    """Whether a value equal to ``exp`` (of its type) may still be a different value:
    ``range(0) == range(-10)``, ``0.0 == -0.0``, ``(1,) == (1.0,)``, ``slice(1) == slice(1.0)``."""
    if type(exp) is float:
        return exp == 0.0
    return type(exp) in (complex, range, slice, tuple) or isinstance(exp, np.generic)


def _miss_constant(name: str, exp: object, actual: object) -> str:
    if isinstance(actual, np.ndarray):  # ``x.base``: x was an owning array, now a view
        return f"{name.removesuffix('.base')}: is now a view of another array; it owned its memory"
    return f"{name}: expected {value_text(exp)}, got {value_text(actual)}"


def _miss_shape(name: str, exp: tuple, actual: object) -> str:
    shape = getattr(actual, "shape", None)
    if shape is not None and len(shape) != len(exp):
        return f"{name}.ndim: expected {len(exp)}, got {len(shape)}"
    for i, (e, a) in enumerate(zip(exp, shape or ())):
        if e != a:
            return f"{name}.shape[{i}]: expected {e}, got {a}"
    return f"{name}.shape: expected {exp}, got {shape}"


def one_dim_shape(e: str, exp: tuple, ns: Namespace) -> str:
    """The check of a one-dimensional ``SHAPE`` guard on what is exactly an ``np.ndarray``
    (its ``TYPE`` guard runs first): its rank and length, which NumPy reads without building
    the shape's tuple (``len`` of a 0-d array raises: a miss, as a failed check is)."""
    return f"({e}.ndim == 1 and len({e}) == {exp[0]})"


@dataclass(frozen=True, eq=False)
class SameFunction:
    """The expected fact of a ``FUNCTION`` guard on a function guarded by its parts
    (``outside_functions``): a Python function of these globals. The function seen at capture
    is such a function (its ``__globals__`` cannot be assigned), so the check tests that
    identity first and the type and globals only for another function (a closure made anew on
    each call); its ``__code__`` and defaults, which may be assigned, keep their own guards."""

    seen: Seen
    globals: dict

    @classmethod
    def of(cls, fn: types.FunctionType) -> SameFunction:
        return cls(Seen(fn), fn.__globals__)

    def check(self, e: str, ns: Namespace) -> str:
        other = (f"type({e}) is {ns.bind(types.FunctionType, 'T')} and "
                 f"{e}.__globals__ is {ns.bind(self.globals, 'O')}")
        return f"({self.seen.check(e, ns)} or ({other}))"

    def miss(self, name: str, actual: object) -> str:
        if type(actual) is not types.FunctionType:
            return f"type({name}): expected function, got {type(actual).__qualname__}"
        module = self.globals.get("__name__", "?")
        return f"{name}.__globals__: expected the globals of module {module}, got other ones"


def _check_method(e: str, descriptor: object, ns: Namespace) -> str:
    # Bound builtin methods compare equal when they bind the same C method to the same object:
    # binding the expected descriptor to the value's own ``__self__`` tells which method it is.
    d = ns.bind(descriptor, "MD")
    if isinstance(descriptor, types.ClassMethodDescriptorType):
        return f"{e} == {d}.__get__(None, {e}.__self__)"
    return f"{e} == {d}.__get__({e}.__self__)"


def _describe_method(name: str, descriptor: object) -> str:
    owner = getattr(descriptor, "__objclass__", None)
    owner_name = owner.__qualname__ if isinstance(owner, type) else "?"
    return f"{owner_name}.{descriptor.__name__}"


def _check_dtype(e: str, exp: object, ns: Namespace) -> str:
    dt = ns.bind(exp, "DT")
    # identity first: NumPy hands out canonical dtype singletons, so `==` rarely runs
    return f"({e}.dtype is {dt} or {e}.dtype == {dt})"


KINDS: dict[GuardKind, KindRules] = {
    GuardKind.TYPE: KindRules(
        _check_type,
        lambda name, exp: f"type({name}) is {_type_name(exp)}",
        lambda name, exp, actual: (
            f"type({name}): expected {_type_name(exp)}, got {type(actual).__qualname__}"
        ),
    ),
    GuardKind.FUNCTION: KindRules(
        lambda e, exp, ns: exp.check(e, ns),
        lambda name, exp: f"{name} is {obj_text(exp.seen)} or a function of its globals",
        lambda name, exp, actual: exp.miss(name, actual),
    ),
    GuardKind.ID: KindRules(
        _check_id,
        lambda name, exp: f"{name} is {obj_text(exp)}",
        lambda name, exp, actual: (
            f"{name}: expected the object seen at capture ({obj_text(exp)}), got {obj_text(actual)}"
        ),
    ),
    GuardKind.NOT_ID: KindRules(
        lambda e, exp, ns: f"not ({_check_id(e, exp, ns)})",
        lambda name, exp: f"{name} is not {obj_text(exp)}",
        lambda name, exp, actual: f"{name}: is now the object {obj_text(exp)}, which it was not",
    ),
    GuardKind.CONSTANT: KindRules(
        _check_constant, lambda name, exp: f"{name} == {safe_repr(exp)}", _miss_constant
    ),
    GuardKind.METHOD: KindRules(
        _check_method,
        lambda name, exp: f"{name} is a bound {_describe_method(name, exp)}",
        lambda name, exp, actual: (
            f"{name}: expected a bound {_describe_method(name, exp)}, got {obj_text(actual)}"
        ),
    ),
    GuardKind.LENGTH: KindRules(
        lambda e, exp, ns: f"len({e}) == {exp}",
        lambda name, exp: f"len({name}) == {exp}",
        lambda name, exp, actual: f"len({name}): expected {exp}, got {len(actual)}",
    ),
    GuardKind.HAS_KEY: KindRules(
        lambda e, exp, ns: f"{literal(exp[0])} {'in' if exp[1] else 'not in'} {e}",
        lambda name, exp: f"{exp[0]!r} {'in' if exp[1] else 'not in'} {name}",
        lambda name, exp, actual: (
            f"{name}: the key {exp[0]!r} is missing"
            if exp[1]
            else f"{name}: has the key {exp[0]!r}, which it did not have"
        ),
    ),
    GuardKind.DICT_KEYS: KindRules(
        lambda e, exp, ns: f"list({e}) == {ns.bind(list(exp), 'KEYS')}",
        lambda name, exp: f"list({name}) == {list(exp)!r}",
        lambda name, exp, actual: f"{name} keys: expected {list(exp)!r}, got {list(actual)!r}",
    ),
    GuardKind.DTYPE: KindRules(
        _check_dtype,
        lambda name, exp: f"{name}.dtype == {exp}",
        lambda name, exp, actual: (
            f"{name}.dtype: expected {exp}, got {getattr(actual, 'dtype', '?')}"
        ),
    ),
    GuardKind.SHAPE: KindRules(
        lambda e, exp, ns: f"{e}.shape == {literal(tuple(exp))}",
        lambda name, exp: f"{name}.shape == {exp}",
        _miss_shape,
    ),
    GuardKind.ALIAS: KindRules(
        lambda e, exp, ns: f"{e} is {exp.expr()}",
        lambda name, exp: f"{name} is {exp.short()}",
        lambda name, exp, actual: f"{name}: expected the same object as {exp.short()}, got another",
    ),
    GuardKind.DISTINCT: KindRules(
        lambda e, exp, ns: f"{e} is not {exp.expr()}",
        lambda name, exp: f"{name} is not {exp.short()}",
        lambda name, exp, actual: (
            f"{name}: expected another object than {exp.short()}, got the same"
        ),
    ),
    GuardKind.SIZES: KindRules(
        lambda e, exp, ns: f"{ns.bind(exp.check, 'SIZES')}(*{e})",
        lambda name, exp: " and ".join(exp.exprs),
        lambda name, exp, actual: "sizes: " + (
            "; ".join(f"expected {text}" for text in exp.failing(*actual)) or "a guard failed"
        ),
    ),
    GuardKind.NONEMPTY_RANGE: KindRules(
        lambda e, exp, ns: f"{ns.bind(exp.holds, 'NE')}(*{e})",
        lambda name, exp: f"{exp.text} has at least one item",
        lambda name, exp, actual: f"{exp.text} is now empty (its values: {actual})",
    ),
    GuardKind.OWNERS: KindRules(
        lambda e, exp, ns: f"{ns.bind(exp.holds, 'OWN')}(*{e})",
        lambda name, exp: exp.describe(name),
        lambda name, exp, actual: exp.miss(actual),
        _owners_inline,
    ),
    GuardKind.WRITEABLE: KindRules(
        lambda e, exp, ns: f"{ns.bind(all_writeable, 'WRITEABLE')}(*{e})",
        lambda name, exp: f"{name}: {len(exp)} arrays written in place, each writeable",
        lambda name, exp, actual: _writeable_miss(exp, actual),
        _writeable_inline,
    ),
    GuardKind.READ_ONLY: KindRules(
        lambda e, exp, ns: f"not {e}.flags.writeable",
        lambda name, exp: f"{name} is read-only",
        lambda name, exp, actual: f"{name}: is now writeable; it was read-only",
    ),
    GuardKind.NO_OVERLAP: KindRules(
        lambda e, exp, ns: (
            f"not {ns.bind(np.may_share_memory, 'may_share_memory')}({e}, {exp.expr()})"
        ),
        lambda name, exp: f"{name} shares no memory with {exp.short()}",
        lambda name, exp, actual: f"{name}: now shares memory with {exp.short()}, which it did not",
    ),
}
