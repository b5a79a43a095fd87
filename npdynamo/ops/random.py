"""Random draws as graph ops: methods of ``np.random.Generator`` and of the legacy
``np.random.RandomState`` (behind the ``np.random.*`` functions).

``draw`` calls ``getattr(state, method)(*operands, **static)`` on the very generator object it
is given at run time, so the numbers and the generator's state afterwards are NumPy's own. It
is ``impure``: passes never merge, drop or reorder it (CSE and DCE skip impure nodes; backends
run the opaque calls in graph order) and the backward partitioner never recomputes it.
``shuffled`` is ``shuffle`` made functional: a shuffled copy, which the capture stage writes
back into the shuffled array (the same draws: they depend on the length only).

The generator is a graph input whose meta is a ``GeneratorMeta`` (its class; never its state).
Rules give the draw's shape and dtype; a draw NumPy returns as a Python ``float``/``int`` (no
``size``, scalar parameters) is refused (a graph break: Python code gets the number). Errors
that depend on parameter values in arrays happen at run time in NumPy itself; the graph then
raises, the generators' states are put back (``saved_states``/``restore_states``) and the
frame reruns in Python, so the user sees NumPy's error after NumPy's draws.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY, REQUIRED, Op, UnsupportedArguments, register

GENERATOR_TYPES = (np.random.Generator, np.random.RandomState)


@dataclass(frozen=True)
class GeneratorMeta:
    """A generator graph input: only its class is known to rules."""

    type: type

    @property
    def legacy(self) -> bool:
        return issubclass(self.type, np.random.RandomState)


_F64, _I64 = np.dtype(np.float64), np.dtype(np.int64)

#: method -> (parameter names with defaults (REQUIRED: none), result dtype). ``size`` follows.
_FLOAT = {
    "normal": (("loc", 0.0), ("scale", 1.0)),
    "uniform": (("low", 0.0), ("high", 1.0)),
    "exponential": (("scale", 1.0),),
    "gamma": (("shape", REQUIRED), ("scale", 1.0)),
    "beta": (("a", REQUIRED), ("b", REQUIRED)),
    "lognormal": (("mean", 0.0), ("sigma", 1.0)),
    "laplace": (("loc", 0.0), ("scale", 1.0)),
    "logistic": (("loc", 0.0), ("scale", 1.0)),
    "gumbel": (("loc", 0.0), ("scale", 1.0)),
    "rayleigh": (("scale", 1.0),),
    "standard_cauchy": (),
    "standard_t": (("df", REQUIRED),),
    "chisquare": (("df", REQUIRED),),
    "weibull": (("a", REQUIRED),),
    "pareto": (("a", REQUIRED),),
    "power": (("a", REQUIRED),),
    "triangular": (("left", REQUIRED), ("mode", REQUIRED), ("right", REQUIRED)),
    "vonmises": (("mu", REQUIRED), ("kappa", REQUIRED)),
    "wald": (("mean", REQUIRED), ("scale", REQUIRED)),
    "f": (("dfnum", REQUIRED), ("dfden", REQUIRED)),
}
_INT = {
    "poisson": (("lam", 1.0),),
    "binomial": (("n", REQUIRED), ("p", REQUIRED)),
    "geometric": (("p", REQUIRED),),
    "negative_binomial": (("n", REQUIRED), ("p", REQUIRED)),
    "zipf": (("a", REQUIRED),),
    "logseries": (("p", REQUIRED),),
}
#: size-only methods with a ``dtype`` (Generator) -> parameters before size
_TYPED = {"random": (), "standard_normal": (), "standard_exponential": (),
          "standard_gamma": (("shape", REQUIRED),)}
_LEGACY_FLOAT_SIZE = ("random_sample", "random", "ranf", "sample", "standard_normal",
                      "standard_exponential")

GENERATOR_METHODS = frozenset({*_FLOAT, *_INT, *_TYPED, "integers", "choice", "permutation",
                               "shuffle"})
LEGACY_METHODS = frozenset({*_FLOAT, *_INT, *_LEGACY_FLOAT_SIZE, "standard_gamma", "rand",
                            "randn", "randint", "random_integers", "choice", "permutation",
                            "shuffle"} - {"random_integers"})


def as_generator_meta(state: object) -> GeneratorMeta:
    """The meta of a draw's generator operand: a graph input's meta, or an embedded object."""
    return state if isinstance(state, GeneratorMeta) else GeneratorMeta(type(state))


def _shape_of(x: object) -> tuple:
    if isinstance(x, ArrayMeta):
        return x.shape
    if isinstance(x, ScalarMeta):
        return ()
    return np.shape(x)


def _stand_in(shape: tuple) -> np.ndarray:
    return np.broadcast_to(np.zeros((), np.int8), shape)  # zero-stride: nothing allocated


def _size(method: str, size: object) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, (float, np.floating)):
        raise TypeError(f"expected a sequence of integers or a single integer, got '{size}'")
    shape = C.shape(method, size)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def _sized(method: str, params: list, size: object, dtype: np.dtype,
           numpy_scalar: bool = False) -> ArrayMeta:
    """The result of a draw with parameters ``params`` (metas or constants) and ``size``;
    without ``size`` and with scalar parameters NumPy returns a NumPy scalar when
    ``numpy_scalar``, else a Python number (refused)."""
    shapes = [_shape_of(p) for p in params]
    # NumPy's own broadcasting errors, on zero-stride stand-ins
    broadcast = np.broadcast(*(_stand_in(s) for s in shapes)).shape if shapes else ()
    shape = _size(method, size)
    if shape is None:
        if broadcast == () and not numpy_scalar:
            raise UnsupportedArguments(
                f"{method}() without size= returns a Python number, which Python code reads")
        return ArrayMeta(broadcast, dtype, scalar=broadcast == ())
    if shapes and np.broadcast(_stand_in(shape), _stand_in(broadcast)).shape != shape:
        raise ValueError(f"Output size {shape} is not compatible with broadcast dimensions of "
                         f"inputs {broadcast}.")
    return ArrayMeta(shape, dtype)


def _check_params(method: str, params: list) -> None:
    for p in params:
        meta = p if isinstance(p, ArrayMeta) else None
        if meta is not None and meta.dtype.kind == "c":
            raise TypeError(f"Cannot cast array data from dtype('{meta.dtype}') to "
                            "dtype('float64') according to the rule 'safe'")
        if meta is None and not isinstance(p, ScalarMeta) and C.is_array_value(p) and not \
                isinstance(p, np.generic):
            raise UnsupportedArguments(f"{method}: a parameter of type {type(p).__name__}")


def _integers_rule(state: GeneratorMeta, low: object, high: object = None, size: object = None,
                   dtype: Any = np.int64, endpoint: bool = False,
                   numpy_scalar: bool = True) -> ArrayMeta:
    dt = np.dtype(dtype)
    if dt.kind not in "biu":
        raise TypeError(f"Unsupported dtype {dt!r} for integers")
    params = [p for p in (low, high) if p is not None]
    _check_params("integers", params)
    return _sized("integers", params, size, dt, numpy_scalar=numpy_scalar)


def _choice_rule(state: GeneratorMeta, a: object, size: object = None, replace: bool = True,
                 p: object = None, axis: int = 0, shuffle: bool = True) -> ArrayMeta:
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        population, item, dtype = int(a), (), _I64
        if size is None:
            raise UnsupportedArguments("choice(n) without size= returns a Python int")
    elif isinstance(a, ArrayMeta):
        if state.legacy and a.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        if a.ndim == 0:
            raise ValueError("a must be a sequence or an integer, not 0-d array")
        ax = axis % a.ndim if -a.ndim <= axis < a.ndim else None
        if ax is None:
            raise np.exceptions.AxisError(axis, a.ndim)
        population, dtype = a.shape[ax], a.dtype
        item = a.shape[:ax] + a.shape[ax + 1:]
    else:
        raise UnsupportedArguments("choice() from a Python sequence")
    shape = () if size is None else _size("choice", size)
    count = int(np.prod(shape))
    if population == 0 and count:
        raise ValueError("a cannot be empty unless no samples are taken" if isinstance(
            a, ArrayMeta) else "a must be a positive integer unless no samples are taken")
    if not replace and count > population:
        raise ValueError("Cannot take a larger sample than population when replace is False")
    if isinstance(a, ArrayMeta):
        ax = axis % a.ndim
        out = a.shape[:ax] + shape + a.shape[ax + 1:]
        return ArrayMeta(out, dtype, scalar=out == () and a.ndim == 1)
    return ArrayMeta(shape + item, dtype)


def _permutation_rule(state: GeneratorMeta, x: object, axis: int = 0) -> ArrayMeta:
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return ArrayMeta((int(x),), _I64)
    if not isinstance(x, ArrayMeta):
        raise UnsupportedArguments("permutation() of a Python sequence")
    if x.ndim == 0:
        if state.legacy:
            raise UnsupportedArguments("legacy permutation() of a 0-d array")
        raise np.exceptions.AxisError(axis, 0)
    if not -x.ndim <= axis < x.ndim:
        raise np.exceptions.AxisError(axis, x.ndim)
    return ArrayMeta(x.shape, x.dtype)


def _draw_rule(state: object, *operands: object, method: str,
               names: tuple = (), static: tuple = ()) -> ArrayMeta:
    state = as_generator_meta(state)
    kwargs = dict(zip(names, operands))
    kwargs.update(static)
    legacy = state.legacy
    if not operands and method not in ("choice", "permutation", "rand", "randn"):
        _check_constants(legacy, method, kwargs)
    if method == "integers" or (legacy and method == "randint"):
        dtype = kwargs.pop("dtype", np.int64 if method == "integers" else int)
        python_int = legacy and dtype is int  # randint's scalar is then a Python int
        return _integers_rule(state, dtype=np.int64 if python_int else dtype,
                              numpy_scalar=not python_int, **kwargs)
    if method == "choice":
        return _choice_rule(state, **kwargs)
    if method == "permutation":
        return _permutation_rule(state, **kwargs)
    if legacy and method in ("rand", "randn"):
        dims = kwargs.get("dims", ())
        return _sized(method, [], tuple(dims) if dims else None, _F64)
    size = kwargs.pop("size", None)
    dtype = np.dtype(kwargs.pop("dtype", np.float64))
    kwargs.pop("method", None)
    if method in _TYPED or method in _LEGACY_FLOAT_SIZE:
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"Unsupported dtype {dtype!r} for {method}")
    elif method in _INT:
        dtype = _I64
    params = list(kwargs.values())
    _check_params(method, params)
    return _sized(method, params, size, dtype)


def _check_constants(legacy: bool, method: str, kwargs: dict) -> None:
    """Parameters all constants: NumPy's own checks of their values (``low >= high``,
    ``scale < 0``), by one draw without ``size`` from a throwaway generator."""
    throwaway = np.random.RandomState(0) if legacy else np.random.default_rng(0)
    params = {k: v for k, v in kwargs.items() if k not in ("size", "out")}
    bound = _SIGNATURES[legacy][method].bind_partial(**params)
    getattr(throwaway, method)(*bound.args, **bound.kwargs)


def _draw(state, *operands, method: str, names: tuple = (), static: tuple = ()):
    try:
        call = _caller(isinstance(state, np.random.RandomState), method, names, static)
    except TypeError:  # an unhashable static value: lay the call out each time
        return _draw_slowly(state, operands, method, names, static)
    return call(state, operands)


def _draw_slowly(state, operands: tuple, method: str, names: tuple, static: tuple):
    kwargs = dict(zip(names, operands))
    kwargs.update(static)
    if method in ("rand", "randn"):
        return getattr(state, method)(*kwargs.get("dims", ()))
    positional, keyword = _call_layout(isinstance(state, np.random.RandomState), method,
                                       tuple(kwargs))
    return getattr(state, method)(*[kwargs[n] for n in positional],
                                  **{n: kwargs[n] for n in keyword})


@functools.cache
def _caller(legacy: bool, method: str, names: tuple, static: tuple):
    """``(state, operands) -> the draw`` for one call shape, laid out once: a small draw costs
    about a microsecond, as much as laying out its arguments again."""
    if method in ("rand", "randn") or names:
        return lambda state, operands: _draw_slowly(state, operands, method, names, static)
    fixed = dict(static)
    positional, keyword = _call_layout(legacy, method, tuple(fixed))
    args = tuple(fixed[n] for n in positional)
    kwargs = {n: fixed[n] for n in keyword}
    return lambda state, operands: getattr(state, method)(*args, **kwargs)


@functools.cache
def _call_layout(legacy: bool, method: str, given: tuple) -> tuple[tuple, tuple]:
    """Which of the ``given`` parameters go positionally (where the user could have passed
    them so: some NumPy methods take no keyword for them) and which by keyword. Worked out
    once per call shape, not per draw: binding a signature costs more than a small draw."""
    bound = _SIGNATURES[legacy][method].bind_partial(**{name: name for name in given})
    return tuple(bound.args), tuple(bound.kwargs)


def _shuffled(state, x, *, axis: int = 0):
    out = np.array(x, copy=True)
    if axis == 0:
        state.shuffle(out)
    else:
        state.shuffle(out, axis=axis)
    return out


def _shuffled_rule(state: object, x: object, *, axis: int = 0) -> ArrayMeta:
    if not isinstance(x, ArrayMeta):
        raise UnsupportedArguments("shuffle() of a Python sequence")
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        raise UnsupportedArguments("shuffle() of a 0-d array or along a bad axis")
    return ArrayMeta(x.shape, x.dtype)


def _draw_source(args: tuple, kwargs: dict, expr: Callable[[object], str]) -> str | None:
    """A draw whose parameters are all fixed, as generated code writes it: the method call
    itself, ``rng.standard_normal(4)``, laid out as ``_draw`` lays it out (a call through
    ``_draw`` costs about half a microsecond more than the draw of four numbers)."""
    method, static = kwargs["method"], kwargs.get("static", ())
    if len(args) != 1 or kwargs.get("names") or method in ("rand", "randn"):
        return None
    state = args[0]
    meta = getattr(state, "meta", {}).get("val", state)
    legacy = meta.legacy if isinstance(meta, GeneratorMeta) else isinstance(
        state, np.random.RandomState)
    fixed = dict(static)
    try:
        positional, keyword = _call_layout(legacy, method, tuple(fixed))
    except (TypeError, KeyError):  # an unhashable value, a method without a signature
        return None
    parts = [expr(fixed[n]) for n in positional] + [f"{n}={expr(fixed[n])}" for n in keyword]
    return f"{expr(state)}.{method}({', '.join(parts)})"


register(Op("draw", _draw, _draw_rule, differentiable=False, draws=True,
            defaults={"method": REQUIRED, "names": (), "static": ()})).source = _draw_source
register(Op("shuffled", _shuffled, _shuffled_rule, differentiable=False, draws=True,
            defaults={"axis": 0}))


# -- binding a call -------------------------------------------------------------------------
_NO_DEFAULT = inspect.Parameter.empty


def _signature(*params: tuple, var: str | None = None) -> inspect.Signature:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    out = [inspect.Parameter(name, kind, default=_NO_DEFAULT if d is REQUIRED else d)
           for name, d in params]
    if var:
        out.append(inspect.Parameter(var, inspect.Parameter.VAR_POSITIONAL))
    return inspect.Signature(out)


def _signatures(legacy: bool) -> dict[str, inspect.Signature]:
    size = ("size", None)
    sigs = {m: _signature(*p, size) for m, p in {**_FLOAT, **_INT}.items()}
    if legacy:
        sigs.update({m: _signature(size) for m in _LEGACY_FLOAT_SIZE})
        sigs["standard_gamma"] = _signature(("shape", REQUIRED), size)
        sigs["rand"] = sigs["randn"] = _signature(var="dims")
        sigs["randint"] = _signature(("low", REQUIRED), ("high", None), size, ("dtype", int))
        sigs["choice"] = _signature(("a", REQUIRED), size, ("replace", True), ("p", None))
        sigs["permutation"] = _signature(("x", REQUIRED))
        sigs["shuffle"] = _signature(("x", REQUIRED))
        return sigs
    for m, p in _TYPED.items():
        extra = (("method", "zig"),) if m == "standard_exponential" else ()
        sigs[m] = _signature(*p, size, ("dtype", np.float64), *extra, ("out", None))
    sigs["integers"] = _signature(("low", REQUIRED), ("high", None), size,
                                  ("dtype", np.int64), ("endpoint", False))
    sigs["choice"] = _signature(("a", REQUIRED), size, ("replace", True), ("p", None),
                                ("axis", 0), ("shuffle", True))
    sigs["permutation"] = _signature(("x", REQUIRED), ("axis", 0))
    sigs["shuffle"] = _signature(("x", REQUIRED), ("axis", 0))
    return sigs


_SIGNATURES = {False: _signatures(False), True: _signatures(True)}


def _is_operand(x: object) -> bool:
    return C.is_array_value(x) and not isinstance(x, (np.generic, np.dtype, type))


def bind_draw(state: object, method: str, args: tuple, kwargs: dict,
              legacy: bool | None = None) -> tuple[Op, tuple, dict]:
    """The canonical ``(op, args, kwargs)`` of ``state.method(*args, **kwargs)``: ``draw`` (or
    ``shuffled`` for ``shuffle``) with the array operands after the generator and the other
    arguments as static ``(name, value)`` pairs. A TypeError as NumPy's for a bad call.
    ``legacy``: whether ``state`` is a ``RandomState`` (default: read from ``state``)."""
    if legacy is None:
        legacy = as_generator_meta(state).legacy
    signature = _SIGNATURES[legacy].get(method)
    if signature is None:
        raise UnsupportedArguments(f"{method}() of a random generator is not captured")
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{method}() {exc}") from None
    given = dict(bound.arguments)
    if given.get("out") is not None:
        raise UnsupportedArguments(f"{method}: out= is not supported in a graph")
    given.pop("out", None)
    if method == "shuffle":
        axis = C.as_index(C.static(method, "axis", given.get("axis", 0)), "axis")
        if not _is_operand(given["x"]):
            raise UnsupportedArguments("shuffle() of a Python sequence")
        return C.canon(REGISTRY["shuffled"], [state, given["x"]], axis=axis)
    if "dims" in given:
        given["dims"] = C.static(method, "dims", tuple(given["dims"]))
    if given.get("size") is not None:
        given["size"] = C.static(method, "size", given["size"])
        if not isinstance(given["size"], (float, np.floating)):
            given["size"] = C.shape(method, given["size"])
    operands = {k: v for k, v in given.items() if _is_operand(v)}
    static = tuple((k, C.operand(method, v)) for k, v in given.items() if k not in operands)
    return C.canon(REGISTRY["draw"], [state, *operands.values()], method=method,
                   names=tuple(operands), static=static)


# -- keeping the generators' states exact when a graph raises ------------------------------
def saved_states(states: list) -> list:
    """What ``restore_states`` needs to put each generator back as it is now."""
    return [s.get_state(legacy=True) if isinstance(s, np.random.RandomState)
            else s.bit_generator.state for s in states]


def restore_states(states: list, saved: list) -> None:
    for state, value in zip(states, saved):
        if isinstance(state, np.random.RandomState):
            state.set_state(value)
        else:
            state.bit_generator.state = value
