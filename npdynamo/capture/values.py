"""Tracked value kinds: what the translator keeps on its symbolic stack and in its locals.

During capture no array is computed. A graph array is an ``ArrayValue`` (a graph node plus its
``ArrayMeta``); Python values the graph depends on are tracked exactly (``Const``, containers of
tracked values, functions, user objects). Values read from the frame carry a ``source`` so the
guards can re-read them on later calls.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.guards.sources import Source
from npdynamo.ops.meta import ArrayMeta


class Value:
    """Base of every tracked value."""

    source: Source | None = None

    def kind(self) -> str:
        """What this value is, in the words of the user's Python (for break reasons)."""
        return _KINDS.get(type(self).__name__, "value")


#: Value kinds named as the Python objects they stand for.
_KINDS = {
    "NullValue": "NULL slot", "ArrayValue": "NumPy array computed in the graph",
    "TupleValue": "tuple", "ListValue": "list", "DictValue": "dict", "SetValue": "set",
    "IteratorValue": "iterator", "CellValue": "closure cell", "FunctionValue": "function",
    "ExternalCell": "closure cell", "BoundMethodValue": "bound method", "MethodValue": "method",
    "ComprehensionSave": "comprehension variable", "GradFunctionValue": "grad function",
    "FormedList": "list",
}


class NullValue(Value):
    """The NULL slot CPython pushes beside a callable (never a real object)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = NullValue()


@dataclass(eq=False)
class Const(Value):
    """An immutable Python value known exactly: numbers, str, None, modules, builtins, dtypes,
    types, ranges, slices of constants."""

    value: object
    source: Source | None = None

    def __repr__(self) -> str:
        return f"Const({self.value!r})"

    def kind(self) -> str:
        return type(self.value).__name__


@dataclass(eq=False)
class ArrayValue(Value):
    """An array computed by the graph (or fed to it): ``node`` holds it.

    One ``ArrayValue`` stands for one NumPy array object, so every name bound to the same array
    shares it. ``base`` is the array this one may be a view of; ``views`` counts views taken of
    it: an in-place update is only expressible functionally when neither exists.
    """

    node: object
    source: Source | None = None
    base: ArrayValue | None = None
    views: int = 0
    recipe: tuple | None = None  # (op, args, kwargs) that made this view from ``base``
    derived: list = field(default_factory=list)  # weak references to views made from this array

    @property
    def meta(self) -> ArrayMeta:
        return self.node.meta["val"]

    def __repr__(self) -> str:
        return f"ArrayValue({self.node.name}: {self.meta})"


class _Container(Value):
    """A tuple, list or dict. One read from the frame wraps its items only when they are used,
    so an unused item adds no guard: ``loader`` wraps them on first use, then ``on_load`` runs
    (a list's length guard is installed there, so a list that is only appended to is never
    guarded on its length). ``appended`` holds what was appended before the items were needed."""

    def __init__(self, items=None, source: Source | None = None, fresh: bool = True) -> None:
        self._items = items
        self.source = source
        self.fresh = fresh
        #: set by ``read_lazily``: wraps the items when first used; their count meanwhile
        self._loader = None
        self._length: int | None = None
        self.appended: list[Value] = []
        self.on_load = None
        #: for a sequence read from outside: i -> its item i wrapped alone, so that ``seq[i]``
        #: on a long one tracks (and guards) only the items read, not all of them
        self.item_loader = None

    @classmethod
    def read_lazily(cls, source: Source, loader, length: int | None = None):
        """The container read from the frame at ``source`` (not fresh): ``loader()`` wraps its
        items when they are first used; ``length``, when given, is their count until then."""
        seq = cls(None, source)
        seq.fresh = False
        seq._loader, seq._length = loader, length
        return seq

    @property
    def loaded(self) -> bool:
        return self._items is not None

    @property
    def items(self):
        if self._items is None:
            self._items = self._loader()
            self._loader = None
            if self.appended:
                self._items.extend(self.appended)
            if self.on_load is not None:
                self.on_load()
        return self._items

    @items.setter
    def items(self, value) -> None:
        self._items = value

    def length(self) -> int:
        if self._items is None and self._length is not None:
            if self.on_load is not None:
                self.on_load()  # the length is now a fact the capture relies on
            return self._length + len(self.appended)
        return len(self.items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.length()} items)"


class TupleValue(_Container):
    def __init__(self, items=None, source: Source | None = None) -> None:
        super().__init__(items, source, fresh=False)


class NamedTupleValue(TupleValue):
    """A tuple of a named-tuple class made by the captured code (``np.linalg.svd``'s
    ``SVDResult``): items as a tuple's, fields read by name, rebuilt as ``cls(*items)``."""

    def __init__(self, items: list, cls: type) -> None:
        super().__init__(items)
        self.cls = cls

    def kind(self) -> str:
        return self.cls.__name__


