"""Python containers under capture: list/tuple/dict/set methods, iteration, indexing, truthiness.

Containers created by the captured code (``fresh``) are mutated freely; mutating a container that
came from outside would be a side effect on the caller's data, which is refused for now.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from npdynamo import ops
from npdynamo.capture.builder import MAX_ITEMS, constant_value, is_constant
from npdynamo.capture.errors import UserCodeRaises, python_raised
from npdynamo.capture.generators import drain, is_lazy
from npdynamo.capture.opcalls import op_call
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    DictValue,
    DictViewValue,
    IteratorValue,
    ListValue,
    MixedScalarValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)

MUTATING = {
    ListValue: {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"},
    DictValue: {"update", "pop", "setdefault", "clear", "popitem", "__setitem__"},
    SetValue: {"add", "discard", "remove", "clear", "update", "pop"},
}


def outside(frame: Frame, obj: Value) -> bool:
    """True if ``obj`` came from outside the frame: mutating it is a side effect to replay."""
    if getattr(obj, "fresh", True):
        return False
    if obj.source is None:
        raise frame.unsupported("mutating a container whose origin is unknown", kind="side_effect")
    return True


def record(frame: Frame, kind: str, obj: Value, *args) -> None:
    """Record a mutation of ``obj`` for replay, if it came from outside."""
    if outside(frame, obj):
        frame.ctx.side_effects.record(kind, obj, *args)


def extend_list(frame: Frame, lst: ListValue, items: list[Value]) -> None:
    """``lst.extend(items)``; appending to an outside list does not need its contents."""
    if outside(frame, lst) and not lst.loaded:
        lst.appended.extend(items)
        for item in items:
            frame.ctx.side_effects.record("list_append", lst, item)
        return
    lst.items.extend(items)
    record(frame, "list_state", lst)


def const_key(frame: Frame, key: Value):
    if isinstance(key, Const):
        try:
            hash(key.value)
        except TypeError as exc:
            raise UserCodeRaises(exc) from exc
        return key.value
    if isinstance(key, TupleValue) and all(isinstance(v, Const) for v in key.items):
        return tuple(v.value for v in key.items)
    raise frame.unsupported(f"a dict key or set item that is a {key.kind()} is not supported")


#: Modules whose types' truth values need no user code (functions, modules, types, dtypes).
BUILTIN_MODULES = ("builtins", "numpy")
#: ``bool()`` of a user object (its ``__bool__``/``__len__`` inlined), registered by
#: ``special_methods``, which inlines through ``calls``
USER_TRUTHINESS: list = []


def truthiness(frame: Frame, value: Value) -> bool:
    """``bool(value)`` for a value known at capture time; arrays are data-dependent."""
    if isinstance(value, Const):
        if not is_constant(value.value) and type(value.value).__module__ not in BUILTIN_MODULES:
            raise frame.unsupported(f"the truth value of a {type(value.value).__qualname__}")
        return bool(value.value)
    if isinstance(value, UserObjectValue):
        return USER_TRUTHINESS[0](frame, value)
    if isinstance(value, (TupleValue, ListValue, DictValue)):
        return value.length() > 0
    if isinstance(value, SetValue):
        return bool(value.items)
    if isinstance(value, DictViewValue):
        return value.mapping.length() > 0
    if isinstance(value, (ArrayValue, MixedScalarValue)):
        raise frame.unsupported(
            "a branch depends on the values in an array (data-dependent control flow)",
            "use np.where / np.select to compute both sides, or accept a graph break here",
            kind="data_dependent_branch",
        )
    return True  # functions, methods, iterators: objects without __bool__ or __len__


def items_of(frame: Frame, value: Value) -> list[Value]:
    """The values iterating ``value`` yields, computed at capture time."""
    if isinstance(value, (TupleValue, ListValue, SetValue)):
        return list(value.items)
    if isinstance(value, DictValue):
        return dict_keys(value)
    if isinstance(value, IteratorValue):
        return value.remaining()
    if is_lazy(value):
        return drain(value)
    return get_iter(frame, value).remaining()


def dict_keys(d: DictValue) -> list[Value]:
    return [Const(k) if not isinstance(k, tuple) else _const_tuple(k) for k in d.items]


def view_items(view: DictViewValue) -> list[Value]:
    d = view.mapping
    if view.which == "keys":
        return dict_keys(d)
    if view.which == "values":
        return list(d.items.values())
    return [TupleValue([k, v]) for k, v in zip(dict_keys(d), d.items.values())]


def _const_tuple(key: tuple) -> TupleValue:
    return TupleValue([Const(k) for k in key])


def get_iter(frame: Frame, value: Value) -> Value:
    """``iter(value)``: an iterator of the same Python type, advancing as CPython's would (a
    generator or another lazy iterator is its own iterator)."""
    if isinstance(value, IteratorValue) or is_lazy(value):
        return value
    if isinstance(value, ListValue):
        return IteratorValue(live=value, python_type=type(iter([])))
    if isinstance(value, TupleValue):
        return IteratorValue(items=list(value.items), python_type=type(iter(())))
    if isinstance(value, DictValue):
        return IteratorValue(
            items=dict_keys(value),
            python_type=type(iter({})),
            watch=(value, list(value.items), "dictionary"),
        )
    if isinstance(value, DictViewValue):
        return IteratorValue(
            items=view_items(value),
            python_type=type(iter(getattr({}, value.which)())),
            watch=(value.mapping, list(value.mapping.items), "dictionary"),
        )
    if isinstance(value, SetValue):
        return IteratorValue(
            items=list(value.items), python_type=type(iter(set())), watch=(value, [
                *value.items], "Set")
        )
    if isinstance(value, Const) and isinstance(value.value, (range, tuple, str, bytes, frozenset)):
        plain = value.value
        check_item_count(frame, _length(plain), f"iterating over a {type(plain).__name__}")
        return IteratorValue(
            items=[constant_value(v) for v in plain],
            python_type=type(iter(plain)),
            origin=plain if isinstance(plain, (range, tuple, str, bytes)) else None,
        )
    if isinstance(value, ArrayValue):
        if value.meta.ndim == 0:
            raise UserCodeRaises(TypeError("iteration over a 0-d array"))
        rows = ArrayRows(frame, value, frame.ctx.concrete(value.meta.shape[0]))
        return IteratorValue(items=rows, python_type=type(iter(np.empty(1))), rows_of=value)
    raise frame.unsupported(f"iterating over a {value.kind()} is not supported")


class ArrayRows(Sequence):
    """The items of ``iter(array)``: row ``i`` (``array[i]``) becomes a graph op when the
    iterator first reaches it, as CPython's iterator indexes the array then. A loop over a long
    array that breaks after one row (``unrolled_loops``) costs one row, not one op per row, and
    an array of more rows than the graph's op limit can be iterated at all."""

    def __init__(self, frame: Frame, array: Value, count: int) -> None:
        self.frame, self.array, self.count = frame, array, count
        self.scope = frame.ctx.subcapture  # the loop or branch body the iterator was made in
        self.made: dict[int, Value] = {}

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        row = self.made.get(index)
        if row is None:
            if self.frame.ctx.subcapture is not self.scope:
                # the row would be an op of another graph than the iterator's
                raise self.frame.unsupported(
                    "an array's iterator made outside a loop or branch body is advanced inside it")
            row = self.made[index] = op_call(
                self.frame, ops.REGISTRY["getitem"], (self.array, index), {})
        return row


