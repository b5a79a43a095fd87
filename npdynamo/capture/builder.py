"""Wrapping: turns a Python object read from the frame into a tracked value plus its guards.

Every object the translator reads from outside (an argument, a global, an attribute, a closure
cell, a container item) passes through ``ValueBuilder.wrap`` with the source it was read from.
Arrays become graph placeholders guarded on type, dtype and shape; Python constants are guarded
on value; functions and modules on identity; containers on type and length or keys.
"""

from __future__ import annotations

import types

import numpy as np

from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.guards import AttrSource, GuardKind, ItemSource, Source
from npdynamo.capture.values import (
    Const,
    DictValue,
    ExternalCell,
    FunctionValue,
    ListValue,
    TupleValue,
    UserObjectValue,
    Value,
)

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

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._by_source: dict[Source, Value] = {}
        self._by_id: dict[int, tuple] = {}
        self._cells: dict[int, ExternalCell] = {}

    def wrap(self, value: object, source: Source | None) -> Value:
        if source is None:
            return self._wrap_unguarded(value)
        cached = self._by_source.get(source)
        if cached is not None:
            return cached
        if isinstance(value, MUTABLE_TYPES) or _is_user_object(value):
            # one tracked value per object, so a mutation is seen through every name for it;
            # later calls must pass the same object in both places
            seen = self._by_id.get(id(value))
            if seen is not None:
                first_value, first_source, _keepalive = seen
                self.ctx.guard(source, GuardKind.ALIAS, first_source)
                self._by_source[source] = first_value
                return first_value
        wrapped = self._wrap(value, source)
        self._by_source[source] = wrapped
        if isinstance(value, MUTABLE_TYPES) or _is_user_object(value):
            self._by_id[id(value)] = (wrapped, source, value)
        return wrapped

    def external_cell(self, cell, source: Source | None) -> ExternalCell:
        """One tracked value per cell object: a store through one name is seen by all."""
        seen = self._cells.get(id(cell))
        if seen is None:
            seen = self._cells[id(cell)] = ExternalCell(cell, source)
        return seen

    def arrays_read(self) -> list[tuple[Source, object]]:
        """(source, array) of every input array seen, for the aliasing checks of writes."""
        return [(src, obj) for _v, src, obj in self._by_id.values() if type(obj) is np.ndarray]

    def _wrap_unguarded(self, value: object) -> Value:
        if isinstance(value, types.FunctionType) and not is_trusted_name(value):
            return self.function(value, None)
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
        if kind in (bool, type(None)) or value is Ellipsis:
            ctx.guard(source, GuardKind.CONSTANT, value)
            return Const(value, source)
        if isinstance(value, (np.floating, np.complexfloating)):
            # data (a loss, a max): a graph input, so a new value does not recompile
            ctx.guard(source, GuardKind.TYPE, kind)
            from npdynamo.capture.values import ArrayValue

            return ArrayValue(ctx.add_placeholder(value, source), source)
        if kind in (int, float, complex, str, bytes, range, slice) or isinstance(value, np.generic):
            ctx.guard(source, GuardKind.CONSTANT, value)
            return Const(value, source)
        if isinstance(value, np.dtype):
            ctx.guard(source, GuardKind.CONSTANT, value)
            return Const(value, source)
        if kind is tuple or kind is list:
            ctx.guard(source, GuardKind.TYPE, kind)
            loader = lambda: [self.wrap(v, ItemSource(source, i)) for i, v in enumerate(value)]
            if kind is tuple:
                ctx.guard(source, GuardKind.LENGTH, len(value))
                return TupleValue(None, source, loader=loader, length=len(value))
            lst = ListValue(None, source, fresh=False, loader=loader, length=len(value))
            # the length is a fact only once the items are used: appending alone needs no guard
            lst.on_load = lambda: ctx.guard(source, GuardKind.LENGTH, len(value))
            return lst
        if kind is dict:
            if not all(type(k) in (str, int) for k in value):
                raise ctx.unsupported(f"dict {source.short()} has keys that are not str or int")
            ctx.guard(source, GuardKind.TYPE, dict)
            ctx.guard(source, GuardKind.DICT_KEYS, tuple(value))
            return DictValue(
                None,
                source,
                fresh=False,
                length=len(value),
                loader=lambda: _LazyDict(self, value, source),
            )
        if kind in ITERATOR_TYPES:
            from npdynamo.capture.guards import RemainingSource, remaining_items
            from npdynamo.capture.values import IteratorValue

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
        # only a function can be a grad wrapper: asking any other object for the attribute
        # could run its __getattr__
        spec = (
            getattr(value, "__npdynamo_grad__", None)
            if isinstance(value, types.FunctionType)
            else None
        )
        if spec is not None:  # a value_and_grad(loss) wrapper made outside the function
            from npdynamo.capture.autodiff import GradFunctionValue

            ctx.guard(source, GuardKind.ID, value)
            return GradFunctionValue(self.wrap(spec.fn, AttrSource(AttrSource(
                source, "__npdynamo_grad__"), "fn")), spec.argnums, spec.single_argnum,
                spec.has_aux, spec.with_value)
        if is_tracer(value):  # inside an outer grad: the graph becomes a differentiable step
            if type(value.value) is not np.ndarray:
                raise ctx.unsupported(f"{source.short()} is a traced scalar or nested tracer")
            ctx.guard(source, GuardKind.TYPE, kind)
            ctx.guard(source, GuardKind.DTYPE, value.dtype)
            ctx.guard(source, GuardKind.SHAPE, value.shape)
            from npdynamo.capture.values import ArrayValue

            return ArrayValue(ctx.add_placeholder(value, source), source)
        if isinstance(value, types.FunctionType) and not is_trusted_name(value):
            return self.function(value, source)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            from npdynamo.capture.values import BoundMethodValue

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

    def array(self, value: np.ndarray, source: Source) -> Value:
        from npdynamo.capture.values import ArrayValue

        ctx = self.ctx
        if value.dtype.hasobject or value.dtype.fields is not None:
            raise ctx.unsupported(
                f"{source.short()} has dtype {value.dtype}; only numeric and bool arrays "
                "can be captured"
            )
        ctx.guard(source, GuardKind.TYPE, np.ndarray)
        ctx.guard(source, GuardKind.DTYPE, value.dtype)
        ctx.guard(source, GuardKind.SHAPE, value.shape)
        return ArrayValue(ctx.add_placeholder(value, source), source)

    def function(self, fn: types.FunctionType, source: Source | None) -> FunctionValue:
        from npdynamo.capture.frames import is_disabled
        from npdynamo.capture.frames.dispatch import original_function

        original = original_function(fn)
        if original is not None:  # a compiled function called from a compiled one: inline it
            if source is not None:
                self.ctx.guard(source, GuardKind.ID, fn)
            return self.function(original, None)

        if is_disabled(fn):
            raise self.ctx.unsupported(
                f"{fn.__qualname__} is marked npdynamo.disable, so it is never captured"
            )
        if source is not None:
            self.ctx.guard(source, GuardKind.ID, fn)
        defaults = tuple(
            self.wrap(v, ItemSource(AttrSource(source, "__defaults__"), i) if source else None)
            for i, v in enumerate(fn.__defaults__ or ())
        )
        kwdefaults = {
            k: self.wrap(v, ItemSource(AttrSource(source, "__kwdefaults__"), k) if source else None)
            for k, v in (fn.__kwdefaults__ or {}).items()
        }
        closure = tuple(
            self.external_cell(
                cell,
                AttrSource(ItemSource(AttrSource(source, "__closure__"), i), "cell_contents")
                if source
                else None,
            )
            for i, cell in enumerate(fn.__closure__ or ())
        )
        if closure and source is None:
            # Without a source a later call could not re-read the cells: refuse rather than guess.
            raise CaptureUnsupported(f"closure {fn.__qualname__} reached without a source")
        return FunctionValue(
            fn.__code__, fn.__globals__, fn.__name__, defaults, kwdefaults, closure, fn, source
        )


