"""AOT backends: a captured graph as one differentiable step of an enclosing gradient tape.

``aot_backend(inner)`` wraps a backend. Called with plain arrays, the callable it returns runs
the forward graph compiled by ``inner``. Called with tape tracers (``grad(compile(f))``), it
builds the joint graph for the tracked inputs, partitions it, compiles both halves with
``inner`` (once per set of tracked inputs), runs the forward on the unwrapped arrays and
records ONE tape record whose backward runs the compiled backward graph on the saved values. So
the tape chains each graph's forward/backward pair with the Python code between graph breaks.
Registered as ``aot_eager`` and ``aot_numba`` (numba when that backend is registered). What
``inner`` returns is followed (``Compiled.follow``): a tuned forward is called directly once the
tuner has chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npdynamo.autograd.joint import build_joint
from npdynamo.autograd.partition import Partition, partition
from npdynamo.autograd.tape import Tape
from npdynamo.autograd.tracer import Tracer, is_tracer
from npdynamo.backends.eager import eager
from npdynamo.backends.registry import lookup_backend, register_backend, register_input_wrapper
from npdynamo.backends.report import BackendReport, Compiled, as_compiled
from npdynamo.errors import InvalidBackend
from npdynamo.ops import ArrayMeta

Backend = Callable[[Any, list], Callable[..., tuple]]


class CompiledPair:
    """The partition of one graph for one set of tracked inputs, and its compiled halves."""

    def __init__(self, part: Partition, inner: Backend, example_inputs: list) -> None:
        self.partition = part
        self.inner = inner
        as_compiled(inner(part.forward, example_inputs)).follow(
            lambda run: setattr(self, "forward", run))
        self._backward: Callable[..., tuple] | None = None
        self.tangent_metas: list[ArrayMeta] = [
            part.backward.graph.placeholders[len(part.saved) + k].meta["val"]
            for k in range(len(part.tangent_outputs))
        ]

    def backward(self, saved: tuple, tangents: list) -> tuple:
        if self._backward is None:
            as_compiled(self.inner(self.partition.backward, [*saved, *tangents])).follow(
                lambda run: setattr(self, "_backward", run))
        return self._backward(*saved, *tangents)


class GraphRecord:
    """The tape record of one call of a compiled graph."""

    __slots__ = ("pair", "saved", "outputs", "keys", "shapes")

    def __init__(self, pair: CompiledPair, saved: tuple, outputs: tuple[int, ...],
                 keys: list[int], shapes: list[tuple[int, ...]]) -> None:
        self.pair, self.saved, self.outputs, self.keys = pair, saved, outputs, keys
        self.shapes = shapes  # of the tracked outputs of this call (metas may be symbolic)

    def backward(self, cotangents: list[Any]) -> Iterable[tuple[int, Any]]:
        tangents = [
            np.zeros(shape, m.dtype) if ct is None else ct
            for ct, m, shape in zip(cotangents, self.pair.tangent_metas, self.shapes)
        ]
        grads = self.pair.backward(self.saved, tangents)
        return zip(self.keys, grads)


class AOTFunction:
    """What an AOT backend returns for one graph."""

    def __init__(self, gm: Any, example_inputs: list, inner: Backend) -> None:
        self.gm = gm
        self.inner = inner
        as_compiled(inner(gm, [_raw(x) for x in example_inputs])).follow(
            lambda run: setattr(self, "plain", run))
        self._pairs: dict[tuple[bool, ...], CompiledPair] = {}

    def __call__(self, *args: Any) -> tuple:
        for a in args:
            if type(a) is Tracer:
                return self._call_tracked(args)
        return self.plain(*args)

    def pair(self, requires_grad: tuple[bool, ...], example_inputs: list) -> CompiledPair:
        """The compiled forward/backward pair for these tracked inputs (built on first use)."""
        pair = self._pairs.get(requires_grad)
        if pair is None:
            part = partition(build_joint(self.gm, requires_grad))
            pair = self._pairs[requires_grad] = CompiledPair(part, self.inner, example_inputs)
        return pair

    @property
    def partitions(self) -> list[Partition]:
        """The partitions built so far (one per set of tracked inputs)."""
        return [p.partition for p in self._pairs.values()]

    def report(self) -> str:
        """What the backward saves, for ``explain``: the partitions built so far, else the
        partition with every floating-point input tracked."""
        parts = self.partitions
        if not parts:
            flags = tuple(_is_float_meta(p.meta.get("val")) for p in self.gm.graph.placeholders)
            if not any(flags):
                return "AOT partition: no floating-point inputs to differentiate"
            parts = [partition(build_joint(self.gm, flags))]
        return "\n".join(str(p) for p in parts)

    def _call_tracked(self, args: tuple) -> tuple:
        tape = _top_tape(args)
        raw = [a.value if isinstance(a, Tracer) and a.tape is tape else a for a in args]
        keys = [a.var if isinstance(a, Tracer) and a.tape is tape and _is_float(a.value)
                else None for a in args]
        flags = tuple(k is not None for k in keys)
        if not any(flags):
            return self.plain(*raw)
        pair = self.pair(flags, raw)
        results = pair.forward(*raw)
        n = pair.partition.num_outputs
        outs, saved = list(results[:n]), tuple(results[n:])
        out_vars = []
        shapes = [np.shape(outs[i]) for i in pair.partition.tangent_outputs]
        for i in pair.partition.tangent_outputs:
            var = tape.new_var()
            out_vars.append(var)
            outs[i] = Tracer(outs[i], tape, var)
        grad_keys = [keys[i] for i in pair.partition.grad_inputs]
        tape.record(GraphRecord(pair, saved, tuple(out_vars), grad_keys, shapes))
        return tuple(outs)


def _raw(x: Any) -> Any:
    return x.value if isinstance(x, Tracer) else x


def _is_float(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "f" or type(x) is float


def _is_float_meta(val: Any) -> bool:
    return isinstance(val, ArrayMeta) and val.dtype.kind == "f"


def _top_tape(args: tuple) -> Tape:
    tapes = [a.tape for a in args if isinstance(a, Tracer)]
    return max(tapes, key=lambda t: t.level)


def aot_backend(inner: Backend | str) -> Backend:
    """A backend compiling with ``inner`` that also differentiates through tape tracers."""

    def backend(gm: Any, example_inputs: list) -> Compiled:
        return _compiled(AOTFunction(gm, example_inputs, lookup_backend(inner)))

    backend.__name__ = f"aot_{getattr(inner, '__name__', inner)}"
    return backend


@register_backend("aot_eager")
def aot_eager(gm: Any, example_inputs: list) -> Compiled:
    """Forward and backward graphs run as generated NumPy code."""
    return _compiled(AOTFunction(gm, example_inputs, eager))


@register_backend("aot_numba")
def aot_numba(gm: Any, example_inputs: list) -> Compiled:
    """Forward and backward graphs compiled by the numba backend (eager if it is missing)."""
    try:
        inner = lookup_backend("numba")
    except InvalidBackend:
        inner = eager
    return _compiled(AOTFunction(gm, example_inputs, inner))


@dataclass
class AOTReport(BackendReport):
    """What an AOT backend reports for one graph: its ``AOTFunction`` (partitions, ``report()``)."""

    function: AOTFunction


def _compiled(function: AOTFunction) -> Compiled:
    return Compiled(function, AOTReport(function))


# A graph captured while tracers flow in (inside an outer grad) is compiled as forward and
# backward graphs, one differentiable step on the enclosing tape.
register_input_wrapper(is_tracer, aot_backend)
