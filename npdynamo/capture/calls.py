"""Calls and attribute reads under capture: NumPy functions become ops, user functions are inlined.

The opcode handlers reduce every call form (function, method pair, keyword names, ``*args``) to
``call_value(frame, fn, args, kwargs)``. NumPy callables and array methods are normalised by
``ops`` into canonical ops and recorded as graph nodes; Python builtins are evaluated on tracked
values (``builtin_calls.py``, looked up in ``registry.BUILTINS``); user functions run as inlined
frames.
"""

from __future__ import annotations

import types
import warnings

import numpy as np

from npdynamo import ops
from npdynamo.capture.absent_attributes import (
    class_attribute,
    class_attribute_of_type,
    class_method,
    descriptor_function,
    missing_attribute,
    namedtuple_field,
    no_attribute,
    special_method,
)
from npdynamo.capture.builder import (
    constant_value,
    is_constant,
    is_trusted_module,
    is_trusted_name,
)
from npdynamo.capture.bytecode.code import CO_GENERATOR, arg_layout
from npdynamo.capture.containers import container_method, items_of
from npdynamo.capture.descriptors import user_descriptor
from npdynamo.capture.errors import UserCodeRaises, python_raised
from npdynamo.capture.generators import GeneratorValue
from npdynamo.capture.guards import AttrSource
from npdynamo.capture.hooks.disable import is_disabled
from npdynamo.capture.masked import MASKED_KINDS, masked_reduction
from npdynamo.capture.opcalls import (
    normalize,
    normalized_op_call,
    op_call,
    raw,
    raw_numbers,
    raw_sizes,
)
from npdynamo.capture.registry import BUILTINS, OBJECT_METHODS, VALUE_CALLS, VALUE_METHODS
from npdynamo.capture.side_effects import cast_for_inplace, write_array
from npdynamo.capture.translator import Frame
from npdynamo.capture.ufunc_methods import ufunc_method
from npdynamo.capture.values import (
    DELETED,
    NULL,
    ArrayValue,
    BoundMethodValue,
    ComputedNumberValue,
    Const,
    DictValue,
    FunctionValue,
    IteratorValue,
    ListValue,
    MethodValue,
    NamedTupleValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)
from npdynamo.ops.scalar_ops import TO_PYTHON

#: Types whose unbound methods are dispatched like method calls on the tracked value.
METHOD_OWNERS = (list, dict, set, tuple, np.ndarray)
#: Array methods that hand a graph value to Python: a graph break, with this explanation.
ARRAY_TO_PYTHON = {"item", "tolist", "tobytes", "__bool__", "__float__", "__int__", "__index__"}
#: Array methods that write into the array (``__setitem__``'s ops binder is a functional form).
ARRAY_INPLACE_METHODS = {"fill", "sort", "put", "itemset", "resize", "setflags", "partition",
                         "__setitem__"}


def graph_number(frame: Frame, convert: object, array: ArrayValue) -> Value | None:
    """``float(a)``, ``int(a)`` or ``a.item()`` (``convert``: float, int or "item") of a 0-d
    graph array, as a Python number the graph computes; None where it is not one (its shape or
    dtype): the caller breaks as before."""
    op = TO_PYTHON[convert]
    if frame.ctx.differentiating:
        return None
    try:
        meta = op.infer(array.meta)
    except Exception:
        return None
    node = frame.ctx.call_op(op, (array,), {}).node
    ctx = frame.ctx
    text = "x.item()" if convert == "item" else f"{convert.__name__}() of an array"

    def refuse():
        return ctx.unsupported(
            f"the Python number made by {text} is used where Python needs its value, which "
            "only the graph's run knows",
            "keep computing with it (arithmetic stays in the graph), or accept a graph break "
            "here", kind="graph_value_to_python")

    return ComputedNumberValue(meta.type(1), node, refuse)


def as_python(frame: Frame, value: Value):
    """The plain Python object behind a tracked value built only from constants."""
    if isinstance(value, Const):
        return value.value
    if isinstance(value, TupleValue):
        return tuple(as_python(frame, v) for v in value.items)
    if isinstance(value, ListValue):
        return [as_python(frame, v) for v in value.items]
    if isinstance(value, DictValue):
        return {k: as_python(frame, v) for k, v in value.items.items()}
    raise frame.unsupported(
        f"a {value.kind()} passed where Python needs a plain value (a graph value's data is "
        "not known while capturing)"
    )