class ListValue(_Container):
    """A list; ``fresh`` lists were created by the captured code and may be mutated freely."""


class DictValue(_Container):
    """A dict with constant keys (``items`` maps key -> tracked value); ``fresh`` as for lists."""


@dataclass(eq=False)
class SetValue(Value):
    """A set of constants. ``items`` are in the order CPython's set would iterate them (see
    ``containers.set_insert``)."""

    items: list[Value]
    fresh: bool = True
    #: the items' keys in a real set grown by the same insertions, one by one, as the set being
    #: captured: its iteration order is the set's (None: not made yet)
    table: set | None = field(default=None, repr=False)


@dataclass(eq=False)
class DictViewValue(Value):
    """``d.keys()``, ``d.values()`` or ``d.items()`` (``which``): a live view of ``mapping``."""

    mapping: DictValue
    which: str

    @property
    def python_type(self) -> type:
        return type(getattr({}, self.which)())

    def kind(self) -> str:
        return self.python_type.__name__


@dataclass(eq=False)
class IteratorValue(Value):
    """An iterator the translator steps through exactly as CPython would.

    Kinds (``python_type`` is the type of the iterator it stands for): a snapshot of ``items``
    (immutable sources: tuples, ranges, strings, and iterators read from outside); ``live``
    over a list (sees appends, and once exhausted stays exhausted, as ``list_iterator`` does);
    ``reversed_list`` (``list_reverseiterator``, by index from the end); ``enumerate`` and
    ``zip`` pull lazily from ``inner`` iterators. ``watch`` is a dict whose keys must not change
    while the iterator runs. ``source`` is set for an iterator read from outside: the real
    object is advanced by ``pos`` after the graph.
    """

    items: list[Value] | None = None
    live: ListValue | None = None
    pos: int = 0
    python_type: type | None = None
    mode: str = "items"  # items | live | reversed_list | enumerate | zip
    inner: list = field(default_factory=list)
    count: int = 0  # enumerate's next number; reversed_list's next index
    exhausted: bool = False
    watch: tuple | None = None  # (DictValue, its keys when the iterator was made)
    origin: object = None  # the range of a range_iterator; zip's strict flag
    source: Source | None = None
    #: ``iter(array)``: the array whose rows ``items`` are (a graph break hands the loop
    #: ``iter(array)`` moved on, not every row left, one by one)
    rows_of: Value | None = None
    #: what a ``for`` loop iterates (pushed by GET_ITER); a graph break may hand the loop a
    #: snapshot of what is left, unless a live local or container also refers to it
    loop_owned: bool = False

    def __post_init__(self) -> None:
        if self.live is not None and self.mode == "items":
            self.mode = "live"

    def next(self) -> Value | None:
        if self.exhausted:
            return None
        if self.watch is not None:
            d, keys, what = self.watch
            now = list(d.items)
            if len(now) != len(keys):
                raise UserCodeRaises(RuntimeError(f"{what} changed size during iteration"))
            if now != keys:
                raise UserCodeRaises(RuntimeError("dictionary keys changed during iteration"))
        item = self._step()
        if item is None and self.mode in ("live", "reversed_list"):
            self.exhausted = True  # these CPython iterators drop their list once exhausted
        return item

    def _step(self) -> Value | None:
        if self.mode == "enumerate":
            item = self.inner[0].next()
            if item is None:
                return None
            self.count += 1
            return TupleValue([Const(self.count - 1), item])
        if self.mode == "zip":
            group = []
            for i, it in enumerate(self.inner):
                item = it.next()
                if item is None:
                    if self.origin:  # strict=True: every argument must end together
                        self._check_strict_end(i)
                    return None
                group.append(item)
            return TupleValue(group) if group else None
        if self.mode == "reversed_list":
            seq = self.live.items
            if 0 <= self.count < len(seq):
                self.count -= 1
                return seq[self.count + 1]
            return None
        seq = self.live.items if self.live is not None else self.items
        if self.pos >= len(seq):
            return None
        self.pos += 1
        return seq[self.pos - 1]

    def _check_strict_end(self, i: int) -> None:
        def others(n: int) -> str:
            return "argument 1" if n == 1 else f"arguments 1-{n}"

        if i > 0:
            raise UserCodeRaises(ValueError(f"zip() argument {i + 1} is shorter than {others(i)}"))
        for j, it in enumerate(self.inner[1:], 1):
            if it.next() is not None:
                message = f"zip() argument {j + 1} is longer than {others(j)}"
                raise UserCodeRaises(ValueError(message))

    def left(self) -> int | None:
        """How many items are left, where that is known without stepping (None otherwise)."""
        if self.exhausted:
            return 0
        if self.mode == "items":
            return len(self.items) - self.pos
        if self.mode == "live":
            return self.live.length() - self.pos
        if self.mode == "reversed_list":
            return max(self.count + 1, 0)
        counts = [it.left() if isinstance(it, IteratorValue) else None for it in self.inner]
        if not counts or None in counts:
            return None
        return counts[0] if self.mode == "enumerate" else min(counts)

    def remaining(self) -> list[Value]:
        rest = []
        while (item := self.next()) is not None:
            rest.append(item)
        return rest


