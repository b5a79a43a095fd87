"""VJP rules of the elementwise ops: float ufuncs, ``where``, ``clip`` and ``astype``.

Every rule has the signature ``rule(emit, g, out, *args, **kwargs) -> tuple`` (one cotangent or
None per positional argument) and reduces a broadcast operand's cotangent back to its shape.

Conventions where the derivative is not unique:

* ``maximum``/``minimum``/``fmax``/``fmin`` split the cotangent equally between tied operands.
* ``clip`` passes the cotangent to ``a`` where ``a_min <= a <= a_max`` (bounds included) and to
  an array bound where ``a`` lies strictly beyond it.
* Piecewise-constant ops (``sign``, ``floor``, ``ceil``, ``trunc``, ``rint``) have zero gradient,
  and so does ``absolute`` at 0; ``copysign`` passes nothing to its sign operand.
* ``power(x, y)``'s derivative with respect to ``y`` is ``x**y * log(x)`` where ``x > 0`` and 0
  elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from npdynamo.autograd.emitting import Emit, is_array, meta
from npdynamo.autograd.vjp_helpers import Math, unbroadcast
from npdynamo.autograd.vjp_registry import Rule, vjp

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _unary(name: str, derivative: Callable[[Math, Any, Any, Any], Any] | None) -> None:
    """Register ``g * f'(x)`` given ``derivative(M, g, out, x) -> cotangent``."""

    def rule(emit: Emit, g: Any, out: Any, x: Any, dtype: Any = None) -> tuple:
        if derivative is None or not is_array(x):
            return (None,)
        return (derivative(Math(emit), g, out, x),)

    rule.__name__ = f"{name}_vjp"
    vjp(name)(rule)


_UNARY: dict[str, Callable[[Math, Any, Any, Any], Any] | None] = {
    "negative": lambda M, g, out, x: M.neg(g),
    "positive": lambda M, g, out, x: g,
    "absolute": lambda M, g, out, x: M.mul(g, M("sign", x)),
    "fabs": lambda M, g, out, x: M.mul(g, M("sign", x)),
    "sign": None,
    "floor": None,
    "ceil": None,
    "trunc": None,
    "rint": None,
    "square": lambda M, g, out, x: M.mul(g, M.mul(x, 2.0)),
    "sqrt": lambda M, g, out, x: M.div(g, M.mul(out, 2.0)),
    "cbrt": lambda M, g, out, x: M.div(g, M.mul(M.square(out), 3.0)),
    "reciprocal": lambda M, g, out, x: M.neg(M.mul(g, M.square(out))),
    "exp": lambda M, g, out, x: M.mul(g, out),
    "exp2": lambda M, g, out, x: M.mul(g, M.mul(out, _LN2)),
    "expm1": lambda M, g, out, x: M.mul(g, M.add(out, 1.0)),
    "log": lambda M, g, out, x: M.div(g, x),
    "log2": lambda M, g, out, x: M.div(g, M.mul(x, _LN2)),
    "log10": lambda M, g, out, x: M.div(g, M.mul(x, _LN10)),
    "log1p": lambda M, g, out, x: M.div(g, M.add(x, 1.0)),
    "sin": lambda M, g, out, x: M.mul(g, M("cos", x)),
    "cos": lambda M, g, out, x: M.neg(M.mul(g, M("sin", x))),
    "tan": lambda M, g, out, x: M.mul(g, M.add(M.square(out), 1.0)),
    "arcsin": lambda M, g, out, x: M.div(g, M.sqrt(M.sub(1.0, M.square(x)))),
    "arccos": lambda M, g, out, x: M.neg(M.div(g, M.sqrt(M.sub(1.0, M.square(x))))),
    "arctan": lambda M, g, out, x: M.div(g, M.add(M.square(x), 1.0)),
    "sinh": lambda M, g, out, x: M.mul(g, M("cosh", x)),
    "cosh": lambda M, g, out, x: M.mul(g, M("sinh", x)),
    "tanh": lambda M, g, out, x: M.mul(g, M.sub(1.0, M.square(out))),
    "arcsinh": lambda M, g, out, x: M.div(g, M.sqrt(M.add(M.square(x), 1.0))),
    "arccosh": lambda M, g, out, x: M.div(g, M.sqrt(M.sub(M.square(x), 1.0))),
    "arctanh": lambda M, g, out, x: M.div(g, M.sub(1.0, M.square(x))),
    "deg2rad": lambda M, g, out, x: M.mul(g, math.pi / 180.0),
    "rad2deg": lambda M, g, out, x: M.mul(g, 180.0 / math.pi),
    # the identity on real arrays; on complex ones the conjugate of the cotangent
    "conjugate": lambda M, g, out, x: M("conjugate", g),
}
for _name, _derivative in _UNARY.items():
    _unary(_name, _derivative)


def _binary(name: str):
    """Register ``rule(M, g, out, x, y) -> (ct_x, ct_y)``; cotangents are unbroadcast here."""

    def deco(partials: Callable[..., tuple[Any, Any]]) -> Rule:
        def rule(emit: Emit, g: Any, out: Any, x: Any, y: Any, dtype: Any = None) -> tuple:
            ct_x, ct_y = partials(Math(emit), g, out, x, y)
            return (
                unbroadcast(emit, ct_x, meta(x)) if ct_x is not None and is_array(x) else None,
                unbroadcast(emit, ct_y, meta(y)) if ct_y is not None and is_array(y) else None,
            )

        rule.__name__ = f"{name}_vjp"
        vjp(name)(rule)
        return rule

    return deco


