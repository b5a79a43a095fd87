"""``grad`` and ``value_and_grad``: reverse-mode gradients of scalar NumPy functions.

Outside ``compile`` they run the function once on tracers and walk the tape backwards (the
dynamic graph). Each wrapper also carries a ``GradSpec`` (``grad_spec(fn)``) so the capture
stage can recognise a ``value_and_grad(loss)(params)`` call inside a compiled function and
differentiate it in the graph instead (``reverse_mode.reverse_mode``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npdynamo.autograd.pytree import tree_flatten, tree_map, tree_unflatten
from npdynamo.autograd.tape import Tape
from npdynamo.autograd.tracer import Tracer, tracer_value
from npdynamo.errors import GradError


@dataclass(frozen=True)
class GradSpec:
    """What a ``grad``/``value_and_grad`` wrapper computes: the function it differentiates,
    the positions of the differentiated arguments, and the shape of its result."""

    fn: Callable[..., Any]
    argnums: tuple[int, ...]
    single_argnum: bool  # argnums was an int: gradients are not wrapped in a tuple
    has_aux: bool
    with_value: bool  # value_and_grad (True) or grad (False)


def grad_spec(fn: object) -> GradSpec | None:
    """The ``GradSpec`` of a function made by ``grad``/``value_and_grad``, else None."""
    return getattr(fn, "__npdynamo_grad__", None)


def _argnums(argnums: int | tuple[int, ...] | list[int]) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return (argnums,), True
    if isinstance(argnums, (tuple, list)) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in argnums
    ):
        return tuple(argnums), False
    raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r}")


def value_and_grad(
    fn: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``fn`` -> a function returning ``(value, gradients)`` (``((value, aux), gradients)``
    with ``has_aux``). ``fn`` must return a floating-point scalar; gradients have the structure
    and dtypes of the differentiated arguments (arrays, NumPy or Python floats, and nested
    dicts/lists/tuples of them), one per ``argnums`` entry when ``argnums`` is a tuple."""
    return _make(fn, argnums, has_aux, with_value=True)