def wrap_result(value: object) -> Value:
    return constant_value(value)


# -- calls -----------------------------------------------------------------------------------
def call_value(frame: Frame, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """Call a tracked callable with tracked arguments."""
    if isinstance(fn, FunctionValue):
        return inline_call(frame, fn, args, kwargs)
    kind_call = VALUE_CALLS.get(type(fn))
    if kind_call is not None:  # a callable the translator models (a grad function)
        return kind_call(frame, fn, args, kwargs)
    if isinstance(fn, BoundMethodValue):
        if isinstance(fn.func, Const):  # a disabled method: the call below breaks
            return call_value(frame, fn.func, [fn.self_value, *args], kwargs)
        return inline_call(frame, fn.func, [fn.self_value, *args], kwargs)
    if isinstance(fn, MethodValue):
        if fn.self_value is None:
            return call_method(frame, args[0], fn.name, args[1:], kwargs)
        return call_method(frame, fn.self_value, fn.name, args, kwargs)
    if isinstance(fn, Const):
        target = fn.value
        if is_disabled(target):
            name = getattr(target, "__qualname__", None) or repr(target)
            raise frame.unsupported(
                f"{name} is marked npdynamo.disable: the call runs in Python",
                kind="disabled",
            )
        owner = getattr(target, "__objclass__", None)
        if owner in METHOD_OWNERS and args:  # list.append(lst, v) is lst.append(v)
            return call_method(frame, args[0], target.__name__, args[1:], kwargs)
        handler = BUILTINS.get(_key(target))
        if handler is not None:
            return handler(frame, target, args, kwargs)
        if (target is np.sum or target is np.mean) and len(args) == 1 and not kwargs \
                and isinstance(args[0], MASKED_KINDS):
            # np.sum(x[mask]) is x[mask].sum() for the new array the selection is
            return masked_reduction(frame, args[0], target.__name__, [], {})
        out = kwargs.get("out")
        if isinstance(out, (ArrayValue, TupleValue)):
            return _call_with_out(frame, fn, args, kwargs)
        plain = (raw_sizes if target is np.arange  # its rule takes symbolic sizes
                 else raw_numbers if target is np.array or target is np.asarray else raw)
        normalized = normalize(
            frame,
            ops.normalize_call,
            target,
            tuple(plain(a) for a in args),
            {k: plain(v) for k, v in kwargs.items()},
        )
        if normalized is not None:
            return normalized_op_call(frame, normalized)
        if isinstance(target, type) and issubclass(target, BaseException):
            if kwargs or not all(isinstance(a, Const) for a in args):
                # AttributeError(name=..., obj=...), an exception holding a list or an array:
                # made by Python, not from the constants alone
                raise frame.unsupported(f"creating a {target.__name__} with these arguments")
            return Const(_apply_exception(target, [a.value for a in args]))
        if (
            _pure_on_constants(target)
            and all(isinstance(a, Const) for a in args)
            and all(isinstance(v, Const) for v in kwargs.values())
        ):
            return wrap_result(fold_constants(
                frame, target, *(a.value for a in args), **{k: v.value for k, v in kwargs.items()}
            ))
        raise frame.unsupported(*_unknown_call_reason(target))
    if isinstance(fn, UserObjectValue):
        call = class_attribute(fn.obj, "__call__")
        if isinstance(call, types.FunctionType):
            return inline_call(frame, special_method(frame, fn, "__call__"), [fn, *args], kwargs)
    raise frame.unsupported(f"calling a {_describe(fn)} is not supported")


def fold_constants(frame: Frame, compute, *args, **kwargs) -> object:
    """``compute(*args, **kwargs)`` on constants at capture time, as the program would. A
    computation that warns (``np.int8(100) + np.int8(100)``: overflow) is a graph break, so
    Python warns at the user's line on every call, not once at capture; one that raises raises
    in the user's program."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = compute(*args, **kwargs)
        except Exception as exc:
            raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
    if caught:
        raise frame.unsupported(
            f"this line warns ({caught[0].category.__name__}: {caught[0].message}), so it runs "
            "in Python, which warns at every call",
            "nothing to do, unless the warning points at a bug",
        )
    return value


def _call_with_out(frame: Frame, fn: Const, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """``np.add(a, b, out=c)``: compute functionally, then write into ``c`` as NumPy would."""
    out = kwargs.pop("out")
    if isinstance(out, TupleValue):
        if out.length() != 1:
            raise frame.unsupported("out= with several arrays")
        out = out.items[0]
    if not isinstance(out, ArrayValue):
        raise frame.unsupported("out= that is not an array")
    result = call_value(frame, fn, args, kwargs)
    if not isinstance(result, ArrayValue):
        raise frame.unsupported("out= of a function that does not return an array")
    write_array(frame.ctx, out, cast_for_inplace(frame.ctx, result, out))
    return out


def _key(target):
    try:
        hash(target)
        return target
    except TypeError:
        return None


def _pure_on_constants(target) -> bool:
    """C callables that compute a Python value from constants without side effects."""
    if isinstance(target, type) and (issubclass(target, np.generic) or target is np.dtype):
        return True
    module = getattr(target, "__module__", None) or ""
    return module in ("math", "cmath") or (isinstance(target, np.ufunc))


def _unknown_call_reason(target) -> tuple[str, str, str]:
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    module = getattr(target, "__module__", None) or ""
    full = f"{module}.{name}" if module else name
    if target is print:
        return (
            "print() writes output, which a graph cannot hold",
            "print outside the compiled function, or accept a graph break here",
            "io",
        )
    if module.startswith("numpy.random") or module == "numpy.random.mtrand":
        return (
            f"call to {full}: only draws from a generator (rng.normal(size=...), "
            "np.random.rand(...)) are captured, not making or seeding one",
            "create the generator outside the compiled function and pass it in",
            "unknown_function",
        )
    if isinstance(target, type):
        return (
            f"creating a {full} object inside the compiled function is not supported",
            "create it outside and pass it in",
            "unsupported_construct",
        )
    return (
        f"call to {full}, a function npdynamo cannot put into a graph",
        "use numpy functions npdynamo knows, or call it outside the compiled function",
        "unknown_function",
    )


def _describe(value: Value) -> str:
    if isinstance(value, Const):
        return type(value.value).__qualname__
    if isinstance(value, UserObjectValue):
        return type(value.obj).__qualname__
    return value.kind()


def bind_arguments(frame: Frame, fn: FunctionValue, args: list[Value], kwargs: dict[str, Value]):
    """Bind a call's arguments to ``fn``'s parameters as Python would, or raise its TypeError."""
    layout = arg_layout(fn.code)
    pos_names, kw_names = layout.positional, layout.keyword_only
    nargs = len(pos_names)
    has_varargs, has_varkw = layout.varargs is not None, layout.varkw is not None
    bound: dict[str, Value] = {}
    extra_pos = args[nargs:]
    for name, value in zip(pos_names, args):
        bound[name] = value
    if extra_pos and not has_varargs:
        raise UserCodeRaises(
            TypeError(f"{fn.name}() takes {nargs} positional arguments but {len(args)} were given")
        )
    varkw: dict[str, Value] = {}
    for key, value in kwargs.items():
        if key in pos_names[layout.positional_only :] or key in kw_names:
            if key in bound:
                raise UserCodeRaises(
                    TypeError(f"{fn.name}() got multiple values for argument '{key}'")
                )
            bound[key] = value
        elif has_varkw:
            varkw[key] = value
        else:
            raise UserCodeRaises(
                TypeError(f"{fn.name}() got an unexpected keyword argument '{key}'")
            )
    defaults = fn.defaults
    first_default = nargs - len(defaults)
    for i, name in enumerate(pos_names):
        if name not in bound:
            fn.relies_on("__defaults__")  # (which parameters have one: a TypeError too)
            if i >= first_default:
                bound[name] = defaults[i - first_default]
            else:
                raise UserCodeRaises(TypeError(f"{fn.name}() missing required argument: '{name}'"))
    for name in kw_names:
        if name not in bound:
            fn.relies_on("__kwdefaults__")
            if name in fn.kwdefaults:
                bound[name] = fn.kwdefaults[name]
            else:
                raise UserCodeRaises(
                    TypeError(f"{fn.name}() missing required keyword-only argument: '{name}'")
                )
    if has_varargs:
        bound[layout.varargs] = TupleValue(list(extra_pos))
    if has_varkw:
        bound[layout.varkw] = DictValue(varkw)
    return bound


def inline_call(
    frame: Frame, fn: FunctionValue, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    """Evaluate a user function's body inside the current graph."""
    locals_ = bind_arguments(frame, fn, args, kwargs)
    if fn.code.co_flags & CO_GENERATOR:  # the body runs when the generator is iterated
        body = Frame(frame.ctx, fn, locals_, frame, generator=True)
        return GeneratorValue(body, fn, args, kwargs)
    return Frame(frame.ctx, fn, locals_, parent=frame).run()


# -- methods ---------------------------------------------------------------------------------
def call_method(
    frame: Frame, obj: Value, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value:
    if type(obj) in VALUE_METHODS:
        return VALUE_METHODS[type(obj)][1](frame, obj, name, args, kwargs)
    if isinstance(obj, ArrayValue):
        convert = {"item": "item", "__float__": float, "__int__": int}.get(name)
        if convert is not None and not args and not kwargs:
            number = graph_number(frame, convert, obj)
            if number is not None:
                return number
        if name in ARRAY_TO_PYTHON:
            raise frame.unsupported(
                f"x.{name}() turns a graph value into a Python value",
                "keep the value as an array (e.g. use np.where instead of branching on it)",
                kind="graph_value_to_python",
            )
        if name == "fill" and len(args) == 1 and not kwargs:
            setitem = ops.REGISTRY["setitem"]
            new = op_call(frame, setitem, (obj, Ellipsis, raw(args[0])), {})
            write_array(frame.ctx, obj, new)
            return Const(None)
        if name in ARRAY_INPLACE_METHODS:
            raise frame.unsupported(
                f"x.{name}() modifies an array in place; not captured yet", kind="side_effect"
            )
        plain = raw_sizes if name == "reshape" else raw  # its rule takes symbolic sizes
        normalized = normalize(
            frame,
            ops.normalize_method,
            name,
            obj,
            tuple(plain(a) for a in args),
            {k: plain(v) for k, v in kwargs.items()},
        )
        if normalized is None:
            raise frame.unsupported(f"the array method .{name}() is not supported")
        return normalized_op_call(frame, normalized)
    if isinstance(obj, (ListValue, TupleValue, DictValue, SetValue)):
        return container_method(frame, obj, name, args, kwargs)
    if isinstance(obj, Const) and isinstance(obj.value, np.ufunc):
        return ufunc_method(frame, obj.value, name, args, kwargs)
    if isinstance(obj, Const) and is_constant(obj.value):
        # str.join, int.bit_length, dtype methods...: computed on the plain Python values
        method = getattr(obj.value, name, None)
        if method is None:
            raise UserCodeRaises(
                AttributeError(f"'{type(obj.value).__name__}' object has no attribute '{name}'")
            )
        if name == "join" and len(args) == 1:  # join takes any iterable, as a list first
            args = [ListValue(items_of(frame, args[0]))]
        plain_args = [as_python(frame, a) for a in args]
        plain_kwargs = {k: as_python(frame, v) for k, v in kwargs.items()}
        try:
            result = method(*plain_args, **plain_kwargs)
        except Exception as exc:
            raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)
        return wrap_result(result)
    if isinstance(obj, UserObjectValue) and type(obj.obj) in OBJECT_METHODS:
        result = OBJECT_METHODS[type(obj.obj)][1](frame, obj, name, args, kwargs)
        if result is not None:
            return result
    fn = get_attr(frame, obj, name)
    if isinstance(fn, MethodValue) and fn.self_value is obj and fn.name == name:
        # no kind models this method: calling it again would only come back here
        raise frame.unsupported(f"the method .{name}() of a {obj.kind()} is not supported")
    return call_value(frame, fn, args, kwargs)


#: The Python type each tracked container kind stands for.
CONTAINER_TYPES = {
    ArrayValue: np.ndarray,
    ListValue: list,
    TupleValue: tuple,
    NamedTupleValue: tuple,
    DictValue: dict,
    SetValue: set,
}


def load_method(frame: Frame, obj: Value, name: str) -> tuple[Value, Value]:
    """What ``LOAD_METHOD`` / method-form ``LOAD_ATTR`` leaves: (method, self) or (NULL, attr)."""
    if isinstance(obj, (ArrayValue, ListValue, TupleValue, DictValue, SetValue)):
        kind = CONTAINER_TYPES[type(obj)]
        # CPython's LOAD_METHOD pushes (method, self) only for a plain method of the class; a
        # classmethod (dict.fromkeys) or a static one comes bound, beside a NULL
        if isinstance(class_attribute_of_type(kind, name), METHOD_KINDS):
            return MethodValue(None, name), obj
    if isinstance(obj, UserObjectValue):
        attr = class_attribute(obj.obj, name)
        if isinstance(attr, types.FunctionType) and name not in getattr(obj.obj, "__dict__", {}):
            return class_method(frame, obj, name, attr), obj
    return NULL, get_attr(frame, obj, name)


#: Class attributes that LOAD_METHOD leaves unbound, beside their object.
METHOD_KINDS = (types.MethodDescriptorType, types.WrapperDescriptorType, types.FunctionType)


def _apply_exception(target: type, args: list) -> BaseException:
    try:
        return target(*args)
    except Exception as exc:  # SyntaxError("msg", (1, 2, 3)): its own constructor's error
        raise python_raised(exc)  # noqa: B904 - the cause is set (or exc is re-raised)


# -- attributes ------------------------------------------------------------------------------
ARRAY_CONSTANT_ATTRS = ("shape", "ndim", "size", "dtype", "itemsize", "nbytes")


def get_attr(frame: Frame, obj: Value, name: str) -> Value:
    ctx = frame.ctx
    if isinstance(obj, ArrayValue):
        meta = obj.meta
        if name == "shape":
            return TupleValue([ctx.size_value(d) for d in meta.shape])
        if name == "size":
            return ctx.size_value(meta.size)
        if name in ARRAY_CONSTANT_ATTRS:
            return Const(
                getattr(np.empty((0,), meta.dtype), name)
                if name == "itemsize"
                else {
                    "ndim": meta.ndim,
                    "size": ctx.concrete(meta.size),
                    "dtype": meta.dtype,
                    "nbytes": ctx.concrete(meta.nbytes),
                }[name]
            )
        normalized = normalize(frame, ops.normalize_attribute, name, obj)
        if normalized is not None:
            return normalized_op_call(frame, normalized)
        if callable(getattr(np.ndarray, name, None)):
            return MethodValue(obj, name)
        raise frame.unsupported(f"the array attribute .{name} is not supported")
    if isinstance(obj, Const):
        value = obj.value
        try:
            attr = getattr(value, name)
        except AttributeError as exc:
            raise missing_attribute(frame, value, obj.source, exc) from exc
        if isinstance(value, types.ModuleType):
            if is_trusted_module(value):
                if isinstance(attr, np.ndarray):
                    raise frame.unsupported(f"the module array {value.__name__}.{name}")
                return Const(attr)  # numpy's own functions stay opaque: ops or a refusal
            if obj.source is None:
                return ctx.builder.wrap(attr, None)
            return ctx.builder.wrap(attr, AttrSource(obj.source, name))
        if callable(attr) and not isinstance(value, type):
            return MethodValue(obj, name)
        if isinstance(value, type) and obj.source is not None and not is_trusted_name(value):
            # a user class's attribute (an enum member, a sentinel, a setting): the very object,
            # re-read by the guards, since the class may be given another one
            return ctx.builder.wrap(attr, AttrSource(obj.source, name))
        return (
            Const(attr)
            if is_constant(attr) or isinstance(value, type)
            else ctx.builder.wrap(attr, None)
        )
    if isinstance(obj, UserObjectValue):
        return user_attr(frame, obj, name)
    if isinstance(obj, NamedTupleValue) and name in obj.cls._fields:
        return obj.items[obj.cls._fields.index(name)]
    if isinstance(obj, (ListValue, TupleValue, DictValue, SetValue)):
        kind = CONTAINER_TYPES[type(obj)]
        if not callable(getattr(kind, name, None)):
            if hasattr(kind, name):
                raise frame.unsupported(f"reading .{name} of a {kind.__name__}")
            raise UserCodeRaises(
                AttributeError(f"'{kind.__name__}' object has no attribute '{name}'")
            )
        return MethodValue(obj, name)
    if isinstance(obj, FunctionValue) and name in ("__name__", "__qualname__", "__doc__"):
        return Const(getattr(obj.fn, name) if obj.fn else obj.name)
    if isinstance(obj, BoundMethodValue) and name in ("__self__", "__func__"):
        return obj.self_value if name == "__self__" else obj.func
    if isinstance(obj, IteratorValue):
        raise frame.unsupported("attributes of iterators are not supported")
    if name in VALUE_METHODS.get(type(obj), ((),))[0]:
        return MethodValue(obj, name)
    raise frame.unsupported(f"reading .{name} of a {_describe(obj)} is not supported")


def user_attr(frame: Frame, obj: UserObjectValue, name: str) -> Value:
    """``obj.name`` for a user object, as Python's attribute lookup would find it."""
    ctx = frame.ctx
    klass = type(obj.obj)
    if isinstance(obj.obj, tuple):  # a namedtuple's field (tuple's own lookup finds it)
        field = namedtuple_field(frame, obj.obj, obj.source, name)
        if field is not None:
            return field
    if klass.__getattribute__ is not object.__getattribute__ or class_attribute(
        obj.obj, "__getattr__"
    ) is not None:  # the class's own lookup: a metaclass's __getattr__ (EnumType's) is not it
        raise frame.unsupported(
            f"{klass.__qualname__} customises attribute access (__getattr__/__getattribute__)"
        )
    if klass in OBJECT_METHODS:
        modelled = OBJECT_METHODS[klass][0](frame, obj, name)
        if modelled is not None:
            return modelled
    if name in obj.attrs:
        if obj.attrs[name] is DELETED:
            raise UserCodeRaises(
                AttributeError(f"'{klass.__name__}' object has no attribute '{name}'")
            )
        return obj.attrs[name]
    class_attr = class_attribute(obj.obj, name)
    if isinstance(class_attr, property):
        if class_attr.fget is None:
            raise UserCodeRaises(AttributeError(f"property {name!r} has no getter"))
        getter = descriptor_function(frame, obj, name, "fget", shadowed_by_instance=False)
        return inline_call(frame, getter, [obj], {})
    instance_dict = getattr(obj.obj, "__dict__", None)
    data = hasattr(type(class_attr), "__set__") or hasattr(type(class_attr), "__delete__")
    if user_descriptor(class_attr) and (
        data or instance_dict is None or name not in instance_dict
    ):
        # its __get__ is user code (a call it logs, a value it caches): reading it here once
        # would drop that call from every run (test_dataclasses.test_getting_field_calls_get)
        raise frame.unsupported(
            f"reading .{name} runs {type(class_attr).__qualname__}.__get__, a descriptor "
            "npdynamo does not model"
        )
    if instance_dict is not None and name in instance_dict:
        value = ctx.builder.wrap(instance_dict[name], AttrSource(obj.source, name))
    elif isinstance(class_attr, types.FunctionType):
        value = BoundMethodValue(class_method(frame, obj, name, class_attr), obj)
    elif isinstance(class_attr, (staticmethod, classmethod)):
        func = descriptor_function(frame, obj, name, "__func__", shadowed_by_instance=True)
        value = func if isinstance(class_attr, staticmethod) else BoundMethodValue(func,
                                                                                  Const(klass))
    elif class_attr is not None and not hasattr(class_attr, "__get__"):
        value = ctx.builder.wrap(getattr(obj.obj, name), AttrSource(obj.source, name))
    elif hasattr(class_attr, "__get__"):
        # slots and other data descriptors: read the value, guard it like an instance attribute
        try:
            raw_value = getattr(obj.obj, name)
        except AttributeError as exc:
            raise missing_attribute(frame, obj.obj, obj.source, exc) from exc
        value = ctx.builder.wrap(raw_value, AttrSource(obj.source, name))
    else:
        raise missing_attribute(frame, obj.obj, obj.source, no_attribute(obj.obj, name))
    if not isinstance(value, BoundMethodValue):  # a method is bound anew on every read
        obj.attrs[name] = value
    return value

