"""The guards behind what attribute lookup on an object found missing or found on its class.

An attribute the capture finds missing is a fact like any value it reads: ``getattr(o, "k", 1)``
and ``hasattr(o, "k")`` turn the ``AttributeError`` into a value the graph computes with, so an
entry captured while ``o.k`` was missing must not serve a call where ``o`` has it. Before
``get_attr`` raises that error, ``missing_attribute`` guards the absence in every namespace
Python's lookup searched that a later call could change: the instance's ``__dict__`` and the
``__dict__`` of each class in the MRO that is not a builtin (builtin types cannot gain
attributes). Where the absence cannot be guarded (an empty slot, an object with no source), the
read is a graph break: Python then runs the line and raises or not, as it would.

The same holds for a method found on the class (``class_function``): the entry inlines that
function, so it must not serve a call where the class holds another one, or where the instance
has since been given an attribute of that name, which Python would read first. A static or class
method, or a property, is guarded the same way on the descriptor itself (``descriptor_function``),
and its function on its code and defaults, as any function read from outside. And for a field
of a namedtuple (``namedtuple_field``): ``p.x`` is ``p[i]`` while the class's ``x`` is the
field's descriptor and the class keeps tuple's own attribute lookup and item access.
"""

from __future__ import annotations

import collections
import types

from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.guards import AttrSource, GuardKind, ItemSource, Source
from npdynamo.capture.hooks.compiled_function import CompiledFunction
from npdynamo.capture.hooks.dispatch import original_function
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import UserObjectValue, Value


def missing_attribute(frame: Frame, obj: object, source: Source | None,
                      error: AttributeError) -> Exception:
    """``error`` (reading ``name`` of ``obj``, read from ``source``, raised it), to raise as the
    user's exception once the absence is guarded; a graph break where it cannot be."""
    name = error.name if getattr(error, "name", None) else _name_of(error)
    guards = _absence_sources(obj, source)
    if name is None or guards is None:
        return _unguardable(frame, obj, error)
    for where in guards:
        frame.ctx.guard(where, GuardKind.HAS_KEY, (name, False))
    return UserCodeRaises(error)


def class_attribute_of_type(kind: type, name: str) -> object:
    """What Python's lookup finds for ``name`` in the ``__dict__`` of ``kind``'s MRO (None)."""
    for klass in kind.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def class_attribute(obj: object, name: str) -> object:
    """``class_attribute_of_type`` of ``obj``'s type, a compiled function in a class body read
    as the function it compiles (it binds, and is inlined, as that one)."""
    attr = class_attribute_of_type(type(obj), name)
    return (original_function(attr) or attr) if isinstance(attr, CompiledFunction) else attr


def class_function(frame: Frame, obj: object, source: Source | None, name: str) -> Source | None:
    """Guard that ``obj.name`` still finds the method it found on ``obj``'s class (the same
    object in the same class's ``__dict__``, ``class_lookup``: not the class's attribute read,
    which a static method of the same function would pass) and no instance attribute of that
    name; where the class's object is read (None without a source). An object with no source
    is one the capture made, or reached through values no guard re-reads: its own attributes
    are modelled from the start, and nothing is guarded for it."""
    if source is None:
        return None
    # the class's own object: the function itself, or a compiled function in the class body
    # (inlined as its original)
    found = class_lookup(frame, obj, source, name)
    if found is None:
        raise frame.unsupported(f"the method .{name} cannot be guarded")
    if hasattr(obj, "__dict__"):
        frame.ctx.guard(AttrSource(source, "__dict__"), GuardKind.HAS_KEY, (name, False))
    return found


def descriptor_function(frame: Frame, obj: UserObjectValue, name: str, member: str,
                        shadowed_by_instance: bool) -> Value:
    """The function behind the descriptor ``obj.name`` finds on its class (``member``: a static
    or class method's ``__func__``, a property's ``fget``), guarded to stay so: no class before
    its owner in the MRO has gained the name, the owner's ``__dict__`` holds the same
    descriptor (its members are read-only: fixed with it), the function's code and defaults
    are the same, and, for a descriptor an instance attribute would shadow, the instance has no
    attribute of that name. Nothing is guarded for an object with no source (see
    ``class_function``)."""
    fn = getattr(class_attribute_of_type(type(obj.obj), name), member)
    if obj.source is None:
        return frame.ctx.builder.class_member(fn, None)
    found = class_lookup(frame, obj.obj, obj.source, name)
    if found is None:
        raise frame.unsupported(f"the class attribute .{name} cannot be guarded")
    if shadowed_by_instance and hasattr(obj.obj, "__dict__"):
        frame.ctx.guard(AttrSource(obj.source, "__dict__"), GuardKind.HAS_KEY, (name, False))
    return frame.ctx.builder.class_member(fn, AttrSource(found, member))


def class_lookup(frame: Frame, obj: object, source: Source, name: str) -> Source | None:
    """Guard what looking ``name`` up in ``obj``'s class finds (the lookup of a special method,
    which skips the instance): no class before the owner in the MRO has gained the name, and
    the owner's ``__dict__`` holds the same object, whose source is returned; when no class
    has it, that none has gained it (None)."""
    # the class, known by the object's type guard, is one source for all its objects; its
    # MRO starts with it (else the MRO's first class, read through ``__class__``)
    klass = frame.ctx.guards.class_of(source, obj)
    mro = AttrSource(klass or AttrSource(source, "__class__"), "__mro__")
    for i, base in enumerate(type(obj).__mro__):
        namespace = AttrSource(klass if i == 0 and klass else ItemSource(mro, i), "__dict__")
        if name in base.__dict__:
            found = ItemSource(namespace, name)
            if base.__module__ != "builtins":
                frame.ctx.guard(found, GuardKind.ID, base.__dict__[name])
            return found
        if base.__module__ != "builtins":  # (builtin types cannot gain attributes)
            frame.ctx.guard(namespace, GuardKind.HAS_KEY, (name, False))
    return None


