"""User-defined special methods under capture: what CPython would call, inlined, or a graph break.

An operator, a truth test or ``len()`` on a user object runs that object's ``__add__``/``__radd__``,
``__eq__``, ``__bool__``, ``__len__``... in Python. Here the same protocol is followed on tracked
values: the user's method (a Python function) is inlined as any user function would be; a method
implemented in C, one set to ``None``, or a class deriving from a builtin type is a graph break,
never skipped or guessed.
"""

from __future__ import annotations

import types

from npdynamo.capture import containers
from npdynamo.capture.absent_attributes import class_lookup, special_method
from npdynamo.capture.calls import class_attribute, inline_call
from npdynamo.capture.containers import truthiness
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.identity import same_object
from npdynamo.capture.translator import Frame
from npdynamo.capture.values import Const, UserObjectValue, Value

BINARY_DUNDERS = {
    "+": "add",
    "-": "sub",
    "*": "mul",
    "/": "truediv",
    "//": "floordiv",
    "%": "mod",
    "**": "pow",
    "@": "matmul",
    "&": "and",
    "|": "or",
    "^": "xor",
    "<<": "lshift",
    ">>": "rshift",
}
#: comparison -> (its method, the reflected method CPython tries on the other operand)
COMPARE_DUNDERS = {
    "==": ("__eq__", "__eq__"),
    "!=": ("__ne__", "__ne__"),
    "<": ("__lt__", "__gt__"),
    "<=": ("__le__", "__ge__"),
    ">": ("__gt__", "__lt__"),
    ">=": ("__ge__", "__le__"),
}
#: Builtin types whose methods return NotImplemented for any operand that is not a builtin
#: number (or, for comparisons, not of their own type): they never call into a user object.
NUMBER_TYPES = (int, float, complex, bool, type(None))
COMPARE_SAFE_TYPES = (*NUMBER_TYPES, str, bytes, tuple, range)
BUILTIN_BASES = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)

NOT_IMPLEMENTED = object()


def is_user_object(value: Value) -> bool:
    return isinstance(value, UserObjectValue)


def _python_class(frame: Frame, value: Value) -> type:
    if isinstance(value, UserObjectValue):
        klass = type(value.obj)
        if issubclass(klass, BUILTIN_BASES):
            raise frame.unsupported(
                f"an operator on a {klass.__qualname__}, a subclass of a builtin type"
            )
        return klass
    if isinstance(value, Const) and isinstance(value.value, COMPARE_SAFE_TYPES):
        return type(value.value)
    raise frame.unsupported(f"an operator between a user object and a {value.kind()}")


def _call_special(frame: Frame, value: Value, name: str, args: list[Value]):
    """``type(value).name(value, *args)``; ``NOT_IMPLEMENTED`` when it returns NotImplemented
    or is not defined."""
    klass = _python_class(frame, value)
    if not isinstance(value, UserObjectValue):
        if klass in NUMBER_TYPES or name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__",
                                             "__ge__"):
            return NOT_IMPLEMENTED  # a builtin's method given a user object
        raise frame.unsupported(f"{klass.__name__}.{name} with a user object")
    method = class_attribute(value.obj, name)
    if method is None or method is getattr(object, name, None):
        _guard_lookup(frame, value, name)  # a later call must find it so too
    if method is None:
        return NOT_IMPLEMENTED
    if method is getattr(object, name, None):
        return _object_default(frame, value, name, args)
    if not isinstance(method, types.FunctionType):
        raise frame.unsupported(
            f"{klass.__qualname__}.{name} is not a Python function, so it cannot be inlined"
        )
    result = inline_call(frame, special_method(frame, value, name), [value, *args], {})
    if isinstance(result, Const) and result.value is NotImplemented:
        return NOT_IMPLEMENTED
    return result


