"""Tracers: the values a differentiated function computes with while the tape records.

A ``Tracer`` wraps an array (or NumPy/Python scalar) and implements NumPy's dispatch protocols
(``__array_ufunc__``, ``__array_function__``) and the Python operators, so unchanged NumPy code
runs on it. Each call is normalised to a canonical op with ``ops.normalize_call`` /
``normalize_method`` (the vocabulary the graphs use), the op's ``impl`` runs on the unwrapped
values, and the call is recorded on the tape. Results that are not floating point (masks,
indices, shapes) come back as plain values: no gradient flows through them, and Python control
flow on them just works.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from npdynamo.autograd.tape import BlockedRecord, OpRecord, Tape
from npdynamo.errors import GradError
from npdynamo.ops import REGISTRY, Op, UnsupportedArguments, normalize_call, normalize_method
from npdynamo.ops.binding import METHODS

_SUPPORTED_HINT = (
    "npdynamo differentiates NumPy ufuncs, reductions (sum, mean, max, var...), matmul/dot/"
    "einsum, shape ops (reshape, transpose, concatenate, stack...), where, clip, astype and "
    "indexing"
)


_REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min,
               np.logical_or: np.any, np.logical_and: np.all}
_REDUCE_ONLY_KWARGS = frozenset({"out", "initial", "where"})


class Tracer:
    """An array value tracked by a tape; ``var`` is None for a constant (no gradient)."""

    __slots__ = ("value", "tape", "var")
    __array_priority__ = 1000.0
    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    def __init__(self, value: Any, tape: Tape, var: int | None) -> None:
        self.value = value
        self.tape = tape
        self.var = var

    # -- NumPy protocols ---------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = f"np.{ufunc.__name__}"
        reduction = _REDUCTIONS.get(ufunc) if method == "reduce" else None
        if reduction in (np.any, np.all) and kwargs.get("dtype", bool) in (bool, np.bool_):
            kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}  # they reduce in bool
        elif reduction in (np.any, np.all):
            reduction = None
        if reduction is not None and not _REDUCE_ONLY_KWARGS.intersection(kwargs):
            # graphs call e.g. np.maximum.reduce for np.max: record it as the reduction it is
            return call_function(reduction, public_name(reduction), inputs, {"axis": 0, **kwargs})
        if method != "__call__":
            return untraced_call(f"{name}.{method}", getattr(ufunc, method), inputs, kwargs)
        return call_function(ufunc, name, inputs, kwargs)

    def __array_function__(self, func: Callable, types: Any, args: tuple, kwargs: dict) -> Any:
        return call_function(func, public_name(func), args, kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise GradError(
            "a value being differentiated was converted to a plain NumPy array (np.asarray, "
            "np.array of a list, or storing it into an existing array with out[i] = value), "
            "which would cut its gradient. Build arrays from tracked values with np.stack / "
            "np.concatenate, or assign into an array made with np.zeros_like(value)."
        )

    # -- array attributes --------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.value)

    @property
    def ndim(self) -> int:
        return np.ndim(self.value)

    @property
    def size(self) -> int:
        return int(np.size(self.value))

    @property
    def dtype(self) -> np.dtype:
        return np.result_type(self.value)

    @property
    def T(self) -> Any:
        return apply(REGISTRY["transpose"], (self,), {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in METHODS:
            return lambda *args, **kwargs: call_method(name, self, args, kwargs)
        attribute = getattr(self.value, name)
        if callable(attribute):
            return lambda *args, **kwargs: untraced_call(
                f"ndarray.{name}", attribute, args, kwargs, tracked=self.var is not None
            )
        if self.var is not None and _holds_float_array(attribute):
            raise GradError(f"ndarray.{name} is not supported by npdynamo.grad. {_SUPPORTED_HINT}")
        return attribute

    # -- indexing and in-place updates -------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        return call_method("__getitem__", self, (_masks_to_indices(key),), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        self._rebind(call_method("__setitem__", self, (_masks_to_indices(key), value), {}))

    def _rebind(self, result: Any) -> None:
        # NumPy updates the array in place, which every alias of this tracer sees: rebinding
        # the tracer object gives the same view to Python aliases.
        if isinstance(result, Tracer):
            self.value, self.var = result.value, result.var
        else:
            self.value, self.var = result, None

    def _inplace(self, dunder: str, other: Any) -> Tracer:
        result = call_method(dunder, self, (other,), {})
        shape = np.shape(_raw(result))
        if shape != self.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {self.shape} doesn't match the "
                f"broadcast shape {shape}"
            )
        if np.result_type(_raw(result)) != self.dtype:
            result = apply(REGISTRY["astype"], (result,), {"dtype": self.dtype})
        self._rebind(result)
        return self

    # -- Python conversions ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self):
        for i in range(len(self.value)):
            yield self[i]

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        self._check_concrete("float()")
        return float(self.value)

    def __int__(self) -> int:
        self._check_concrete("int()")
        return int(self.value)

    def __complex__(self) -> complex:
        self._check_concrete("complex()")
        return complex(self.value)

    def _check_concrete(self, what: str) -> None:
        # NumPy also calls __float__ to store a value into an element of a plain array and
        # math.* calls it too: both would drop the gradient without a word.
        if self.var is not None:
            raise GradError(
                f"{what} of a value being differentiated would cut its gradient (this also "
                "happens when it is stored into an element of a plain NumPy array, out[i] = "
                "value, or passed to a math.* function). Use value.item() when only the number "
                "is wanted, np.* functions to compute with it, and np.stack or "
                "np.zeros_like(value) to build arrays from it."
            )

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return f"Tracer({self.value!r})"

    def __str__(self) -> str:
        return str(self.value)

    def __copy__(self) -> Tracer:
        return Tracer(self.value, self.tape, self.var)

    def __deepcopy__(self, memo: dict) -> Tracer:
        return Tracer(copy.deepcopy(self.value, memo), self.tape, self.var)


def _make_dunder(name: str) -> Callable[..., Any]:
    def method(self: Tracer, *args: Any) -> Any:
        return call_method(name, self, args, {})

    method.__name__ = name
    return method


def _make_inplace(name: str) -> Callable[..., Any]:
    plain = name.replace("__i", "__", 1)

    def method(self: Tracer, other: Any) -> Tracer:
        return self._inplace(plain, other)

    method.__name__ = name
    return method


_BINARY = "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift divmod".split()
for _short in _BINARY:
    setattr(Tracer, f"__{_short}__", _make_dunder(f"__{_short}__"))
    setattr(Tracer, f"__r{_short}__", _make_dunder(f"__r{_short}__"))
    if _short != "divmod":
        setattr(Tracer, f"__i{_short}__", _make_inplace(f"__i{_short}__"))
for _short in "eq ne lt le gt ge neg pos abs invert".split():
    setattr(Tracer, f"__{_short}__", _make_dunder(f"__{_short}__"))


# -- dispatch -------------------------------------------------------------------------------


def is_tracer(x: object) -> bool:
    """Whether ``x`` is a value tracked by a gradient tape."""
    return isinstance(x, Tracer)


def tracer_value(x: Any) -> Any:
    """The array inside a tracer (``x`` itself for anything else)."""
    return x.value if isinstance(x, Tracer) else x


def _raw(x: Any) -> Any:
    return x.value if isinstance(x, Tracer) else x


def call_function(fn: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    try:
        normalized = normalize_call(fn, args, kwargs)
    except UnsupportedArguments as exc:
        raise GradError(f"{name}: {exc} (in a function being differentiated)") from None
    if normalized is None:
        return untraced_call(name, fn, args, kwargs)
    return apply(*normalized)


def call_method(name: str, self: Tracer, args: tuple, kwargs: dict) -> Any:
    try:
        normalized = normalize_method(name, self, args, kwargs)
    except UnsupportedArguments as exc:
        raise GradError(f"ndarray.{name}: {exc} (in a function being differentiated)") from None
    if normalized is None:
        return untraced_call(f"ndarray.{name}", getattr(self.value, name), args, kwargs,
                        tracked=self.var is not None)
    return apply(*normalized)


def _top_tape(a: Any, best: Tape | None = None) -> Tape | None:
    if isinstance(a, Tracer):
        return a.tape if best is None or a.tape.level > best.level else best
    if isinstance(a, (tuple, list)):
        for x in a:
            best = _top_tape(x, best)
    elif isinstance(a, dict):
        for x in a.values():
            best = _top_tape(x, best)
    return best


def _split(a: Any, tape: Tape) -> tuple[Any, Any]:
    """(``a`` with this tape's tracers unwrapped, the same structure holding their vars)."""
    if isinstance(a, Tracer) and a.tape is tape:
        return a.value, a.var
    if isinstance(a, (tuple, list)):
        parts = [_split(x, tape) for x in a]
        return type(a)(p[0] for p in parts), tuple(p[1] for p in parts)
    return a, None


def _any_key(keys: Any) -> bool:
    if isinstance(keys, tuple):
        return any(_any_key(k) for k in keys)
    return keys is not None


def _is_complex(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "c"


def _is_float(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "f"


def apply(op: Op, args: tuple | list, kwargs: dict) -> Any:
    """Run a canonical op on (possibly tracked) arguments, recording it on the tape."""
    tape = _top_tape(args)
    if tape is None:
        return op.impl(*args, **kwargs)
    raw, keys = _split(tuple(args), tape)
    tracked = _any_key(keys)
    if tracked and op.name == "eig":
        # before running it: its graph op raises where NumPy does not (the real-results check)
        raise GradError(f"np.linalg.{op.name} is not differentiable (in a function being "
                        "differentiated)")
    out = op.impl(*raw, **kwargs)
    if tracked and _is_complex(out) and not op.shape_only:
        # kept tracked, so that a gradient reaching it is an error rather than a silent zero
        var = tape.new_var()
        tape.record(BlockedRecord(op, var, complex_result=True))
        return Tracer(out, tape, var)
    if not _is_float(out):
        if tracked and isinstance(out, tuple) and any(_is_float(o) for o in out):
            if op.differentiable:  # several results: only reverse mode over a graph has them
                raise GradError(f"np.linalg.{op.name} is differentiated only inside compiled "
                                "code: apply npdynamo.grad to an npdynamo.compile'd function")
            raise GradError(f"np.{op.name} is not differentiable (in a function being "
                            "differentiated)")
        return out
    if not tracked or op.shape_only:
        return Tracer(out, tape, None)
    var = tape.new_var()
    if op.differentiable:
        tape.record(OpRecord(op, _rule_args(raw, keys), kwargs, keys, out, var))
    else:
        tape.record(BlockedRecord(op, var))
    return Tracer(out, tape, var)


def _rule_args(raw: Any, keys: Any) -> Any:
    """``raw`` with tracked Python floats as NumPy floats: rules treat Python numbers as
    constants, and these need a cotangent."""
    if isinstance(keys, tuple):
        return type(raw)(_rule_args(r, k) for r, k in zip(raw, keys))
    return np.float64(raw) if keys is not None and type(raw) is float else raw


def _holds_float_array(x: Any) -> bool:
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in "fc"
    if isinstance(x, (tuple, list)):
        return any(_holds_float_array(v) for v in x)
    return False


def untraced_call(name: str, fn: Callable, args: tuple, kwargs: dict, tracked: bool = False) -> Any:
    """Run a NumPy callable the tape has no op for on plain values.

    Fine when the result carries no gradient (shapes, integer indices, booleans, Python
    numbers from ``.item()``); a floating-point array computed from tracked values would
    silently lose its gradient, so that is a ``GradError`` naming the function.
    """
    tape = _top_tape((args, kwargs))
    if tape is not None:
        args, arg_keys = _split(tuple(args), tape)
        values, kw_keys = _split(tuple(kwargs.values()), tape)
        kwargs = dict(zip(kwargs, values))
        tracked = tracked or _any_key(arg_keys) or _any_key(kw_keys)
    result = fn(*args, **kwargs)
    if tracked and _holds_float_array(result):
        raise GradError(f"{name} is not supported by npdynamo.grad. {_SUPPORTED_HINT}; compute "
                        "this value outside the differentiated function if it needs no gradient.")
    return result


def public_name(func: Callable) -> str:
    """``np.linalg.norm`` for NumPy callables, the qualified name otherwise."""
    module = getattr(func, "__module__", None) or ""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if module.split(".")[0] != "numpy":
        return f"{module}.{name}" if module else name
    parts = [p for p in module.split(".")[1:] if not p.startswith("_")]
    return ".".join(["np", *parts, name])


def _masks_to_indices(key: Any) -> Any:
    """Boolean-array index items replaced by their ``nonzero()`` arrays (NumPy's own meaning);
    the tape knows the mask's values, so the data-dependent shape is no problem here."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(i, np.ndarray) and i.dtype == bool and i.ndim > 0 for i in items):
        return key
    out: list[Any] = []
    for item in items:
        if isinstance(item, np.ndarray) and item.dtype == bool and item.ndim > 0:
            out.extend(np.nonzero(item))
        else:
            out.append(item)
    return tuple(out)