def check_item_count(frame: Frame, count: float, what: str) -> None:
    """Break (the code runs in Python) where ``count`` items would be tracked one by one."""
    if count > MAX_ITEMS:
        raise frame.unsupported(
            f"{what} of more than {MAX_ITEMS:,} items, each tracked at capture time",
            "move the work on the long sequence out of the compiled function",
        )


def _length(plain) -> float:
    try:
        return len(plain)
    except OverflowError:  # a range longer than sys.maxsize
        return float("inf")


def set_insert(frame: Frame, s: SetValue, new: list[Value]) -> None:
    """Add ``new`` to ``s`` as ``set.add`` would: equal items are kept once (the first), and
    the items take the order a real set built by the same insertions iterates them in."""
    if not isinstance(s, SetValue):  # a set from outside (after a graph break)
        raise frame.unsupported(f"adding to a {s.kind()} that is not a set built here")
    values: dict = {}
    for v in s.items:
        values.setdefault(const_key(frame, v), v)
    if s.table is None:
        s.table = set()
        for key in values:
            s.table.add(key)
    # the real set grows as the captured one does (BUILD_SET, SET_ADD and set.add insert one
    # item at a time), so it iterates as it would: the order depends on the table's size and
    # on the insertion history (collisions), which re-building from the items would not keep
    for v in new:
        key = const_key(frame, v)
        values.setdefault(key, v)  # an equal item already in keeps its place and object
        s.table.add(key)
    s.items = [values[k] for k in s.table]