@dataclass(eq=False)
class LoopIteratorValue(Value):
    """A list/tuple/range iterator handed to a resume function (a loop continued after a graph
    break). Never inspected: its FOR_ITER runs natively, so no guard depends on what is left."""

    obj: object
    source: Source | None = None

    def kind(self) -> str:
        return "loop iterator continued after a graph break (each step runs in Python)"


@dataclass(eq=False)
class CellValue(Value):
    """A closure cell created by the captured code (MAKE_CELL); ``contents`` None = unbound."""

    contents: Value | None = None
    name: str = ""


@dataclass(eq=False)
class FunctionValue(Value):
    """A Python function to inline: one read from the frame (``fn``) or made by MAKE_FUNCTION."""

    code: types.CodeType
    globals: dict
    name: str
    defaults: tuple = ()
    kwdefaults: dict = field(default_factory=dict)
    closure: tuple = ()  # CellValue (made here) or ExternalCell (read from a function object)
    #: the function object (read through ``fn``)
    obj: types.FunctionType | None = None
    source: Source | None = None
    #: made with annotations (``def f(x: int)``): kept for calls, but not rebuilt
    annotated: bool = False
    #: installs the guard on the object's identity; None once installed (or when the function
    #: was read by identity from the start). A function read from outside is guarded first only
    #: on what inlining a call of it reads (``outside_functions``): a closure made anew on
    #: every call (a lambda handed to a resume function) then serves every call.
    pin: Callable[[], None] | None = None
    #: ``"__defaults__"``/``"__kwdefaults__"`` -> installs the guards on that attribute of the
    #: object read; run by the first call that fills a parameter from it (``relies_on``): a call
    #: passing every parameter reads neither, and its entry need not check them on every call
    defaults_guards: dict[str, Callable[[], None]] = field(default_factory=dict)

    def relies_on(self, name: str) -> None:
        """A call binds a parameter from ``name`` (``__defaults__`` or ``__kwdefaults__``)."""
        install = self.defaults_guards.pop(name, None)
        if install is not None:
            install()

    @property
    def fn(self) -> types.FunctionType | None:
        """The function object itself: whoever reads it relies on its identity (hands it back
        to Python, passes it on, reads ``__name__``), so reading it guards that first."""
        if self.pin is not None:
            pin, self.pin = self.pin, None
            pin()
        return self.obj


@dataclass(eq=False)
class ExternalCell(Value):
    """A closure cell of a function that exists outside the capture; reads are guarded."""

    cell: object
    source: Source | None = None
    contents: Value | None = None
    #: where the cell object itself is read (guards on which cell it is)
    cell_source: Source | None = None


@dataclass(eq=False)
class BoundMethodValue(Value):
    """``obj.method`` for a Python method of a user class."""

    func: FunctionValue
    self_value: Value


@dataclass(eq=False)
class MethodValue(Value):
    """A method of a tracked builtin-like value (array, list, dict, str) awaiting its call."""

    self_value: Value
    name: str


@dataclass(eq=False)
class UserObjectValue(Value):
    """An instance of a user class read from the frame; its attributes are read through guards."""

    obj: object
    source: Source | None = None
    attrs: dict = field(default_factory=dict)

    def kind(self) -> str:
        return f"{type(self.obj).__qualname__} object"


@dataclass(eq=False)
class ComprehensionSave(Value):
    """What a 3.12+ inlined comprehension (PEP 709) saved of an outer local: restored by the
    STORE_FAST after the comprehension. At a graph break inside the comprehension it goes back
    on the resume function's stack unwrapped (the saved value, or NULL for an unbound name)."""

    saved: Value