def _guard_lookup(frame: Frame, value: UserObjectValue, name: str) -> None:
    """Guard what the lookup of the special method ``name`` finds on the object's class (a
    method, object's own, or nothing), where the object can be read again."""
    if value.source is not None:
        class_lookup(frame, value.obj, value.source, name)


def _object_default(frame: Frame, value: Value, name: str, args: list[Value]):
    """``object``'s own comparison methods: identity for ``==``, the negated ``__eq__`` for
    ``!=``, NotImplemented for the orderings."""
    if name == "__eq__":
        return Const(True) if same_object(frame, value, args[0]) else NOT_IMPLEMENTED
    if name == "__ne__":
        equal = _call_special(frame, value, "__eq__", args)
        if equal is NOT_IMPLEMENTED:
            return NOT_IMPLEMENTED
        return Const(not truthiness(frame, equal))
    return NOT_IMPLEMENTED


def user_binary_op(frame: Frame, symbol: str, left: Value, right: Value) -> Value:
    """``left <symbol> right`` where one side is a user object: CPython's operator protocol."""
    ltype, rtype = _python_class(frame, left), _python_class(frame, right)
    if symbol in COMPARE_DUNDERS:
        name, reflected = COMPARE_DUNDERS[symbol]
    else:
        name, reflected = f"__{BINARY_DUNDERS[symbol]}__", f"__r{BINARY_DUNDERS[symbol]}__"
    attempts = [(left, name, right)]
    comparing = symbol in COMPARE_DUNDERS
    if comparing or rtype is not ltype:
        reflected_call = (right, reflected, left)
        if rtype is not ltype and issubclass(rtype, ltype):
            attempts.insert(0, reflected_call)  # a subclass's reflected method goes first
        else:
            attempts.append(reflected_call)
    for target, method, other in attempts:
        result = _call_special(frame, target, method, [other])
        if result is not NOT_IMPLEMENTED:
            return result
    if symbol in ("==", "!="):  # neither side decides: identity does
        return Const(same_object(frame, left, right) == (symbol == "=="))
    if comparing:
        message = (
            f"'{symbol}' not supported between instances of '{ltype.__name__}' and "
            f"'{rtype.__name__}'"
        )
    else:
        message = (
            f"unsupported operand type(s) for {symbol}: '{ltype.__name__}' and "
            f"'{rtype.__name__}'"
        )
    raise UserCodeRaises(TypeError(message))


def user_truthiness(frame: Frame, value: UserObjectValue) -> bool:
    """``bool(obj)``: its ``__bool__``, else its ``__len__``, else True."""
    klass = _python_class(frame, value)
    for name in ("__bool__", "__len__"):  # a later call must find the same ones, or none
        _guard_lookup(frame, value, name)
    if class_attribute(value.obj, "__bool__") is not None:
        result = _call_special(frame, value, "__bool__", [])
        if not (isinstance(result, Const) and type(result.value) is bool):
            if isinstance(result, Const):
                raise UserCodeRaises(
                    TypeError(
                        f"__bool__ should return bool, returned {type(result.value).__name__}"
                    )
                )
            raise frame.unsupported(f"{klass.__qualname__}.__bool__ returned a graph value")
        return result.value
    if class_attribute(value.obj, "__len__") is not None:
        return user_len(frame, value) > 0
    return True


def user_len(frame: Frame, value: UserObjectValue) -> int:
    """``len(obj)`` through the object's ``__len__``."""
    klass = _python_class(frame, value)
    if class_attribute(value.obj, "__len__") is None:
        raise UserCodeRaises(TypeError(f"object of type '{klass.__name__}' has no len()"))
    result = _call_special(frame, value, "__len__", [])
    if not (isinstance(result, Const) and type(result.value) is int):
        raise frame.unsupported(f"{klass.__qualname__}.__len__ returned something not an int")
    if result.value < 0:
        raise UserCodeRaises(ValueError("__len__() should return >= 0"))
    return result.value


containers.USER_TRUTHINESS.append(user_truthiness)