def grad(
    fn: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``fn`` -> a function returning the gradients of ``fn``'s scalar result
    (``(gradients, aux)`` with ``has_aux``); see ``value_and_grad``."""
    return _make(fn, argnums, has_aux, with_value=False)


def _make(fn: Callable[..., Any], argnums: Any, has_aux: bool, with_value: bool):
    if not callable(fn):
        raise TypeError(f"grad needs a callable, not {type(fn).__name__}")
    nums, single = _argnums(argnums)
    spec = GradSpec(fn, nums, single, bool(has_aux), with_value)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        value, aux, grads = run_on_tape(spec, args, kwargs)
        if spec.with_value:
            return ((value, aux) if spec.has_aux else value), grads
        return (grads, aux) if spec.has_aux else grads

    wrapper.__npdynamo_grad__ = spec  # type: ignore[attr-defined]
    return wrapper


def run_on_tape(spec: GradSpec, args: tuple, kwargs: dict) -> tuple[Any, Any, Any]:
    """Run ``spec.fn`` on tracers and differentiate it: (value, aux, gradients)."""
    name = getattr(spec.fn, "__name__", "the function")
    for i in spec.argnums:
        if not -len(args) <= i < len(args):
            raise GradError(
                f"argnums={i} but {name} was called with {len(args)} positional arguments"
            )
    tape = Tape()
    args = list(args)
    tracked: list[tuple[Any, list[Any], list[Tracer]]] = []
    for i in spec.argnums:
        leaves, treedef, paths = tree_flatten(args[i])
        tracers = [_leaf_tracer(tape, leaf, f"argument {i}{path}")
                   for leaf, path in zip(leaves, paths)]
        tracked.append((treedef, leaves, tracers))
        args[i] = tree_unflatten(treedef, tracers)
    result = spec.fn(*args, **kwargs)
    if spec.has_aux:
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise GradError(f"with has_aux=True, {name} must return a pair (output, aux)")
        result, aux = result
        aux = tree_map(_untrack, aux)
    else:
        aux = None
    value, seeds = _output(result, name, spec.has_aux)
    cotangents = tape.backward(seeds)
    grads = [
        tree_unflatten(treedef, [
            _final_gradient(leaf, cotangents.get(t.var) if t is not None else None)
            for leaf, t in zip(leaves, tracers)
        ])
        for treedef, leaves, tracers in tracked
    ]
    return value, aux, grads[0] if spec.single_argnum else tuple(grads)


def _leaf_tracer(tape: Tape, leaf: Any, where: str) -> Tracer | None:
    if leaf is None:
        return None
    if isinstance(leaf, Tracer):  # differentiating inside an outer grad
        return Tracer(leaf, tape, tape.new_var())
    if type(leaf) is float:
        return Tracer(leaf, tape, tape.new_var())
    if isinstance(leaf, (np.ndarray, np.generic)):
        kind = leaf.dtype.kind
        if kind == "f":
            return Tracer(leaf, tape, tape.new_var())
        if kind in "biu":
            raise GradError(
                f"{where} has integer dtype {leaf.dtype}; gradients are only defined for "
                "floating-point inputs. Convert it with .astype(float), or leave it out of "
                "argnums."
            )
        raise GradError(f"{where} has dtype {leaf.dtype}; npdynamo differentiates only "
                        "real floating-point inputs")
    if isinstance(leaf, (bool, int)):
        raise GradError(
            f"{where} is the Python {type(leaf).__name__} {leaf!r}; gradients are only defined "
            "for floating-point inputs. Pass it as a float, or leave it out of argnums."
        )
    raise GradError(
        f"{where} is a {type(leaf).__name__}; differentiated arguments must be arrays, floats "
        "or dicts/lists/tuples of them"
    )


def _untrack(x: Any) -> Any:
    return tracer_value(x) if isinstance(x, Tracer) else x


def _output(result: Any, name: str, has_aux: bool) -> tuple[Any, dict[int, Any]]:
    """(the plain output value, {var: seed cotangent})."""
    value = tracer_value(result)
    while isinstance(value, Tracer):  # the result of a grad nested in another grad
        value = value.value
    if isinstance(value, (tuple, list, dict)):
        hint = "" if has_aux else " (to return extra values, pass has_aux=True)"
        raise GradError(f"{name} must return a scalar, not a {type(value).__name__}{hint}")
    if isinstance(value, (np.ndarray, np.generic)):
        if value.shape != ():
            raise GradError(
                f"{name} must return a scalar to be differentiated, but it returned an array "
                f"of shape {value.shape}; reduce it first (e.g. with .sum() or .mean())"
            )
        if value.dtype.kind != "f":
            raise GradError(f"{name} must return a floating-point scalar, not {value.dtype}")
    elif not isinstance(value, float):
        raise GradError(f"{name} must return a floating-point scalar, not {value!r}")
    if isinstance(result, Tracer) and result.var is not None:
        seed = np.ones((), dtype=np.result_type(value))
        return tracer_value(result), {result.var: seed}
    return tracer_value(result), {}


def _final_gradient(leaf: Any, ct: Any) -> Any:
    """The gradient of one leaf, in the leaf's own type, dtype and shape, never aliased."""
    if leaf is None:
        return None
    if isinstance(ct, Tracer) or isinstance(leaf, Tracer):
        return ct if ct is not None else Tracer(np.zeros_like(tracer_value(leaf)), leaf.tape, None)
    if type(leaf) is float:
        return 0.0 if ct is None else float(ct)
    if isinstance(leaf, np.generic):
        return leaf.dtype.type(0 if ct is None else ct)
    if ct is None:
        return np.zeros_like(leaf)
    out = np.asarray(ct)
    if out.dtype != leaf.dtype:
        out = out.astype(leaf.dtype)
    if out.shape != leaf.shape:
        out = out.reshape(leaf.shape)
    if not (out.flags.writeable and out.flags.owndata):
        out = out.copy()
    return out
