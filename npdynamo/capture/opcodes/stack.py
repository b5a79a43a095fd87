"""Handlers for stack shuffling, loads and stores of locals, globals, cells and attributes."""

from __future__ import annotations

import builtins
import types
import weakref

from npdynamo.capture import bytecode as bc
from npdynamo.capture.absent_attributes import class_lookup
from npdynamo.capture.builder import constant_value
from npdynamo.capture.calls import class_attribute, get_attr, load_method
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.generators import GeneratorValue
from npdynamo.capture.guards import AttrSource, GlobalSource, ItemSource
from npdynamo.capture.opcodes.layout import push_method, push_with_null
from npdynamo.capture.registry import handler
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import (
    DELETED,
    NULL,
    CellValue,
    ComprehensionSave,
    Const,
    DictValue,
    ExternalCell,
    ListValue,
    NullValue,
    TupleValue,
    UserObjectValue,
    Value,
)


# -- no-ops and stack shuffling --------------------------------------------------------------
@handler("NOP", "RESUME", "PRECALL", "COPY_FREE_VARS", "EXTENDED_ARG", "CACHE")
def _nop(frame: Frame, ins):
    pass


@handler("POP_TOP")
def _pop_top(frame: Frame, ins):
    frame.pop()


@handler("PUSH_NULL")
def _push_null(frame: Frame, ins):
    frame.push(NULL)


@handler("COPY")
def _copy(frame: Frame, ins):
    frame.push(frame.stack[-ins.arg])


@handler("SWAP")
def _swap(frame: Frame, ins):
    s = frame.stack
    s[-1], s[-ins.arg] = s[-ins.arg], s[-1]


# -- loads and stores ------------------------------------------------------------------------
@handler("LOAD_CONST")
def _load_const(frame: Frame, ins):
    value = constant_value(ins.arg)
    if isinstance(value, TupleValue) and ins.arg:
        # the code's own tuple, the same object each time the instruction runs (``is``)
        frame.ctx.builder.remember_origin(value, ins.arg)
    frame.push(value)


def _load_fast(frame: Frame, name):
    if isinstance(name, (bc.CellVar, bc.FreeVar)):  # 3.13 spells LOAD_CLOSURE this way
        frame.push(frame.cells[name.name])
        return
    if name not in frame.locals and name in frame.cells and name in frame.code.co_cellvars:
        # 3.13's LOAD_CLOSURE of an argument that is also a cell decodes as a plain name (its
        # value is read with LOAD_DEREF, never LOAD_FAST)
        frame.push(frame.cells[name])
        return
    if name not in frame.locals:
        raise UserCodeRaises(
            UnboundLocalError(
                f"cannot access local variable '{name}' where it is not associated with a value"
            )
        )
    frame.push(frame.locals[name])


@handler("LOAD_FAST", "LOAD_FAST_CHECK")
def _load_fast_h(frame: Frame, ins):
    _load_fast(frame, ins.arg)


@handler("LOAD_FAST_AND_CLEAR", since=(3, 12))
def _load_fast_and_clear(frame: Frame, ins):
    # comprehensions inlined by PEP 709 save the outer binding (or NULL when unbound)
    frame.push(ComprehensionSave(frame.locals.pop(ins.arg, NULL)))


@handler("LOAD_FAST_LOAD_FAST", since=(3, 13))
def _load_fast_load_fast(frame: Frame, ins):
    for name in ins.arg:
        _load_fast(frame, name)


#: Objects whose end Python code can see happen: a generator's ``finally`` runs when it is
#: collected (and a suspended coroutine's).
FINALISED_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
#: The most items of a container from outside searched for such objects when it is dropped.
MAX_SEARCHED = 1000


