"""Wrapping: turns a Python object read from the frame into a tracked value plus its guards.

Every object the translator reads from outside (an argument, a global, an attribute, a closure
cell, a container item) passes through ``ValueBuilder.wrap`` with the source it was read from.
Arrays become graph placeholders guarded on type, dtype and shape; Python constants are guarded
on value; functions and modules on identity; containers on type, and on length or keys as far as
the capture uses them. Objects made anew on every call are never guarded on identity: a bound
method of a C or Cython object (``rng.integers``, ``"{}".format``) is guarded on which method it
is and on its ``__self__``, a ``grad`` wrapper on its settings and function.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from npdynamo.autograd.tracer import Tracer
from npdynamo.capture.dynamic_dims import dynamic_dims, dynamic_scalar
from npdynamo.capture.guards import (
    AttrSource,
    GuardKind,
    ItemSource,
    RemainingSource,
    Source,
    remaining_items,
)
from npdynamo.capture.hooks.compiled_function import CompiledFunction
from npdynamo.capture.hooks.disable import is_disabled
from npdynamo.capture.hooks.dispatch import original_function
from npdynamo.capture.outside_functions import CellLedger, read_function
from npdynamo.capture.values import (
    ArrayValue,
    BoundMethodValue,
    Const,
    DictValue,
    ExternalCell,
    FunctionValue,
    GradFunctionValue,
    GuardedConst,
    IteratorValue,
    ListValue,
    LoopIteratorValue,
    MethodValue,
    ScalarInputValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)

if TYPE_CHECKING:
    from npdynamo.capture.session import CaptureContext

#: Iterators a resume function may receive (a loop continued after a graph break).
ITERATOR_TYPES = (
    type(iter([])),
    type(iter(())),
    type(iter(range(0))),
    type(iter({})),
    type(iter({}.values())),
    type(iter({}.items())),
    type(iter("")),
)
#: Iterators a resume function takes as opaque loop iterators (also an array's, from a loop too
#: long to unroll that broke at GET_ITER).
LOOP_ITERATOR_TYPES = (
    type(iter([])), type(iter(())), type(iter(range(0))), type(iter(np.empty(0)))
)
LIST_ITERATOR = type(iter([]))
#: Items a container made, read or iterated at capture time may have: each is a tracked value
#: (guarded where read), so a longer one (``iter(range(1 << 1000))``, ``(0,) * 10**6``, a list
#: of a million strings passed in) would cost capture time without bound: the capture breaks.
MAX_ITEMS = 10_000
CONSTANT_TYPES = (bool, int, float, complex, str, bytes, type(None), range, slice)
#: Modules whose attributes are taken as fixed: reading ``np.exp`` installs no guard.
TRUSTED_MODULES = ("numpy", "math", "operator", "builtins", "cmath", "npdynamo")


def is_trusted_module(module: types.ModuleType) -> bool:
    name = getattr(module, "__name__", "")
    return name.split(".")[0] in TRUSTED_MODULES


def is_constant(value: object) -> bool:
    """Immutable values the translator may compute with directly."""
    if isinstance(value, CONSTANT_TYPES) or value is Ellipsis:
        return True
    if isinstance(value, (np.generic, np.dtype)):
        return True
    if isinstance(value, tuple):
        return all(is_constant(v) for v in value)
    return False


def constant_value(value: object) -> Value:
    """A tracked value for an object created during capture (no source, no guard)."""
    if isinstance(value, tuple):
        return TupleValue([constant_value(v) for v in value])
    return Const(value)


class ValueBuilder:
    """Wraps frame objects into tracked values; one tracked value per source."""

    def __init__(self, ctx: CaptureContext) -> None:
        self.ctx = ctx
        self._by_source: dict[Source, Value] = {}
        self._by_id: dict[int, tuple] = {}
        self._cells = CellLedger(ctx)
        #: id(tracked value) -> (tracked value, the object it was read as, its source): what
        #: ``is`` compares (``identity.py``)
        self._origins: dict[int, tuple[Value, object, Source | None]] = {}

    def wrap(self, value: object, source: Source | None) -> Value:
        if source is None:
            return self._wrap_unguarded(value)
        cached = self._by_source.get(source)
        if cached is not None:
            return cached
        if _tracked_by_identity(value):
            # one tracked value per object, so a mutation is seen through every name for it
            # (and ``is`` between two names answers as Python would); later calls must pass
            # the same object in both places
            seen = self._by_id.get(id(value))
            if seen is not None:
                first_value, first_source, _keepalive = seen
                self.ctx.guard(source, GuardKind.ALIAS, first_source)
                self._by_source[source] = first_value
                return first_value
        wrapped = self._wrap(value, source)
        self._by_source[source] = wrapped
        self._origins.setdefault(id(wrapped), (wrapped, value, source))
        if _tracked_by_identity(value):
            self._by_id[id(value)] = (wrapped, source, value)
        return wrapped

    def origin(self, value: Value) -> tuple[object, Source | None] | None:
        """(the object ``value`` stands for, the source it was read from) for a value read from
        the frame or remembered; None for a value the capture made or read without a source."""
        seen = self._origins.get(id(value))
        return seen[1:] if seen is not None and seen[0] is value else None

    def remember_origin(self, value: Value, obj: object) -> None:
        """``value`` stands for the existing object ``obj``, the same on every call (a tuple
        constant of the code, which ``LOAD_CONST`` pushes as a tuple of its items)."""
        self._origins[id(value)] = (value, obj, None)

    def external_cell(
        self,
        cell,
        source: Source | None,
        cell_source: Source | None = None,
        through: FunctionValue | None = None,
    ) -> ExternalCell:
        """One tracked value per cell object: a store through one name is seen by all
        (``cell_source``: where the cell itself is read; ``through``: see ``CellLedger``)."""
        return self._cells.cell(cell, source, cell_source, through)

    def cell_written(self, cell: ExternalCell) -> None:
        """The capture stores into a cell from outside (``CellLedger.written``)."""
        self._cells.written(cell)

    def arrays_read(self) -> list[tuple[Source, object]]:
        """(source, array) of every input array seen, for the aliasing checks of writes."""
        return [(src, obj) for _v, src, obj in self._by_id.values() if type(obj) is np.ndarray]

    def guarded_const(self, value: object, source: Source) -> GuardedConst:
        """A constant from outside, guarded by value once the capture reads it (see
        ``GuardedConst``); the guard names the line that first read it. A Python int or float
        whose value changed across captures is a dynamic scalar (``dynamic_dims``)."""
        ctx = self.ctx
        install = lambda: ctx.guard(source, GuardKind.CONSTANT, value)  # noqa: E731
        if dynamic_scalar(ctx.fn.__code__, source.name(), value, ctx.dynamic):
            node = ctx.add_scalar_placeholder(value, source)
            return ScalarInputValue(value, source, install, node)
        return GuardedConst(value, source, install)

    def class_member(self, value: object, source: Source | None) -> Value:
        """A function read from a class attribute, at ``source`` where identity guards already
        installed fix it there: a user function is then guarded on its code and defaults too
        (they may be assigned in place, as a reloader does)."""
        if source is not None and isinstance(value, types.FunctionType) and not (
                is_disabled(value) or is_trusted_name(value)):
            return self.function(value, source, pinned=True)
        return self.wrap(value, None)

    def _wrap_unguarded(self, value: object) -> Value:
        if is_disabled(value):
            return constant_value(value)
        if isinstance(value, types.FunctionType) and not is_trusted_name(value):
            return self.function(value, None)
        if isinstance(value, CompiledFunction):
            return self.function(original_function(value), None)
        if isinstance(value, np.ndarray):
            raise self.ctx.unsupported("an array that is neither an argument nor a global")
        return constant_value(value)

    def _wrap(self, value: object, source: Source) -> Value:
        ctx = self.ctx
        kind = type(value)
        if kind is np.ndarray:
            return self.array(value, source)
        if isinstance(value, np.ndarray):
            raise ctx.unsupported(
                f"{source.short()} is a {kind.__qualname__} (an ndarray subclass)",
                "pass a plain numpy.ndarray (np.asarray(x))",
            )
        if kind in (bool, type(None)) or value is Ellipsis or value is NotImplemented:
            return self.guarded_const(value, source)
        if isinstance(value, (np.floating, np.complexfloating)):
            # data (a loss, a max): a graph input, so a new value does not recompile
            ctx.guard(source, GuardKind.TYPE, kind)
            return ArrayValue(ctx.add_placeholder(value, source), source)
        if kind in (int, float, complex, str, bytes, range, slice) or isinstance(value, np.generic):
            return self.guarded_const(value, source)
        if isinstance(value, np.dtype):
            ctx.guard(source, GuardKind.CONSTANT, value)
            return Const(value, source)
        if kind is tuple or kind is list:
            ctx.guard(source, GuardKind.TYPE, kind)
            loader = lambda: self._items(value, source)  # noqa: E731
            if kind is tuple:
                ctx.guard(source, GuardKind.LENGTH, len(value))
                seq = TupleValue.read_lazily(source, loader, len(value))
            else:
                seq = ListValue.read_lazily(source, loader, len(value))
                # the length is a fact only once the items are used: appending alone needs no
                # guard
                seq.on_load = lambda: ctx.guard(source, GuardKind.LENGTH, len(value))
            seq.item_loader = lambda i: self.wrap(value[i], ItemSource(source, i))
            return seq
        if kind is dict:
            if not all(type(k) in (str, int) for k in value):
                raise ctx.unsupported(f"dict {source.short()} has keys that are not str or int")
            ctx.guard(source, GuardKind.TYPE, dict)
            # The keys are guarded as the capture uses them (see ``_LazyDict``); no length is
            # given, so ``len`` goes through the items, which guard it.
            return DictValue.read_lazily(source, lambda: _LazyDict(self, value, source))
        if kind is LIST_ITERATOR or (ctx.opaque_iterators and kind in LOOP_ITERATOR_TYPES):
            # a loop continued by a resume function: one entry serves every iteration; a list
            # iterator sees later changes of its list, which a snapshot of its items would not
            ctx.guard(source, GuardKind.TYPE, kind)
            return LoopIteratorValue(value, source)
        if kind in ITERATOR_TYPES:
            ctx.guard(source, GuardKind.TYPE, kind)
            rest = RemainingSource(source)
            items = remaining_items(value)
            ctx.guard(rest, GuardKind.LENGTH, len(items))
            wrapped = [self.wrap(v, ItemSource(rest, i)) for i, v in enumerate(items)]
            if all(isinstance(v, Const) for v in wrapped):
                # the real iterator is advanced after the graph by as many items as were
                # taken; its items are guarded values, never re-read (it has moved on)
                it = IteratorValue(
                    items=[Const(v.value) for v in wrapped], python_type=kind, source=source
                )
                ctx.side_effects.record("iter_advance", it)
                return it
            # items that are arrays or objects are rebuilt through their sources, which read
            # the iterator: a for loop's own iterator (a resume function's stack slot, seen
            # by nothing else) can be handed on as a new iterator over what is left; one the
            # user holds cannot
            if not source.short().startswith("___stack"):
                raise ctx.unsupported(
                    f"{source.short()} is an iterator over arrays or objects from outside"
                )
            return IteratorValue(items=wrapped, python_type=type(iter(())))
        if isinstance(value, types.ModuleType):
            ctx.guard(source, GuardKind.ID, value)
            return Const(value, source)
        if kind in BOUND_BUILTIN_TYPES and _binds_an_object(value):
            return self.bound_builtin(value, source)
        if is_disabled(value):
            # an opaque callable: the call of it is the graph break (calls.call_value), so the
            # code around it stays compiled; breaking at its load could leave a NULL on the stack
            ctx.guard(source, GuardKind.ID, value)
            return Const(value, source)
        if isinstance(value, CompiledFunction):  # called from a compiled function: inlined
            ctx.guard(source, GuardKind.ID, value)
            return self.function(original_function(value), None)
        if kind is types.MethodType and isinstance(value.__func__, CompiledFunction):
            func = self.wrap(value.__func__, AttrSource(source, "__func__"))
            return BoundMethodValue(func, self.wrap(value.__self__, AttrSource(source, "__self__")))
        if kind is types.MethodType and not isinstance(value.__func__, types.FunctionType):
            # a Cython method (np.random.Generator's) bound to its object: new on every read
            ctx.guard(source, GuardKind.TYPE, kind)
            ctx.guard(AttrSource(source, "__func__"), GuardKind.ID, value.__func__)
            self.wrap(value.__self__, AttrSource(source, "__self__"))
            return Const(value, source)
        # only a function can be a grad wrapper: asking any other object for the attribute
        # could run its __getattr__
        spec = (
            getattr(value, "__npdynamo_grad__", None)
            if isinstance(value, types.FunctionType)
            else None
        )
        if spec is not None:  # a value_and_grad(loss) wrapper made outside the function
            # Often made anew for each call: guarded on what it computes, not on its identity.
            ctx.guard(source, GuardKind.TYPE, kind)
            spec_source = AttrSource(source, "__npdynamo_grad__")
            ctx.guard(spec_source, GuardKind.TYPE, type(spec))
            settings = ("argnums", "single_argnum", "has_aux", "with_value")
            for name in settings:
                ctx.guard(AttrSource(spec_source, name), GuardKind.CONSTANT, getattr(spec, name))
            fn = self.wrap(spec.fn, AttrSource(spec_source, "fn"))
            return GradFunctionValue(fn, *(getattr(spec, name) for name in settings))
        if is_tracer(value):  # inside an outer grad: the graph becomes a differentiable step
            if type(value.value) is not np.ndarray:
                raise ctx.unsupported(f"{source.short()} is a traced scalar or nested tracer")
            ctx.guard(source, GuardKind.TYPE, kind)
            ctx.guard(source, GuardKind.DTYPE, value.dtype)
            ctx.guard(source, GuardKind.SHAPE, value.shape)
            return ArrayValue(ctx.add_placeholder(value, source), source)
        if isinstance(value, types.FunctionType) and not is_trusted_name(value):
            return self.function(value, source)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            # its function is guarded on its parts, not its identity: the method's type too
            ctx.guard(source, GuardKind.TYPE, types.MethodType)
            func = self.function(value.__func__, AttrSource(source, "__func__"))
            return BoundMethodValue(func, self.wrap(value.__self__, AttrSource(source, "__self__")))
        if callable(value) and (
            isinstance(value, (types.BuiltinFunctionType, np.ufunc, type, *DESCRIPTOR_TYPES))
            or is_trusted_name(value)
        ):
            ctx.guard(source, GuardKind.ID, value)
            return Const(value, source)
        ctx.guard(source, GuardKind.TYPE, kind)
        return UserObjectValue(value, source)

    def _items(self, value: tuple | list, source: Source) -> list[Value]:
        """The items of a tuple or list from outside, each wrapped and guarded where used."""
        if len(value) > MAX_ITEMS:
            raise self.ctx.unsupported(
                f"{source.short()} is a {type(value).__name__} of more than {MAX_ITEMS:,} items,"
                " each tracked at capture time",
                "move the work on the long sequence out of the compiled function",
            )
        self.ctx.read_items(len(value), source)
        return [self.wrap(v, ItemSource(source, i)) for i, v in enumerate(value)]

    def bound_builtin(self, value: object, source: Source) -> Value:
        """``obj.method`` of a builtin method (``rng.integers``, ``"{}".format``, ``lst.append``).

        Every attribute read makes a new bound method object, so its identity is never guarded:
        the guard checks which C method it is, and ``__self__`` is wrapped like any other value
        (a constant string on its value, a Generator on its type, a list on its type and length
        when used). Called, it behaves as that method of the tracked ``__self__``.
        """
        owner = value.__self__
        descriptor = _method_descriptor(owner, value)
        if descriptor is None:  # not found the ordinary way (``super()``, a patched class)
            self.ctx.guard(source, GuardKind.ID, value)
            return Const(value, source)
        self.ctx.guard(source, GuardKind.TYPE, type(value))
        self.ctx.guard(source, GuardKind.METHOD, descriptor)
        self_value = self.wrap(owner, AttrSource(source, "__self__"))
        if isinstance(self_value, METHOD_SELF_KINDS) or (
            type(self_value) is Const and is_constant(self_value.value)
        ):
            method = MethodValue(self_value, value.__name__)
            method.source = source  # handed back to Python: the very object read from the frame
            return method
        return Const(value, source)

    def array(self, value: np.ndarray, source: Source) -> Value:
        ctx = self.ctx
        if value.dtype.hasobject or value.dtype.fields is not None:
            raise ctx.unsupported(
                f"{source.short()} has dtype {value.dtype}; only numeric and bool arrays "
                "can be captured"
            )
        ctx.guard(source, GuardKind.TYPE, np.ndarray)
        ctx.guard(source, GuardKind.DTYPE, value.dtype)
        dynamic = dynamic_dims(ctx.fn.__code__, source.name(), value, ctx.dynamic)
        if not dynamic:  # else the entry's SIZES guard checks ndim, static dims and relations
            ctx.guard(source, GuardKind.SHAPE, value.shape)
        return ArrayValue(ctx.add_placeholder(value, source, dynamic), source)

    def function(self, fn: types.FunctionType, source: Source | None,
                 pinned: bool = False) -> FunctionValue:
        original = original_function(fn)
        if original is not None:  # a compiled function called from a compiled one: inline it
            if source is not None:
                self.ctx.guard(source, GuardKind.ID, fn)
            return self.function(original, None)

        if is_disabled(fn):
            raise self.ctx.unsupported(
                f"{fn.__qualname__} is marked npdynamo.disable, so it is never captured"
            )
        return read_function(self, fn, source, pinned)


#: Unbound methods of builtin types (``list.append``): a method pair's first half after a break.
DESCRIPTOR_TYPES = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
#: Tracked kinds whose methods the translator evaluates itself (``calls.call_method``).
METHOD_SELF_KINDS = (ArrayValue, ListValue, TupleValue, DictValue, SetValue)
#: Builtin methods bound to an object: a new object on every attribute read.
BOUND_BUILTIN_TYPES = (types.BuiltinMethodType, types.MethodWrapperType)


def _binds_an_object(method: object) -> bool:
    """A builtin method bound to an object, not a module-level C function (``np.add.reduce``'s
    ``__self__`` is the ufunc, a stable object: that one is bound too, and fine to rebind)."""
    owner = getattr(method, "__self__", None)
    return owner is not None and not isinstance(owner, types.ModuleType)


def _method_descriptor(owner: object, method: object) -> object | None:
    """The descriptor whose binding to ``owner`` is ``method``, found as attribute lookup would."""
    name = getattr(method, "__name__", None)
    if not isinstance(name, str):
        return None
    classes = (owner.__mro__ if isinstance(owner, type) else ()) + type(owner).__mro__
    for klass in classes:
        descriptor = klass.__dict__.get(name)
        if descriptor is None:
            continue
        try:
            if isinstance(descriptor, types.ClassMethodDescriptorType):
                bound = descriptor.__get__(None, owner)
            elif isinstance(descriptor, (types.MethodDescriptorType, types.WrapperDescriptorType)):
                bound = descriptor.__get__(owner)
            else:
                return None
        except TypeError:
            return None
        return descriptor if bound == method else None
    return None


#: Objects whose identity matters when mutated: aliasing between sources is tracked for them.
#: Objects whose identity matters: one tracked value per object (an iterator stepped through
#: one name is stepped for every name holding it, e.g. a loop's iterator and a local).
MUTABLE_TYPES = (np.ndarray, list, dict, set, *LOOP_ITERATOR_TYPES)


#: Builtin types whose objects the capture keeps one tracked value for (see below); iterators
#: also advance once however many names they are read through.
IDENTITY_TYPES = (*MUTABLE_TYPES, tuple, types.FunctionType, *ITERATOR_TYPES, enumerate, zip,
                  map, filter, reversed)


def _tracked_by_identity(value: object) -> bool:
    """Objects whose identity the capture keeps: mutable ones, and tuples and functions, whose
    identity the code can see (``sorted([a])[0] is a``, ``g is f``) though no mutation can."""
    return isinstance(value, IDENTITY_TYPES) or _is_user_object(value)


def _is_user_object(value: object) -> bool:
    return type(value).__module__ not in ("builtins", "numpy") and not isinstance(
        value, (types.ModuleType, types.FunctionType, type, types.MethodType)
    )


def is_tracer(value: object) -> bool:
    return isinstance(value, Tracer)


def is_trusted_name(value: object) -> bool:
    module = getattr(value, "__module__", "") or ""
    return module.split(".")[0] in TRUSTED_MODULES


class _LazyDict(dict):
    """The items of a dict read from the frame: each value is wrapped on first access, and the
    keys are guarded as far as the capture used them.

    Looking a key up (``k in d``, ``d[k]``, ``d.get(k)``, a store or a delete) guards only
    whether that key is in the dict; ``len(d)`` guards the length; anything that sees the keys
    all at once or in order (iteration, ``keys()``/``values()``/``items()``, copies, merges,
    comparisons) guards the whole key list. Every dict method is overridden here, so no C-level
    path reads the keys unguarded (``clear()`` reads none).
    """

    def __init__(self, builder: ValueBuilder, raw: dict, source: Source) -> None:
        super().__init__((k, None) for k in raw)
        self._builder, self._raw, self._source = builder, raw, source
        self._all_keys_guarded = False

    def _has(self, key) -> None:
        try:
            present = key in self._raw
        except TypeError:  # unhashable: raises in the dict itself, no fact to guard
            return
        if type(key) in (str, int):
            self._builder.ctx.guard(self._source, GuardKind.HAS_KEY, (key, present))
        else:
            self._all_keys()

    def _all_keys(self) -> None:
        if not self._all_keys_guarded:
            self._all_keys_guarded = True
            self._builder.ctx.guard(self._source, GuardKind.DICT_KEYS, tuple(self._raw))

    def __getitem__(self, key):
        self._has(key)
        value = super().__getitem__(key)
        if value is None:
            value = self._builder.wrap(self._raw[key], ItemSource(self._source, key))
            super().__setitem__(key, value)
        return value

    def __contains__(self, key) -> bool:
        self._has(key)
        return super().__contains__(key)

    def __setitem__(self, key, value) -> None:
        self._has(key)
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._has(key)
        super().__delitem__(key)

    def __len__(self) -> int:
        if not self._all_keys_guarded:  # the whole key list, once guarded, fixes the length
            self._builder.ctx.guard(self._source, GuardKind.LENGTH, len(self._raw))
        return super().__len__()

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            super().pop(key)
            return value
        return super().pop(key, *default)

    def setdefault(self, key, default=None):
        if key in self:
            return self[key]
        super().__setitem__(key, default)
        return default

    def __iter__(self):
        self._all_keys()
        return iter(list(super().keys()))

    def keys(self):
        self._all_keys()
        return super().keys()

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

    def copy(self):
        return {k: self[k] for k in self}

    def __reversed__(self):
        self._all_keys()
        return reversed(list(super().keys()))


def _guarding_all_keys(name: str):
    """``dict.<name>`` on a ``_LazyDict``, after guarding the whole key list."""
    method = getattr(dict, name)

    def whole(self, *args, **kwargs):
        self._all_keys()
        return method(self, *args, **kwargs)

    whole.__name__ = name
    return whole


#: The other dict methods that see every key at once, or their order (C code, no ``__iter__``).
WHOLE_DICT_METHODS = (
    "__eq__",
    "__ne__",
    "__or__",
    "__ror__",
    "__ior__",
    "__repr__",
    "__reduce__",
    "__reduce_ex__",
    "popitem",
    "update",
)
for _name in WHOLE_DICT_METHODS:
    setattr(_LazyDict, _name, _guarding_all_keys(_name))
