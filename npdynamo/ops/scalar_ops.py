"""Python arithmetic on dynamic scalars: ``lr * 0.9``, ``step + 1``, ``total / n`` in a graph.

A dynamic scalar (``ScalarMeta``) or a symbolic size combined with Python numbers by a Python
operator must give what Python gives: a Python ``int``/``float``/``complex`` (not a NumPy
scalar, which ``np.multiply`` would return), with Python's errors (``ZeroDivisionError``).
These ops call the ``operator`` functions themselves; their rules give the result's type from
the operand types alone, as Python's numeric tower does (bool < int < float < complex;
``/`` of ints is a float). Where the type depends on the value (``int ** int`` is a float for a
negative exponent) the rule refuses (``UnsupportedArguments``): capture then specialises.
They are never fused (``kind="opaque"``): one Python operation costs what it costs in Python.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import Op, UnsupportedArguments, register
from npdynamo.ops.symbolic import SymInt

BINARY = {
    "py_add": operator.add, "py_sub": operator.sub, "py_mul": operator.mul,
    "py_truediv": operator.truediv, "py_floordiv": operator.floordiv, "py_mod": operator.mod,
    "py_pow": operator.pow,
}
UNARY = {"py_neg": operator.neg, "py_pos": operator.pos, "py_abs": operator.abs}

_RANK = {bool: 0, int: 1, float: 2, complex: 3}
_TYPES = (bool, int, float, complex)


def _scalar_type(opname: str, x: object) -> type:
    if isinstance(x, ScalarMeta):
        return x.type
    if isinstance(x, SymInt):
        return int  # a size is a Python int at run time
    if type(x) in _TYPES:
        return type(x)
    raise UnsupportedArguments(f"{opname}: Python arithmetic on a {type(x).__name__}")


def _result_type(opname: str, *operands: object) -> type:
    kinds = [_scalar_type(opname, x) for x in operands]
    top = max(kinds, key=_RANK.__getitem__)
    return int if top is bool else top


def _binary_rule(name: str, true_division: bool = False) -> Callable[..., ScalarMeta]:
    fn = BINARY[name]

    def rule(a: object, b: object) -> ScalarMeta:
        if type(a) in _TYPES and type(b) in _TYPES:
            return ScalarMeta(type(fn(a, b)))  # both known: Python's own answer and errors
        if name in ("py_truediv", "py_floordiv", "py_mod") and type(b) in _TYPES and b == 0:
            raise ZeroDivisionError("division by zero")
        kind = _result_type(name, a, b)
        if true_division and kind is int:
            kind = float
        if name in ("py_floordiv", "py_mod") and kind is complex:
            raise TypeError(f"unsupported operand type(s) for {name[3:]}: 'complex'")
        if name == "py_pow" and kind in (int, float) and not _pow_type_is_static(a, b, kind):
            raise UnsupportedArguments(
                "a power whose result type depends on values unknown at capture (a negative "
                "exponent of an int, a fractional power of a negative float)")
        return ScalarMeta(kind)

    rule.__name__ = f"{name}_rule"
    return rule


def _pow_type_is_static(base: object, exponent: object, kind: type) -> bool:
    """Whether Python's ``base ** exponent`` has type ``kind`` for every value of the dynamic
    operands: int ** int needs a constant exponent >= 0; a float power needs an integral
    exponent or a base >= 0 (else ``(-8.0) ** 0.5`` is complex)."""
    if kind is int:
        return type(exponent) in (bool, int) and exponent >= 0
    integral = _scalar_type("py_pow", exponent) in (bool, int) or (
        type(exponent) is float and exponent.is_integer())
    nonneg_base = isinstance(base, SymInt) or (type(base) in (bool, int, float) and base >= 0)
    return integral or nonneg_base


def _unary_rule(name: str) -> Callable[..., ScalarMeta]:
    def rule(a: object) -> ScalarMeta:
        if type(a) in _TYPES:
            return ScalarMeta(type(UNARY[name](a)))
        kind = _result_type(name, a)
        return ScalarMeta(float if name == "py_abs" and kind is complex else kind)

    rule.__name__ = f"{name}_rule"
    return rule


SCALAR_OPS = {
    **{name: register(Op(name, fn, _binary_rule(name, name == "py_truediv"),
                         differentiable=False))
       for name, fn in BINARY.items()},
    **{name: register(Op(name, fn, _unary_rule(name), differentiable=False))
       for name, fn in UNARY.items()},
}

#: The op for each ``operator`` function, for capture's binary and unary operators.
BY_OPERATOR = {fn: SCALAR_OPS[name] for name, fn in {**BINARY, **UNARY}.items()}


# -- a 0-d array's value as a Python number: float(loss), int(count), x.item() -----------------
#: dtype kinds whose 0-d arrays convert exactly (complex and others are left to Python; a
#: bool's ``item()`` is a bool, which is no dynamic scalar: it is what branches need anyway).
_ITEM_TYPE = {"i": int, "u": int, "f": float}


def _to_python_rule(name: str, kind_of: Callable[[ArrayMeta], type],
                    kinds: str) -> Callable[..., ScalarMeta]:
    def rule(a: object) -> ScalarMeta:
        if not isinstance(a, ArrayMeta) or a.shape != () or a.dtype.kind not in kinds:
            raise UnsupportedArguments(f"{name}: only a 0-d array of dtype kind {kinds!r} is "
                                       "converted in the graph")
        return ScalarMeta(kind_of(a))

    rule.__name__ = f"{name}_rule"
    return rule


def _item(a):
    return a.item()


#: ``float(a)``, ``int(a)``, ``a.item()`` of a 0-d array: the Python number, computed when the
#: graph runs (a NaN's ``int`` raises there, as in Python).
TO_PYTHON = {
    float: register(Op("py_float", float, _to_python_rule("py_float", lambda a: float, "biuf"),
                       differentiable=False)),
    int: register(Op("py_int", int, _to_python_rule("py_int", lambda a: int, "biuf"),
                     differentiable=False)),
    "item": register(Op("py_item", _item,
                        _to_python_rule("py_item", lambda a: _ITEM_TYPE[a.dtype.kind], "iuf"),
                        differentiable=False)),
}


# -- math.sqrt of a graph number: a Python float -----------------------------------------------
def _py_sqrt_rule(a: object) -> ScalarMeta:
    # math.sqrt converts with float() (exact for these kinds; a complex one is a TypeError, or a
    # ComplexWarning for a NumPy complex: left to Python) and returns a Python float; a negative
    # value raises ValueError when the graph runs, as Python does (the frame reruns)
    if isinstance(a, ScalarMeta) and a.type in (int, float):
        return ScalarMeta(float)
    if isinstance(a, ArrayMeta) and a.shape == () and a.dtype.kind in "biuf":
        return ScalarMeta(float)
    what = (f"a {a.dtype} value of shape {a.shape}" if isinstance(a, ArrayMeta)
            else f"a {getattr(a, 'type', type(a)).__name__}")
    raise UnsupportedArguments(
        f"py_sqrt: math.sqrt of {what} runs in Python (only a real number is computed in the "
        "graph: Python's conversion of anything else raises or warns)")


#: ``math.sqrt(x)`` of a 0-d graph array, NumPy scalar or dynamic Python number.
PY_SQRT = register(Op("py_sqrt", math.sqrt, _py_sqrt_rule, differentiable=False))
