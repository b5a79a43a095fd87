"""The gradient tape: the dynamic graph recorded while a differentiated function runs.

Every op applied to tracked values appends a record naming the variables it read and the
variable it produced. ``Tape.backward`` walks the records in reverse, asks each for the
cotangents of its inputs and sums them per variable. A record is an op call (its VJP rule runs
eagerly on the recorded arrays), a call of a compiled graph (its backward graph runs, see
``aot``), or a blocked record for a non-differentiable op, which raises ``GradError`` only if a
gradient actually reaches it.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable
from typing import Any, Protocol

from npdynamo.autograd.emitting import backprop_step
from npdynamo.errors import GradError
from npdynamo.ops import Op

_levels = itertools.count(1)


def eager_emit(op: Op, *args: Any, **kwargs: Any) -> Any:
    """The emitter of the tape: run the op now (on tracers of an enclosing tape, that records)."""
    return op.impl(*args, **kwargs)


class Record(Protocol):
    outputs: tuple[int, ...]

    def backward(self, cotangents: list[Any]) -> Iterable[tuple[int, Any]]: ...


class OpRecord:
    """One op call: its canonical arguments (arrays unwrapped), the variable keys of its
    tracked inputs (same nesting as ``args``) and its result."""

    __slots__ = ("op", "args", "kwargs", "keys", "out", "outputs")

    def __init__(self, op: Op, args: tuple, kwargs: dict, keys: tuple, out: Any, var: int):
        self.op, self.args, self.kwargs, self.keys, self.out = op, args, kwargs, keys, out
        self.outputs = (var,)

    def backward(self, cotangents: list[Any]) -> Iterable[tuple[int, Any]]:
        return backprop_step(
            self.op, cotangents[0], self.out, self.args, self.kwargs, self.keys, eager_emit
        )


class BlockedRecord:
    """A non-differentiable op whose floating-point result depends on tracked values."""

    __slots__ = ("op", "where", "outputs", "complex_result")

    def __init__(self, op: Op, var: int, complex_result: bool = False) -> None:
        self.op = op
        self.where = user_location()
        self.outputs = (var,)
        self.complex_result = complex_result  # a differentiable op, but no complex cotangents

    def backward(self, cotangents: list[Any]) -> Iterable[tuple[int, Any]]:
        if self.complex_result:
            raise GradError(
                f"np.{self.op.name} gives a complex value{self.where} from the differentiated "
                "inputs, and gradients through complex values are not supported")
        raise GradError(
            f"np.{self.op.name} is not differentiable, but its result{self.where} lies on the "
            "path from the differentiated inputs to the output. Compute it from values that "
            "need no gradient, or wrap it so no gradient flows through it."
        )


class Tape:
    """The records made for one ``grad``/``value_and_grad`` call, in program order."""

    def __init__(self) -> None:
        self.level = next(_levels)  # tapes of nested grads: the inner one has the higher level
        self.records: list[Record] = []
        self._vars = itertools.count()

    def new_var(self) -> int:
        return next(self._vars)

    def record(self, item: Record) -> None:
        self.records.append(item)

    def backward(self, seeds: dict[int, Any]) -> dict[int, Any]:
        """Cotangents of every variable reached from ``seeds`` (var -> cotangent)."""
        grads = dict(seeds)
        for record in reversed(self.records):
            cotangents = [grads.pop(v, None) for v in record.outputs]
            if all(ct is None for ct in cotangents):
                continue
            for var, ct in record.backward(cotangents):
                seen = grads.get(var)
                grads[var] = ct if seen is None else seen + ct
        self.records.clear()
        return grads


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location() -> str:
    """`` (computed at file:line)`` for the innermost frame outside npdynamo and NumPy."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR) and "numpy" not in filename.split(os.sep):
            return f" (computed at {os.path.basename(filename)}:{frame.f_lineno})"
        frame = frame.f_back
    return ""