@dataclass(eq=False)
class FormedList(Value):
    """The list a comprehension formed into one loop would have built (``flow/comprehensions``):
    only ``np.array`` of it (``array``, the loop's result) or the row of an outer one it forms
    reads it, which the formation checked before."""

    array: ArrayValue


@dataclass(eq=False)
class MixedScalarValue(Value):
    """A number that is a Python ``float`` or an ``np.float64`` as the data decides (the winner
    of ``max(0.0, h)``, ``capture/mixed_scalars.py``): both hold a float64, so ``number`` holds
    its value (a float64 NumPy scalar of the graph, or a constant one) and ``numpy`` whether it
    is an ``np.float64`` (a NumPy bool of the graph, or a constant one). Only what gives the
    same result for both kinds takes it; anything else is a graph break."""

    number: Value
    numpy: Value
    #: the values it is one of (Python's winner is one of them itself); None: not known
    candidates: tuple | None = None

    def kind(self) -> str:
        return "float or numpy.float64 (the data decides which)"


@dataclass(eq=False)
class GradFunctionValue(Value):
    """A function made by ``grad``/``value_and_grad``, called inside the capture
    (``autodiff.py`` handles its calls)."""

    fn: Value
    argnums: tuple[int, ...]
    single_argnum: bool
    has_aux: bool
    with_value: bool


#: What a user object's attribute holds after ``del obj.attr`` inside the capture.
DELETED = Const(object())


def map_values(obj, fn):
    """``obj`` with ``fn`` applied to every leaf inside tuples, lists, dicts and slices."""
    if isinstance(obj, tuple):
        return tuple(map_values(v, fn) for v in obj)
    if isinstance(obj, list):
        return [map_values(v, fn) for v in obj]
    if isinstance(obj, dict):
        return {k: map_values(v, fn) for k, v in obj.items()}
    if isinstance(obj, slice):
        return slice(*(map_values(v, fn) for v in (obj.start, obj.stop, obj.step)))
    return fn(obj)


class GuardedConst(Const):
    """A Python constant read from the frame (an argument, an item, an attribute), whose value
    guard is installed when the capture first reads the value.

    A value only passed along (stored in a local, handed to a resume function, returned) is
    rebuilt from its source and needs no guard: a loop counter nobody reads then does not make
    each iteration a new cache entry. Any read of ``value`` is a fact the capture relies on."""

    def __init__(self, value: object, source: Source, install_guard) -> None:
        self._value = value
        self.source = source
        self._install_guard = install_guard

    @property
    def value(self) -> object:
        if self._install_guard is not None:
            # cleared only once installed: an install that refuses (a loop's carried number has
            # no value at capture time) refuses again on every later read
            self._install_guard()
            self._install_guard = None
        return self._value

    def kind(self) -> str:
        return type(self._value).__name__  # naming the type relies on nothing: no guard


class ScalarInputValue(GuardedConst):
    """A Python int or float from outside that is a graph input (a *dynamic scalar*, see
    ``dynamic_dims``): an operator between it and an array records ``node`` as a weak-scalar
    operand, so a new value needs no new capture. Every other use reads ``value``, which
    specialises it exactly as a ``GuardedConst``: Python code may do anything with a number.
    ``expr``: for a rolled loop's index and ints computed from it (``i + 1``, ``n - i``), its
    size expression (``ops.loop_index``), so a slice it bounds has a symbolic shape."""

    expr = None

    def __init__(self, value: object, source: Source, install_guard, node) -> None:
        super().__init__(value, source, install_guard)
        self.node = node


class ComputedNumberValue(ScalarInputValue):
    """A Python number the graph computes from array data (``float(loss)``, ``x.item()``): its
    value is only known when the graph runs. Arithmetic with arrays and numbers stays in the
    graph, and it can be stored, appended and returned (the graph's output); any use that needs
    its value (``if``, formatting, indexing, a call Python makes with it) is a graph break there,
    where the graph so far has computed it."""

    def __init__(self, hint: object, node, refuse) -> None:
        super().__init__(hint, None, None, node)
        self._refuse = refuse

    @property
    def value(self) -> object:
        raise self._refuse()


class SizeValue(GuardedConst):
    """A symbolic size read by Python code (``n = x.shape[0]``, ``len(x)``): ``expr`` is its
    ``SymInt``. Operators with arrays (``g / n``), ``+ - * // %`` with ints, ``np.arange(n)``
    and ``reshape(n, -1)`` keep it symbolic; every other use reads ``value``, which specialises
    the size (its current value becomes a guarded fact)."""

    def __init__(self, expr, hint: int, specialise) -> None:
        super().__init__(hint, None, specialise)
        self.expr = expr