def new_set(frame: Frame, items: list[Value]) -> SetValue:
    s = SetValue([])
    set_insert(frame, s, items)
    return s


def subscript(frame: Frame, container: Value, index: Value) -> Value:
    """``container[index]`` for tuples, lists, dicts and constants."""
    if isinstance(container, DictValue):
        key = const_key(frame, index)
        if key not in container.items:
            raise UserCodeRaises(KeyError(key))
        return container.items[key]
    if isinstance(container, (TupleValue, ListValue)):
        if not isinstance(index, Const):
            raise frame.unsupported("indexing a list or tuple with a graph value")
        one = _item_alone(container, index.value)
        if one is not None:
            return one
        items = container.items  # wrapped outside the try: an error there is npdynamo's
        try:
            picked = items[index.value]
        except (IndexError, TypeError) as exc:
            raise UserCodeRaises(exc) from exc
        if isinstance(index.value, slice):
            whole = index.value.indices(container.length()) == (0, container.length(), 1)
            if isinstance(container, TupleValue) and whole:
                return container  # CPython returns an exact tuple itself
            return type(container)(list(picked))
        return picked
    if isinstance(container, Const) and isinstance(index, Const):
        try:
            item = container.value[index.value]
        except Exception as exc:
            raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
        return constant_value(item)
    raise frame.unsupported(f"indexing a {container.kind()} is not supported")


def _item_alone(container: TupleValue | ListValue, index: object) -> Value | None:
    """``seq[index]`` of a sequence from outside whose items are not loaded: that item alone,
    wrapped from its source (the length is guarded); None where all items are needed."""
    if container.loaded or container.item_loader is None or type(index) is not int:
        return None
    length = container.length()  # a list's length guard is installed here
    if not -length <= index < length:
        kind = "tuple" if isinstance(container, TupleValue) else "list"
        raise UserCodeRaises(IndexError(f"{kind} index out of range"))
    index %= length
    if index >= length - len(container.appended):
        return None  # an item appended during the capture
    return container.item_loader(index)


def store_subscript(frame: Frame, container: Value, index: Value, value: Value) -> None:
    if isinstance(container, DictValue):
        key = const_key(frame, index)
        container.items[key] = value
        record(frame, "dict_set", container, key, value)
        return
    if isinstance(container, ListValue):
        if not isinstance(index, Const):
            raise frame.unsupported("list index that is a graph value")
        # the items are wrapped outside the try: an error there is npdynamo's
        items, new = container.items, items_of(frame, value) if isinstance(
            index.value, slice) else value
        try:
            items[index.value] = new
        except (IndexError, TypeError, ValueError) as exc:
            raise UserCodeRaises(exc) from exc
        record(frame, "list_state", container)
        return
    raise frame.unsupported(f"item assignment into a {container.kind()} is not supported")


