"""Random draws under capture: ``rng.normal(size=n)`` on a passed-in or global
``np.random.Generator``/``RandomState``, and the legacy ``np.random.*`` functions, become
ordered impure ``draw`` nodes (``ops/random.py``) that call the same generator at run time.

A generator read from the frame is guarded on its type only (``builder``: a user object), never
on its state, and becomes a graph input (one per object); the global ``RandomState`` behind
``np.random.*`` is embedded in the node. Draws NumPy returns as Python numbers, and generator
calls the op refuses, are graph breaks: the call then runs natively, in program order after
the graph's draws. A compiled graph that draws puts the generators back if it raises
(``backends/compile.py``), before the frame reruns in Python: no number is drawn twice.
"""

from __future__ import annotations

import numpy as np

from npdynamo import ops
from npdynamo.capture.errors import UserCodeRaises
from npdynamo.capture.opcalls import op_call, raw
from npdynamo.capture.registry import BUILTINS, OBJECT_METHODS
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import ArrayValue, Const, MethodValue, UserObjectValue, Value
from npdynamo.ops.random import (
    GENERATOR_METHODS,
    GENERATOR_TYPES,
    LEGACY_METHODS,
    GeneratorMeta,
    bind_draw,
)


def _generator_input(frame, obj: UserObjectValue) -> ArrayValue:
    """The generator as a graph input (one placeholder per object and capture)."""
    ctx = frame.ctx
    if obj.source is None:
        raise frame.unsupported("a random generator that is neither an argument nor a global")
    inputs = ctx.__dict__.setdefault("random_inputs", {})
    node = inputs.get(id(obj))
    if node is None:
        node = ctx.graph.placeholder("rng_" + str(len(inputs)))
        node.meta["val"] = GeneratorMeta(type(obj.obj))
        node.meta["source_name"] = obj.source.name()
        ctx.placeholders.append((node, obj.source))
        inputs[id(obj)] = node
    return ArrayValue(node)  # an operand slot only: never bound to a name


def _draw(frame, state, legacy: bool, name: str, args: list[Value],
          kwargs: dict[str, Value]) -> Value:
    # raw() reads constants' values: a size read by Python code is specialised (static size)
    plain_args = tuple(raw(a) for a in args)
    plain_kwargs = {k: raw(v) for k, v in kwargs.items()}
    try:
        op, op_args, op_kwargs = bind_draw(state, name, plain_args, plain_kwargs, legacy)
    except ops.UnsupportedArguments as exc:
        raise frame.unsupported(f"this random draw cannot be captured: {exc}",
                                "give it a size= (an array stays in the graph)") from exc
    except TypeError as exc:
        raise UserCodeRaises(exc) from exc
    result = op_call(frame, op, op_args, op_kwargs)
    if op.name == "shuffled":  # shuffle works in place and returns None
        target = plain_args[0] if plain_args else plain_kwargs["x"]
        write_array(frame.ctx, target, result)
        return Const(None)
    return result


def generator_method(frame, obj: UserObjectValue, name: str, args: list[Value],
                     kwargs: dict[str, Value]) -> Value | None:
    """``rng.<name>(...)`` on a generator read from the frame; None: not a draw."""
    legacy = isinstance(obj.obj, np.random.RandomState)
    if name not in (LEGACY_METHODS if legacy else GENERATOR_METHODS):
        return None
    return _draw(frame, _generator_input(frame, obj), legacy, name, args, kwargs)


def generator_attribute(frame, obj: UserObjectValue, name: str) -> Value | None:
    legacy = isinstance(obj.obj, np.random.RandomState)
    if name in (LEGACY_METHODS if legacy else GENERATOR_METHODS):
        method = MethodValue(obj, name)  # rebuilt as getattr(rng, name) if it escapes
        return method
    return None


for _type in GENERATOR_TYPES:
    OBJECT_METHODS[_type] = (generator_attribute, generator_method)


def _legacy_function(frame, target, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """``np.random.normal(...)``: a draw from the global RandomState (embedded in the node)."""
    return _draw(frame, target.__self__, True, target.__name__, args, kwargs)


for _name in sorted(LEGACY_METHODS):
    _fn = getattr(np.random, _name, None)
    if isinstance(getattr(_fn, "__self__", None), np.random.RandomState):
        BUILTINS[_fn] = _legacy_function