def class_method(frame: Frame, obj: UserObjectValue, name: str,
                 fn: types.FunctionType) -> Value:
    """The function ``fn`` that ``obj.name`` finds on ``obj``'s class, guarded to stay so."""
    found = class_function(frame, obj.obj, obj.source, name)
    # read again where the class holds it (the guards above pin it there), unless the class
    # holds a compiled function, inlined as its original
    plain = class_attribute_of_type(type(obj.obj), name) is fn
    return frame.ctx.builder.class_member(fn, found if plain else None)


def special_method(frame: Frame, obj: UserObjectValue, name: str) -> Value:
    """The function a special method's lookup (on the class, not the instance) finds for
    ``obj``, guarded to stay so: the class may be given another, or its code replaced."""
    method = class_attribute(obj.obj, name)
    found = None if obj.source is None else class_lookup(frame, obj.obj, obj.source, name)
    raw = class_attribute_of_type(type(obj.obj), name)
    return frame.ctx.builder.class_member(method, found if raw is method else None)


#: The descriptor ``collections.namedtuple`` (and ``typing.NamedTuple``) puts on its class for
#: each field: ``p.x`` is ``p[i]``. A data descriptor, so no instance ``__dict__`` shadows it.
TUPLE_GETTER = type(collections.namedtuple("_Probe", "x").x)
#: What a namedtuple class inherits from tuple; a class that overrides one is not modelled.
_TUPLE_SLOTS = ("__getattribute__", "__getitem__", "__len__")


def namedtuple_field(frame: Frame, obj: tuple, source: Source | None, name: str) -> Value | None:
    """``obj.name`` when ``name`` is a field of ``obj``'s namedtuple class: its item, read
    through its source, with the guards that keep it so (the class's attribute of that name is
    that field's descriptor, and tuple's own lookup and item access are its); None where it is
    not, or cannot be guarded."""
    klass = type(obj)
    if source is None or type(klass) is not type:
        return None
    found = class_attribute_of_type(klass, name)
    if type(found) is not TUPLE_GETTER or getattr(klass, name, None) is not found:
        return None
    if class_attribute_of_type(klass, "__getattr__") is not None:
        return None
    for slot in _TUPLE_SLOTS:
        if getattr(klass, slot) is not getattr(tuple, slot):
            return None
    index = found.__reduce__()[1][0]
    if not 0 <= index < len(obj):  # Python raises IndexError: the line runs in Python
        return None
    owner = AttrSource(source, "__class__")
    frame.ctx.guard(AttrSource(owner, name), GuardKind.ID, found)
    for slot in _TUPLE_SLOTS:
        frame.ctx.guard(AttrSource(owner, slot), GuardKind.ID, getattr(tuple, slot))
    return frame.ctx.builder.wrap(tuple.__getitem__(obj, index), ItemSource(source, index))


def no_attribute(obj: object, name: str) -> AttributeError:
    """The error Python's lookup raises for an instance with no attribute ``name``."""
    return AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'",
                          name=name, obj=obj)


def _absence_sources(obj: object, source: Source | None) -> list[Source] | None:
    """The namespaces (as sources of their ``__dict__``) whose lacking the name makes it
    missing; None where some namespace cannot be read by a guard."""
    if type(obj).__module__ == "builtins" and not isinstance(obj, (type, types.ModuleType)):
        # an int, a str, a builtin function: its type alone fixes its attributes (and the
        # type is guarded with the value)
        return [] if not hasattr(obj, "__dict__") else None
    if source is None:
        return None
    if isinstance(obj, types.ModuleType):
        # a module's __getattr__ (PEP 562) is user code: what it answers is not a guarded fact
        return None if "__getattr__" in vars(obj) else [AttrSource(source, "__dict__")]
    if isinstance(obj, type):
        if type(obj) is not type:  # a metaclass's attributes are searched too
            return None
        return _class_dicts(obj, AttrSource(source, "__mro__"))
    if getattr(type(obj), "__slots__", None) is not None and not hasattr(obj, "__dict__"):
        return None  # an empty slot: no mapping to guard
    own = [AttrSource(source, "__dict__")] if hasattr(obj, "__dict__") else []
    if type(type(obj)) is not type:
        return None
    return own + _class_dicts(type(obj), AttrSource(AttrSource(source, "__class__"), "__mro__"))


def _class_dicts(klass: type, mro: Source) -> list[Source]:
    """The ``__dict__`` of each class in ``klass``'s MRO that is not a builtin."""
    return [AttrSource(ItemSource(mro, i), "__dict__")
            for i, base in enumerate(klass.__mro__) if base.__module__ != "builtins"]


def _name_of(error: AttributeError) -> str | None:
    """The attribute name of an ``AttributeError`` made without ``name=`` (the capture's own)."""
    text = str(error)
    if text.endswith("'") and " attribute '" in text:
        return text.rsplit(" attribute '", 1)[1][:-1]
    return None


def _unguardable(frame: Frame, obj: object, error: AttributeError) -> Exception:
    return frame.unsupported(
        f"the attribute is missing ({error}), and whether it stays missing cannot be guarded"
        f" on a {type(obj).__qualname__}",
        "the line runs in Python")


__all__ = [
    "class_attribute",
    "class_attribute_of_type",
    "class_function",
    "missing_attribute",
    "namedtuple_field",
    "no_attribute",
]