def container_method(frame: Frame, obj: Value, name: str, args: list[Value], kwargs: dict) -> Value:
    """Methods of lists, tuples, dicts and sets, applied to the tracked container."""
    if kwargs and name not in ("sort", "pop", "get", "update"):
        raise frame.unsupported(f"keyword arguments to .{name}()")
    try:
        if isinstance(obj, DictValue):
            return _dict_method(frame, obj, name, args, kwargs)
        if isinstance(obj, ListValue) and name in ("append", "extend"):
            extend_list(frame, obj, [args[0]] if name == "append" else items_of(frame, args[0]))
            return Const(None)
        if isinstance(obj, (ListValue, TupleValue)):
            result = _sequence_method(frame, obj, name, args)
            if name in MUTATING[ListValue]:
                record(frame, "list_state", obj)
            return result
        if isinstance(obj, SetValue) and name == "add":
            set_insert(frame, obj, [args[0]])
            record(frame, "set_state", obj)
            return Const(None)
    except (KeyError, IndexError, ValueError) as exc:
        raise UserCodeRaises(exc) from exc
    raise frame.unsupported(
        f"the {type(obj).__name__[:-5].lower()} method .{name}() is not supported"
    )


def _dict_method(frame: Frame, d: DictValue, name: str, args: list[Value], kwargs: dict) -> Value:
    if name in ("keys", "values", "items"):
        if args:
            raise UserCodeRaises(TypeError(f"dict.{name}() takes no arguments ({len(args)} given)"))
        return DictViewValue(d, name)
    if name == "get":
        key = const_key(frame, args[0])
        default = args[1] if len(args) > 1 else kwargs.get("default", Const(None))
        return d.items.get(key, default)
    if name == "copy":
        return DictValue(dict(d.items))
    if name == "__getitem__":
        return subscript(frame, d, args[0])
    if name == "__contains__":
        return Const(const_key(frame, args[0]) in d.items)
    if name == "update":
        other = args[0] if args else DictValue({})
        if not isinstance(other, DictValue):
            raise frame.unsupported("dict.update with a non-dict argument")
        for key, value in [*other.items.items(), *kwargs.items()]:
            d.items[key] = value
            record(frame, "dict_set", d, key, value)
        return Const(None)
    if name == "pop":
        key = const_key(frame, args[0])
        if key in d.items or len(args) < 2:
            value = d.items.pop(key)
            record(frame, "dict_del", d, key)
            return value
        return args[1]
    if name == "setdefault":
        key = const_key(frame, args[0])
        if key not in d.items:
            d.items[key] = args[1] if len(args) > 1 else Const(None)
            record(frame, "dict_set", d, key, d.items[key])
        return d.items[key]
    if name == "clear":
        d.items.clear()
        record(frame, "dict_clear", d)
        return Const(None)
    raise frame.unsupported(f"the dict method .{name}() is not supported")


def _index_argument(frame: Frame, name: str, arg: Value):
    if not isinstance(arg, Const):
        raise frame.unsupported(f"the position given to .{name}() is a {arg.kind()}")
    try:
        return operator.index(arg.value)
    except TypeError as exc:
        raise UserCodeRaises(exc) from exc


def _sequence_method(frame: Frame, seq, name: str, args: list[Value]) -> Value:
    items = seq.items
    if name == "append":
        items.append(args[0])
        return Const(None)
    if name == "extend":
        items.extend(items_of(frame, args[0]))
        return Const(None)
    if name == "insert":
        items.insert(_index_argument(frame, name, args[0]), args[1])
        return Const(None)
    if name == "pop":
        return items.pop(_index_argument(frame, name, args[0]) if args else -1)
    if name == "clear":
        items.clear()
        return Const(None)
    if name == "reverse":
        items.reverse()
        return Const(None)
    if name == "copy":
        return ListValue(list(items))
    if name in ("index", "count", "remove"):
        # Python's own method on the plain items with every argument (index's start and stop
        # too): identity before equality, as CPython compares
        if not all(isinstance(v, Const) and is_constant(v.value) for v in [*items, *args]):
            raise frame.unsupported(f".{name}() on a sequence holding graph values")
        plain = [v.value for v in items]
        values = [a.value for a in args]
        # Python's own method, for its errors too (tuple.index(x): x not in tuple)
        method = getattr(tuple(plain) if isinstance(seq, TupleValue) else list(plain), name)
        try:
            result = method(*values)
        except (TypeError, ValueError) as exc:
            raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
        if name == "remove":
            del items[plain.index(*values)]
        return Const(result)
    raise frame.unsupported(f"the sequence method .{name}() is not supported")
