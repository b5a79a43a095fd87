"""Rebuilding Python values after a graph: tracked values -> expressions over graph outputs.

At the end of a graph (the function's return, or a graph break) every live tracked value must
become a real Python object again: graph arrays are the compiled graph's outputs, values read
from the frame are re-read through their sources (so identity is kept), constants are bound, and
containers built inside the function are built anew. ``ValueRebuilder`` renders those expressions
and collects the graph outputs they need, in order.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from npdynamo.capture.generators import LAZY_KINDS, rebuild_expr
from npdynamo.capture.guards import LocalSource, Source
from npdynamo.capture.mixed_scalars import box, float_like, may_be_one_object
from npdynamo.capture.pysource import Namespace, literal
from npdynamo.capture.side_effects import array_write_statements, replay_statements
from npdynamo.capture.values import (
    ArrayValue,
    BoundMethodValue,
    Const,
    DictValue,
    DictViewValue,
    FunctionValue,
    IteratorValue,
    ListValue,
    MethodValue,
    MixedScalarValue,
    NamedTupleValue,
    NullValue,
    ScalarInputValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)

if TYPE_CHECKING:
    from npdynamo.capture.session import CaptureContext

#: Kinds whose rebuilt object has an identity the user can observe (``is``, mutation).
IDENTITY_KINDS = (
    ListValue,
    DictValue,
    SetValue,
    TupleValue,
    IteratorValue,
    DictViewValue,
    FunctionValue,
    BoundMethodValue,
    MethodValue,
    UserObjectValue,
    MixedScalarValue,  # boxed once: every name holding it gets that one object
    *LAZY_KINDS,
)


def _is_view(value: Value) -> bool:
    """An array rebuilt by an expression (a view of its base, a boolean-mask selection): one
    object however many names and stack slots hold it, so a write or a ``.shape`` stored
    through one (``np.multiply(Z, Z, Z)``) is seen through the others."""
    if getattr(value, "masked_selection", False):
        return True
    return isinstance(value, ArrayValue) and value.source is None and value.base is not None


def python_type(value: Value) -> type | None:
    """The Python type of the object a tracked value stands for, when known."""
    if isinstance(value, ArrayValue):
        return value.meta.dtype.type if value.meta.scalar else np.ndarray
    if isinstance(value, Const):
        return type(value.value)
    if isinstance(value, NamedTupleValue):
        return value.cls
    kinds = {TupleValue: tuple, ListValue: list, DictValue: dict, SetValue: set}
    if type(value) in kinds:
        return kinds[type(value)]
    if isinstance(value, UserObjectValue):
        return type(value.obj)
    return None


LIST_ITERATOR = type(iter([]))
LIST_REVERSEITERATOR = type(reversed([]))
TUPLE_ITERATOR = type(iter(()))
ARRAY_ITERATOR = type(iter(np.empty(1)))


def iterator_at(seq, position: int):
    """``iter(seq)`` advanced by ``position`` items (list, tuple and range iterators)."""
    it = iter(seq)
    it.__setstate__(position)
    return it


#: dict iterator types -> the view method whose iterator they are
DICT_ITERATORS = {
    type(iter({}.keys())): "keys",
    type(iter({}.values())): "values",
    type(iter({}.items())): "items",
}


def rows_at(array, position: int):
    """``iter(array)`` whose next row is ``array[position]``: an ndarray's iterator is set there;
    another array type's (a ``grad`` tracer's generator) is stepped there."""
    it = iter(array)
    if type(it) is ARRAY_ITERATOR:
        it.__setstate__(position)
        return it
    for _ in range(position):
        next(it)
    return it


def advanced_iterator(iterable, count: int):
    """``iter(iterable)`` after ``count`` items were taken (dict iterators have no setstate)."""
    it = iter(iterable)
    for _ in range(count):
        next(it)
    return it


def reversed_at(seq: list, index: int):
    """``reversed(seq)`` whose next item is ``seq[index]``."""
    it = reversed(seq)
    it.__setstate__(index)
    return it


def _pure_snapshot(it: IteratorValue) -> bool:
    """True if ``it`` reads nothing that can change: snapshots and enumerate/zip of them."""
    if it.mode in ("enumerate", "zip"):
        return all(_pure_snapshot(i) for i in it.inner)
    return it.mode == "items" and it.source is None and it.watch is None


def _over_rows(it: IteratorValue) -> bool:
    """True if ``it`` pulls from an array's rows (``iter(array)``, enumerate/zip of it)."""
    if it.mode in ("enumerate", "zip"):
        return any(isinstance(i, IteratorValue) and _over_rows(i) for i in it.inner)
    return it.rows_of is not None


#: Containers nested deeper than this are not rebuilt as one expression (the frame runs in Python).
MAX_NESTING = 100