def _death_is_observable(frame: Frame, value: Value, depth: int = 0) -> bool:
    """Could dropping a reference to ``value`` run code or change what Python code sees: a
    ``__del__``, a weak reference (its callback, or reading it), a generator's ``finally``?
    A graph cannot order that against its own effects, so such a drop is a graph break."""
    if isinstance(value, GeneratorValue):
        return value.started and not value.finished
    if isinstance(value, UserObjectValue):
        return _object_death_is_observable(value.obj)
    if isinstance(value, (ListValue, TupleValue, DictValue)) and depth < 2:
        if not value.loaded:  # from outside, not used yet: look at the object (no guard)
            origin = frame.ctx.builder.origin(value)
            items = origin[0] if origin is not None else ()
            items = list(items.values() if isinstance(items, dict) else items)
            # a long one is not searched: when in doubt, a graph break
            return len(items) > MAX_SEARCHED or any(map(_object_death_is_observable, items))
        items = value.items.values() if isinstance(value.items, dict) else value.items
        return any(_death_is_observable(frame, v, depth + 1) for v in items
                   if isinstance(v, Value))
    return False


def _object_death_is_observable(obj: object) -> bool:
    return (isinstance(obj, FINALISED_TYPES) or weakref.getweakrefcount(obj) > 0
            or class_attribute(obj, "__del__") is not None)


def _drop(frame: Frame, name: str) -> None:
    """``name`` is about to be overwritten or deleted: a graph break first if that may be the
    end of an object Python code can see end (it then happens natively, where Python has it;
    the frame's own generated names only move values that are on the stack)."""
    old = frame.locals.get(name)
    if old is not None and not name.startswith("___") and _death_is_observable(frame, old):
        raise frame.unsupported(
            f"dropping {name!r}, which may be the last reference to an object whose end "
            "Python code can see (a __del__, a weak reference or a generator's finally)",
            "the rest is still compiled after the break",
        )


@handler("STORE_FAST")
def _store_fast(frame: Frame, ins):
    _drop(frame, ins.arg)
    value = frame.pop()
    if isinstance(value, ComprehensionSave):
        value = value.saved
    if isinstance(value, NullValue):
        frame.locals.pop(ins.arg, None)
    else:
        frame.locals[ins.arg] = value


@handler("STORE_FAST_LOAD_FAST", since=(3, 13))
def _store_fast_load_fast(frame: Frame, ins):
    store, load = ins.arg
    _drop(frame, store)
    frame.locals[store] = frame.pop()
    _load_fast(frame, load)


@handler("STORE_FAST_STORE_FAST", since=(3, 13))
def _store_fast_store_fast(frame: Frame, ins):
    first, second = ins.arg
    _drop(frame, first)
    _drop(frame, second)
    frame.locals[first] = frame.pop()
    frame.locals[second] = frame.pop()


@handler("DELETE_FAST")
def _delete_fast(frame: Frame, ins):
    _drop(frame, ins.arg)
    frame.locals.pop(ins.arg, None)


@handler("LOAD_GLOBAL")
def _load_global(frame: Frame, ins):
    push_null, name = ins.arg
    frame.push_null_for_global = push_null
    value = _global_value(frame, name)
    if push_null:
        push_with_null(frame, value)
    else:
        frame.push(value)


def _global_value(frame: Frame, name: str) -> Value:
    ctx = frame.ctx
    if frame.globals is ctx.fn.__globals__ and name in ctx.side_effects.global_stores:
        return ctx.side_effects.global_stores[name]
    if name in frame.globals:
        if frame.globals is ctx.fn.__globals__:
            return ctx.builder.wrap(frame.globals[name], GlobalSource(name))
        # a global of an inlined function from another module: read through that function
        src = frame.func.source
        source = ItemSource(AttrSource(src, "__globals__"), name) if src is not None else None
        return ctx.builder.wrap(frame.globals[name], source)
    if hasattr(builtins, name):
        return Const(getattr(builtins, name))
    raise UserCodeRaises(NameError(f"name '{name}' is not defined"))


@handler("STORE_GLOBAL")
def _store_global(frame: Frame, ins):
    if frame.globals is not frame.ctx.fn.__globals__:
        raise frame.unsupported(
            f"assigning the global {ins.arg!r} of another module", kind="side_effect"
        )
    frame.ctx.side_effects.global_stores[ins.arg] = frame.pop()


