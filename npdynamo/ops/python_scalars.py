"""Arithmetic on Python numbers inside a graph: ``lr * 0.5``, ``step + 1`` on dynamic scalars.

A dynamic scalar (``ScalarMeta``: a Python int or float graph input) combined with another
Python number must give what Python gives: a Python ``int`` or ``float`` (a weak scalar to NumPy
afterwards), never a NumPy scalar, whose strong dtype would change a later ``float32`` array
operation. So these ops run the ``operator`` functions themselves. Only the operators whose
result *type* follows from the operand types are here (``**`` is not: ``2 ** -1`` is a float);
their errors (``ZeroDivisionError``) are raised when the graph runs, and the frame then reruns
in Python, which raises the same.
"""

from __future__ import annotations

import operator

from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.registry import Op, UnsupportedArguments, register

#: Python operator symbol -> (op name, implementation, result is always a float)
_OPERATORS = {
    "+": ("py_add", operator.add, False),
    "-": ("py_subtract", operator.sub, False),
    "*": ("py_multiply", operator.mul, False),
    "/": ("py_true_divide", operator.truediv, True),
    "//": ("py_floor_divide", operator.floordiv, False),
    "%": ("py_remainder", operator.mod, False),
}


def _number_type(x: object) -> type:
    if isinstance(x, ScalarMeta):
        return x.type
    if type(x) in (int, float):
        return type(x)
    raise UnsupportedArguments(f"a Python-number operation on {type(x).__name__}")


def _rule(always_float: bool):
    def rule(a: object, b: object) -> ScalarMeta:
        types = {_number_type(a), _number_type(b)}
        if not types <= {int, float}:
            raise UnsupportedArguments("only int and float operands")
        return ScalarMeta(float if always_float or float in types else int)

    return rule


#: symbol -> the op computing it on Python numbers
PYTHON_NUMBER_OPS = {
    symbol: register(Op(name, impl, _rule(always_float), kind="opaque", differentiable=False))
    for symbol, (name, impl, always_float) in _OPERATORS.items()
}