def _identity_by_object(obj: object) -> bool:
    """True for a number or string whose identity CPython does not fix by its value (its small
    ints, empty and one-character strings are one object each; any other may be a new one)."""
    kind = type(obj)
    if kind is int:
        return not -5 <= obj <= 256
    if kind in (str, bytes):
        return len(obj) > 1
    return kind in (float, complex)


class ValueRebuilder:
    """Renders tracked values as Python expressions inside a generated function."""

    def __init__(self, ctx: CaptureContext, frame_cells: dict[int, int] | None = None) -> None:
        self.ctx = ctx
        #: id(cell value) -> position in ``C``, the frame's cells (for closures made here)
        self.frame_cells = frame_cells or {}
        #: statements run before the result is built: one per object with an identity
        self.prelude: list[str] = []
        #: the side effects written back after the graph (set by ``record_side_effects``)
        self.effects: list[str] = []
        self._memo: dict[int, str] = {}
        self._building: set[int] = set()
        self.nodes: list = []
        self.index: dict = {}
        #: how many expressions read each graph output (an output read once, by its write-back
        #: only, may be computed straight into the array it is written back to)
        self.reads: dict = {}
        #: ``sN = <source>`` for every object from outside the code refers to, run before any
        #: side effect is written back: a replayed store may rebind the slot a source names
        #: (``kept = d["w"]; d["w"] = other; return kept``), so each is read while it still
        #: holds what the frame read (nothing changes a Python slot before the write-backs)
        self.source_reads: list[str] = []
        self._source_names: dict = {}
        self.namespace = Namespace()
        #: the floats rebuilt so far (a mixed one is boxed anew: ``_one_object_apart``)
        self._floats: list[Value] = []  # every float handed back so far
        self._mixed: list[MixedScalarValue] = []  # those of them that are mixed

    def bind(self, obj: object, hint: str = "RET") -> str:
        text = literal(obj)
        return text if text is not None else self.namespace.bind(obj, hint)

    def expr(self, value: Value) -> str:
        """The expression of ``value``. An object built here (a list, an iterator, a function)
        is built once and named, so every reference to it is the same Python object."""
        key = id(value)
        if key in self._memo:
            return self._memo[key]
        if key in self._building:
            # a container that holds itself (d[1] = d): one display cannot build it
            raise self.ctx.unsupported(f"a {value.kind()} that contains itself cannot be rebuilt")
        if len(self._building) > MAX_NESTING:  # one display per level: Python's parser and
            raise self.ctx.unsupported(         # stack would not take much more
                f"values nested more than {MAX_NESTING} deep cannot be rebuilt")
        self._building.add(key)
        try:
            text = self._expr(value)
        finally:
            self._building.discard(key)
        if (isinstance(value, IDENTITY_KINDS) or _is_view(value)) and not text.isidentifier():
            name = f"v{len(self._memo)}"
            self.prelude.append(f"{name} = {text}")
            self._memo[key] = name
            return name
        return text

    def source_expr(self, source: Source) -> str:
        """The object ``source`` named when the frame ran (a frame argument, or read on entry)."""
        if isinstance(source, LocalSource):
            return source.expr()  # a parameter of the generated function: nothing rebinds it
        name = self._source_names.get(source)
        if name is None:
            name = self._source_names[source] = f"s{len(self._source_names)}"
            self.source_reads.append(f"{name} = {source.expr()}")
        return name

    def graph_value(self, value: ArrayValue) -> str:
        """The expression of an array's current data: a graph output (or its input)."""
        node = value.node
        if node.op == "placeholder" and value.source is not None:
            return self.source_expr(value.source)
        if node not in self.index:
            self.index[node] = len(self.nodes)
            self.nodes.append(node)
        self.reads[node] = self.reads.get(node, 0) + 1
        return f"out[{self.index[node]}]"

    def _floats_apart(self, value: Value) -> None:
        """A mixed float is boxed as a new object: refused when another float handed back may
        be the very object Python's ``max``/``min`` returned for it (``mixed_scalars``). Each
        float is compared with the mixed ones only (a list of 10,000 floats handed back was
        10,000 squared comparisons: CPython's test_statistics 0.01 s -> 10 s)."""
        if not float_like(value):
            return
        pairs = [(mixed, value) for mixed in self._mixed]
        if isinstance(value, MixedScalarValue):
            pairs += [(value, other) for other in self._floats]
            self._mixed.append(value)
        for mixed, rest in pairs:
            if may_be_one_object(mixed, rest):
                raise self.ctx.unsupported(
                    f"a {mixed.kind()} handed back beside a float that may be the same object")
        self._floats.append(value)

    def _expr(self, value: Value) -> str:
        self._floats_apart(value)
        if isinstance(value, ScalarInputValue) and value.source is None:
            return self.graph_value(value)  # a Python number the graph computed (step + 1)
        if isinstance(value, ArrayValue):
            # an array from outside stays that object (written back first if it was changed)
            if value.source is not None:
                return self.source_expr(value.source)
            if value.base is not None:
                # a view stays a view of its (rebuilt) base, as NumPy shares their memory
                op, args, kwargs = value.recipe
                rest = "".join(", " + self.bind(a, "ARG") for a in args[1:])
                rest += "".join(f", {k}={self.bind(v, 'ARG')}" for k, v in kwargs.items())
                return f"{self.bind(op.impl, 'VIEW')}({self.expr(value.base)}{rest})"
            return self.graph_value(value)
        if getattr(value, "source", None) is not None and not getattr(value, "fresh", False):
            return self.source_expr(value.source)
        if isinstance(value, Const):
            obj = value.value
            if _identity_by_object(obj):
                # the object the code loaded or the capture computed, never a literal: the
                # compiler would intern '__add__' or share equal constants, so a string built
                # at run time (``str(b'__add__', 'ascii')``) would become the code's constant
                return self.namespace.bind(obj, "CONST")
            return self.bind(obj)
        if isinstance(value, NamedTupleValue):
            return f"{self.bind(value.cls, 'RESULT')}(" + ", ".join(
                self.expr(v) for v in value.items) + ")"
        if isinstance(value, TupleValue):
            origin = self.ctx.builder.origin(value)
            if origin is not None:  # the code's own tuple constant: that very object
                return self.namespace.bind(origin[0], "CONST")
            if value.items and all(isinstance(v, Const) for v in value.items):
                # a tuple display of literals is one folded constant: two equal tuples made
                # by the function would be one object
                return "tuple([" + ", ".join(self.expr(v) for v in value.items) + "])"
            return "(" + "".join(self.expr(v) + ", " for v in value.items) + ")"
        if isinstance(value, ListValue):
            return "[" + ", ".join(self.expr(v) for v in value.items) + "]"
        if isinstance(value, SetValue):
            if not value.items:
                return "set()"
            return "{" + ", ".join(self.expr(v) for v in value.items) + "}"
        if isinstance(value, DictValue):
            parts = [f"{self.bind(k, 'KEY')}: {self.expr(v)}" for k, v in value.items.items()]
            return "{" + ", ".join(parts) + "}"
        if isinstance(value, MixedScalarValue):  # a float or an np.float64, as the graph says
            parts = [self.graph_value(v) if isinstance(v, ArrayValue) else self.bind(v.value)
                     for v in (value.number, value.numpy)]
            return f"{self.namespace.bind(box, 'BOX')}({parts[0]}, {parts[1]})"
        if isinstance(value, IteratorValue):
            return self._iterator(value)
        if isinstance(value, DictViewValue):
            return f"{self.expr(value.mapping)}.{value.which}()"
        if isinstance(value, FunctionValue):
            return self._function(value)
        if isinstance(value, LAZY_KINDS):
            return rebuild_expr(self, value)
        if getattr(value, "masked_selection", False):  # x[mask] used where no graph can hold
            return value.rebuild_expr(self)                 # it (capture/masked.py)
        if isinstance(value, BoundMethodValue):
            method = self.namespace.bind(types.MethodType, "MethodType")
            return f"{method}({self.expr(value.func)}, {self.expr(value.self_value)})"
        if isinstance(value, MethodValue) and value.self_value is not None:
            return f"getattr({self.expr(value.self_value)}, {value.name!r})"
        raise self.ctx.unsupported(f"a {value.kind()} cannot be handed back to Python")

    def _iterator(self, it: IteratorValue) -> str:
        """An iterator of the same type in the same state (CPython's ``__setstate__`` sets a
        sequence iterator's position without reading the sequence)."""
        kind = it.python_type
        at = self.namespace.bind(iterator_at, "ITER_AT")
        # a changed list from outside gets its new contents only after the rebuilt values are
        # made, and CPython clamps a position past the end: such an iterator is rebuilt only
        # when it has not moved
        outside = it.live is not None and any(
            m.target is it.live for m in self.ctx.side_effects.mutations
        )
        if it.mode == "live" and kind is LIST_ITERATOR and not (outside and it.pos):
            if it.exhausted:  # CPython dropped the list: nothing appended later is seen
                return f"{at}([], 0)"
            return f"{at}({self.expr(it.live)}, {it.pos})"
        if it.mode == "reversed_list" and kind is LIST_REVERSEITERATOR and not outside:
            if it.exhausted:
                return f"{self.namespace.bind(reversed, 'REVERSED')}([])"
            rev = self.namespace.bind(reversed_at, "REVERSED_AT")
            return f"{rev}({self.expr(it.live)}, {it.count})"
        if it.mode == "items" and it.rows_of is not None and kind is ARRAY_ITERATOR:
            # the same array's iterator at the same row: it yields the same rows (views of
            # that array, or its scalars) as the snapshot would
            return f"{self.namespace.bind(rows_at, 'ROWS_AT')}({self.expr(it.rows_of)}, {it.pos})"
        if it.mode == "items" and kind is TUPLE_ITERATOR:
            rest = "".join(self.expr(v) + ", " for v in it.items[it.pos :])
            return f"iter(({rest}))"
        if it.mode == "items" and it.origin is not None and kind is type(iter(it.origin)):
            # over an immutable constant (a range, a str, a tuple): the same, moved on
            return f"{at}({self.bind(it.origin, 'SEQ')}, {it.pos})"
        if it.mode == "items" and kind in DICT_ITERATORS and it.watch is not None:
            advanced = self.namespace.bind(advanced_iterator, "ADVANCED")
            view = f"{self.expr(it.watch[0])}.{DICT_ITERATORS[kind]}()"
            return f"{advanced}({view}, {it.pos})"
        if it.mode == "enumerate":
            return f"enumerate({self.expr(it.inner[0])}, {it.count})"
        if it.mode == "zip":
            parts = "".join(self.expr(i) + ", " for i in it.inner)
            return f"zip({parts}strict=True)" if it.origin else f"zip({parts})"
        name = kind.__name__ if kind is not None else "iterator"
        raise self.ctx.unsupported(f"a {name} object cannot be handed back to Python here")

    def _function(self, fn: FunctionValue) -> str:
        if fn.fn is not None:
            return self.bind(fn.fn, "FN")
        if fn.annotated:  # FunctionType(...) would come back with empty __annotations__
            raise self.ctx.unsupported(
                f"the function {fn.name} made inside the function has annotations, which "
                "cannot be handed back to Python here")
        closure = "None"
        if fn.closure:
            if not all(id(cell) in self.frame_cells for cell in fn.closure):
                raise self.ctx.unsupported(
                    f"the closure {fn.name} made inside the function cannot be handed back to "
                    "Python here"
                )
            closure = "(" + "".join(f"C[{self.frame_cells[id(c)]}], " for c in fn.closure) + ")"
        make = self.namespace.bind(types.FunctionType, "FunctionType")
        defaults = "(" + "".join(self.expr(v) + ", " for v in fn.defaults) + ")"
        code = self.bind(fn.code, "CODE")
        glob = self.bind(fn.globals, "GLOBALS")
        text = f"{make}({code}, {glob}, {fn.name!r}, {defaults}, {closure})"
        if fn.kwdefaults:
            raise self.ctx.unsupported(f"the function {fn.name} has keyword-only defaults")
        return text

    def record_side_effects(self) -> None:
        """Render the capture's side effects; call before the graph is closed."""
        self.prelude[:0] = array_write_statements(self.ctx, self)
        self.effects = replay_statements(self.ctx, self)

    def stack_exprs(self, stack: list[Value]) -> list[str]:
        """Expressions for the non-NULL stack slots; an unbound method (the method half of a
        [method, self] pair) is read from the type of the value above it."""
        exprs = []
        for i, value in enumerate(stack):
            if isinstance(value, NullValue):
                continue
            if isinstance(value, MethodValue) and value.self_value is None:
                above = stack[i + 1] if i + 1 < len(stack) else None
                if isinstance(above, ArrayValue):
                    # the method of the object's own type, as LOAD_ATTR found it: under
                    # ``grad`` the array is a tracer, whose methods record onto the tape
                    exprs.append(f"type({self.expr(above)}).{value.name}")
                    continue
                owner = python_type(above) if above is not None else None
                if owner is None:
                    raise self.ctx.unsupported("a method whose owner type is unknown")
                exprs.append(f"{self.bind(owner, 'TYPE')}.{value.name}")
            elif isinstance(value, IteratorValue) and value.loop_owned:
                # the live locals' expressions come first: one that refers to this iterator
                # has memoised it, and the loop then continues with that same object
                exprs.append(self._loop_iterator(value))
            else:
                exprs.append(self.expr(value))
        return exprs

    def _loop_iterator(self, it: IteratorValue) -> str:
        """A ``for`` loop's own iterator on the stack at a graph break. When it pulls only from
        snapshots of immutable sequences, an iterator over what is left yields exactly the
        same items to the loop that continues (and the resume function can read it)."""
        if id(it) in self._memo:
            return self._memo[id(it)]
        if not _pure_snapshot(it) or _over_rows(it):
            return self.expr(it)  # an array's rows: its iterator moved on, not every row left
        rest = it.remaining()
        name = f"v{len(self._memo)}"
        self.prelude.append(f"{name} = iter(({''.join(self.expr(v) + ', ' for v in rest)}))")
        self._memo[id(it)] = name
        return name