@_binary("add")
def _add(M, g, out, x, y):
    return g, g


@_binary("subtract")
def _subtract(M, g, out, x, y):
    return g, (M.neg(g) if is_array(y) else None)


@_binary("multiply")
def _multiply(M, g, out, x, y):
    return (M.mul(g, y) if is_array(x) else None), (M.mul(g, x) if is_array(y) else None)


@_binary("divide")
def _divide(M, g, out, x, y):
    ct_x = M.div(g, y) if is_array(x) else None
    ct_y = M.neg(M.div(M.mul(g, out), y)) if is_array(y) else None
    return ct_x, ct_y


def _power_partials(op: str):
    def partials(M, g, out, x, y):
        ct_x = ct_y = None
        if is_array(x) and not (not is_array(y) and y == 0):
            ct_x = M.mul(g, M.mul(y, M(op, x, M.sub(y, 1))))
        if is_array(y):
            positive = M("greater", x, 0)
            log_x = M("log", M.where(positive, x, 1.0))
            ct_y = M.where(positive, M.mul(M.mul(g, out), log_x), 0.0)
        return ct_x, ct_y

    return partials


_binary("power")(_power_partials("power"))
_binary("float_power")(_power_partials("float_power"))
_binary("scalar_power")(_power_partials("power"))  # the same derivative as np.power's


def _extremum_partials(wins: str, nan_picks_other: bool):
    """maximum/minimum (NaN propagates) and fmax/fmin (NaN loses); ties split equally."""

    def partials(M, g, out, x, y):
        x_wins, y_wins = M(wins, x, y), M(wins, y, x)
        if nan_picks_other:
            x_wins = M("logical_or", x_wins, M("isnan", y))
            y_wins = M("logical_or", y_wins, M("isnan", x))
        tie = M("equal", x, y)
        half = M.mul(g, 0.5)
        ct_x = M.where(x_wins, g, M.where(tie, half, 0.0)) if is_array(x) else None
        ct_y = M.where(y_wins, g, M.where(tie, half, 0.0)) if is_array(y) else None
        return ct_x, ct_y

    return partials


_binary("maximum")(_extremum_partials("greater", False))
_binary("minimum")(_extremum_partials("less", False))
_binary("fmax")(_extremum_partials("greater", True))
_binary("fmin")(_extremum_partials("less", True))


@_binary("arctan2")
def _arctan2(M, g, out, x, y):
    scale = M.div(g, M.add(M.square(x), M.square(y)))
    return M.mul(scale, y), M.neg(M.mul(scale, x))


@_binary("hypot")
def _hypot(M, g, out, x, y):
    scale = M.div(g, out)
    return M.mul(scale, x), M.mul(scale, y)


@_binary("logaddexp")
def _logaddexp(M, g, out, x, y):
    return M.mul(g, M("exp", M.sub(x, out))), M.mul(g, M("exp", M.sub(y, out)))


@_binary("logaddexp2")
def _logaddexp2(M, g, out, x, y):
    return M.mul(g, M("exp2", M.sub(x, out))), M.mul(g, M("exp2", M.sub(y, out)))


@_binary("copysign")
def _copysign(M, g, out, x, y):
    return M.mul(g, M.mul(M("sign", x), M("copysign", 1.0, y))), None


@_binary("fmod")
def _fmod(M, g, out, x, y):
    return g, M.neg(M.mul(g, M("trunc", M.div(x, y))))


@_binary("remainder")
def _remainder(M, g, out, x, y):
    return g, M.neg(M.mul(g, M("floor", M.div(x, y))))


def _where(emit: Emit, g: Any, out: Any, condition: Any, x: Any, y: Any) -> tuple:
    M = Math(emit)
    ct_x = unbroadcast(emit, M.where(condition, g, 0.0), meta(x)) if is_array(x) else None
    ct_y = unbroadcast(emit, M.where(condition, 0.0, g), meta(y)) if is_array(y) else None
    return None, ct_x, ct_y


def _clip(emit: Emit, g: Any, out: Any, a: Any, a_min: Any, a_max: Any) -> tuple:
    M = Math(emit)
    inside = None
    for bound, inside_op in ((a_min, "greater_equal"), (a_max, "less_equal")):
        if bound is None:
            continue
        ok = M(inside_op, a, bound)
        inside = ok if inside is None else M("logical_and", inside, ok)
    ct_a = M.where(inside, g, 0.0) if inside is not None else g
    cts = [unbroadcast(emit, M.broadcast_to(ct_a, meta(out).shape), meta(a))]
    for bound, outside_op in ((a_min, "less"), (a_max, "greater")):
        if is_array(bound):
            ct = M.where(M(outside_op, a, bound), g, 0.0)
            cts.append(unbroadcast(emit, M.broadcast_to(ct, meta(out).shape), meta(bound)))
        else:
            cts.append(None)
    return tuple(cts)


def _astype(emit: Emit, g: Any, out: Any, x: Any, dtype: Any = None) -> tuple:
    # The driver casts every cotangent back to its input's dtype.
    return (g,)


vjp("where")(_where)
vjp("clip")(_clip)
vjp("astype")(_astype)