@handler("DELETE_GLOBAL")
def _delete_global(frame: Frame, ins):
    raise frame.unsupported(f"del of the global {ins.arg!r}", kind="side_effect")


@handler("LOAD_DEREF")
def _load_deref(frame: Frame, ins):
    frame.push(frame.load_cell(ins.arg.name))


@handler("LOAD_CLOSURE", until=(3, 12))
def _load_closure(frame: Frame, ins):
    frame.push(frame.cells[ins.arg.name])


@handler("STORE_DEREF")
def _store_deref(frame: Frame, ins):
    cell = frame.cells.get(ins.arg.name)
    value = frame.pop()
    if isinstance(cell, ExternalCell):
        # a cell of a function outside the capture (nonlocal): written back after the graph
        if cell.source is None:
            raise frame.unsupported(
                f"assigning the closure variable {ins.arg.name!r}", kind="side_effect"
            )
        frame.ctx.builder.cell_written(cell)
        cell.contents = value
        frame.ctx.side_effects.record("cell_set", None, cell.source.expr(), value)
        return
    cell.contents = value


@handler("MAKE_CELL")
def _make_cell(frame: Frame, ins):
    name = ins.arg.name
    frame.cells[name] = CellValue(frame.locals.pop(name, None), name)


# -- attributes ------------------------------------------------------------------------------
@handler("LOAD_ATTR", until=(3, 11))
def _load_attr_311(frame: Frame, ins):
    frame.push(get_attr(frame, frame.pop(), ins.arg))


@handler("LOAD_METHOD", until=(3, 11))
def _load_method_311(frame: Frame, ins):
    method, self_value = load_method(frame, frame.pop(), ins.arg)
    push_method(frame, method, self_value)


@handler("LOAD_ATTR", since=(3, 12))
def _load_attr_312(frame: Frame, ins):
    is_method, name = ins.arg
    obj = frame.pop()
    if is_method:
        method, self_value = load_method(frame, obj, name)
        push_method(frame, method, self_value)
    else:
        frame.push(get_attr(frame, obj, name))


@handler("STORE_ATTR")
def _store_attr(frame: Frame, ins):
    obj = frame.pop()
    value = frame.pop()
    _check_plain_attributes(frame, obj, ins.arg)
    obj.attrs[ins.arg] = value
    frame.ctx.side_effects.record("attr_set", obj, ins.arg, value)


@handler("DELETE_ATTR")
def _delete_attr(frame: Frame, ins):
    obj = frame.pop()
    _check_plain_attributes(frame, obj, ins.arg)
    if ins.arg not in obj.attrs and ins.arg not in getattr(obj.obj, "__dict__", {}):
        raise UserCodeRaises(AttributeError(ins.arg))
    obj.attrs[ins.arg] = DELETED
    frame.ctx.side_effects.record("attr_del", obj, ins.arg)


def _check_plain_attributes(frame: Frame, obj: Value, name: str) -> None:
    """Stores are replayed with setattr: only plain instance attributes of user objects."""
    if not isinstance(obj, UserObjectValue) or obj.source is None:
        raise frame.unsupported(
            f"assigning the attribute .{name} of a {obj.kind()}", kind="side_effect"
        )
    klass = type(obj.obj)
    custom = klass.__setattr__ is not object.__setattr__ or klass.__delattr__ is not (
        object.__delattr__
    )
    descriptor = hasattr(class_attribute(obj.obj, name), "__set__")
    if custom or descriptor or not hasattr(obj.obj, "__dict__"):
        raise frame.unsupported(
            f"assigning .{name}: {klass.__qualname__} customises attribute assignment",
            kind="side_effect",
        )
    # and a later call must find it so: the class may be given a data descriptor of that name
    # or a __setattr__ of its own, which the replayed store would run
    for looked_up in (name, "__setattr__", "__delattr__"):
        class_lookup(frame, obj.obj, obj.source, looked_up)