#: Unbound methods of builtin types (``list.append``): a method pair's first half after a break.
DESCRIPTOR_TYPES = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
#: Objects whose identity matters when mutated: aliasing between sources is tracked for them.
MUTABLE_TYPES = (np.ndarray, list, dict, set)


def _is_user_object(value: object) -> bool:
    return type(value).__module__ not in ("builtins", "numpy") and not isinstance(
        value, (types.ModuleType, types.FunctionType, type, types.MethodType)
    )


def is_tracer(value: object) -> bool:
    from npdynamo.autograd.tracer import Tracer

    return isinstance(value, Tracer)


def is_trusted_name(value: object) -> bool:
    module = getattr(value, "__module__", "") or ""
    return module.split(".")[0] in TRUSTED_MODULES


class _LazyDict(dict):
    """The items of a dict read from the frame: each value is wrapped on first access."""

    def __init__(self, builder: ValueBuilder, raw: dict, source: Source) -> None:
        super().__init__((k, None) for k in raw)
        self._builder, self._raw, self._source = builder, raw, source

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if value is None:
            value = self._builder.wrap(self._raw[key], ItemSource(self._source, key))
            super().__setitem__(key, value)
        return value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            super().pop(key)
            return value
        return super().pop(key, *default)

    def copy(self):
        return {k: self[k] for k in self}

    def setdefault(self, key, default=None):
        if key in self:
            return self[key]
        super().__setitem__(key, default)
        return default

    def __iter__(self):
        return iter(list(super().keys()))
