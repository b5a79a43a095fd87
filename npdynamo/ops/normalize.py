"""Normalisation: every NumPy spelling of an operation becomes one canonical (Op, args, kwargs).

The translator calls ``normalize_call(np.add, args, kwargs)``, ``normalize_method("sum", x,
args, kwargs)``, ``normalize_attribute("T", x)`` or looks up ``BINARY_OPERATORS["+"]``; all
spellings of an operation give the same op and the same canonical arguments, so CSE, VJP rules
and backends see one vocabulary. Each NumPy signature is mirrored by a binder function: binding
errors are the ``TypeError`` NumPy raises, valid calls that a graph cannot express raise
``UnsupportedArguments`` (a graph break).
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops import signatures  # noqa: F401 - fills the binder tables
from npdynamo.ops.binding import FUNCTIONS, METHODS, Normalized, methods
from npdynamo.ops.elementwise import COMPARISONS
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments

# -- indexing -------------------------------------------------------------------------------


@methods("__getitem__")
def _getitem(self, key, /):
    return C.canon(REGISTRY["getitem"], [self, C.index("getitem", key)])


@methods("__setitem__")
def _setitem(self, key, value, /):
    return C.canon(REGISTRY["setitem"],
                   [self, C.index("setitem", key), C.operand("setitem", value)])


# -- operators ------------------------------------------------------------------------------

_SYMBOLS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide",
    "%": "remainder", "**": "power", "@": "matmul", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift", "==": "equal",
    "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
}
BINARY_OPERATORS: dict[str, Op] = {sym: REGISTRY[name] for sym, name in _SYMBOLS.items()}
UNARY_OPERATORS: dict[str, Op] = {
    sym: REGISTRY[name]
    for sym, name in {"-": "negative", "+": "positive", "~": "invert", "abs": "absolute"}.items()
}
#: ``x op= y`` on an array: the op to apply; see ``elementwise.infer_inplace`` for the write-back.
INPLACE_OPERATORS: dict[str, Op] = {
    sym + "=": op for sym, op in BINARY_OPERATORS.items() if op.name not in COMPARISONS
}

_DUNDER_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
    "rshift": "right_shift", "divmod": "divmod",
}
_DUNDER_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                   "gt": "greater", "ge": "greater_equal"}
_DUNDER_UNARY = {"neg": "negative", "pos": "positive", "invert": "invert", "abs": "absolute"}


def _dunder(name: str, opname: str, reflected: bool):
    op = REGISTRY[opname]

    def binder(self, other, /):
        other = C.operand(name, other)
        return C.canon(op, [other, self] if reflected else [self, other])

    return binder


def _unary_dunder(opname: str):
    def binder(self, /):
        return C.canon(REGISTRY[opname], [self])

    return binder


def pow_shortcut(base: object, exponent: object) -> str | None:
    """The ufunc NumPy's ``ndarray.__pow__`` calls instead of ``np.power`` for some exponents
    (``fast_scalar_power`` in NumPy's number.c): a float or complex array to the Python int 2
    or -1 is ``square``/``reciprocal``, to the Python float 0.5 is ``sqrt`` (exact types only:
    ``np.float64(2.0)``, ``2.0`` and ``True`` go to ``power``). For complex data the results
    differ from ``power`` in the last bits; for real data they are the same. A NumPy scalar
    base uses scalar math instead (the caller's business)."""
    meta = getattr(base, "meta", None)
    if not isinstance(meta, ArrayMeta) or meta.scalar or meta.dtype.kind not in "fc":
        return None
    if type(exponent) is int:
        return {2: "square", -1: "reciprocal"}.get(exponent)
    if type(exponent) is float and exponent == 0.5:
        return "sqrt"
    return None


def _pow_dunder(reflected: bool):
    plain = _dunder("__pow__", "power", reflected)

    def binder(self, other, mod=None, /):
        if mod is not None:
            raise UnsupportedArguments("pow: the three-argument form is not supported")
        if reflected:
            return plain(self, other)
        meta = getattr(self, "meta", None)
        if isinstance(meta, ArrayMeta) and meta.scalar:
            # a NumPy scalar's own ** is scalar math, which np.power differs from
            raise UnsupportedArguments("__pow__ of a NumPy scalar")
        shortcut = pow_shortcut(self, other)
        if shortcut is not None:
            return C.canon(REGISTRY[shortcut], [self])
        return plain(self, other)

    return binder


for _short, _opname in _DUNDER_BINARY.items():
    if _short == "pow":
        methods("__pow__")(_pow_dunder(False))
        methods("__rpow__")(_pow_dunder(True))
        continue
    methods(f"__{_short}__")(_dunder(f"__{_short}__", _opname, False))
    methods(f"__r{_short}__")(_dunder(f"__r{_short}__", _opname, True))
for _short, _opname in _DUNDER_COMPARE.items():
    methods(f"__{_short}__")(_dunder(f"__{_short}__", _opname, False))
for _short, _opname in _DUNDER_UNARY.items():
    methods(f"__{_short}__")(_unary_dunder(_opname))

# Unbound ndarray methods (np.ndarray.sum(x, ...)) normalise like the bound ones.
_UNBOUND_METHODS = {np.ndarray.__dict__[n]: n for n in METHODS if n in np.ndarray.__dict__}


# -- entry points ---------------------------------------------------------------------------


def normalize_call(fn: object, args: tuple, kwargs: dict) -> Normalized | None:
    """The canonical form of ``fn(*args, **kwargs)`` for a NumPy callable, or None if unknown."""
    try:
        binder = FUNCTIONS.get(fn)
        method = _UNBOUND_METHODS.get(fn) if binder is None else None
    except TypeError:  # an unhashable callable is no NumPy function
        return None
    if binder is not None:
        return binder(tuple(args), dict(kwargs))
    if method is not None and args:
        return normalize_method(method, args[0], tuple(args[1:]), kwargs)
    return None


def normalize_method(name: str, self_value: object, args: tuple,
                     kwargs: dict) -> Normalized | None:
    """The canonical form of ``self_value.<name>(*args, **kwargs)`` on an array, or None."""
    binder = METHODS.get(name)
    if binder is None:
        return None
    return binder(self_value, tuple(args), dict(kwargs))


def normalize_attribute(name: str, self_value: object) -> Normalized | None:
    """The canonical form of the array attribute ``self_value.<name>`` that is an op, or None."""
    if name == "T":
        return C.canon(REGISTRY["transpose"], [self_value])
    if name in ("real", "imag") and getattr(self_value, "meta", None) is not None \
            and self_value.meta.dtype.kind == "c":  # views of a complex array's parts
        return C.canon(REGISTRY[name], [self_value])
    return None

