"""A choice Python code makes by looking at a graph value's data, assumed at capture and checked
at run time: ``max(1.0, np.max(x))``.

Capture never sees array data, yet some Python choices between a NumPy scalar of the graph and
Python constants give an object whose *type* depends on the data: ``max(1.0, m)`` is the float
``1.0`` or the NumPy scalar ``m``. Capture assumes the graph value wins and records
``chosen(holds, value)``, which returns ``value`` when ``holds`` (the comparisons Python makes,
computed in the graph) is true and raises ``AssumptionFailed`` otherwise. A graph that raises
has written nothing back, so its frame reruns in Python, which makes the other choice itself:
results are always Python's; a call where the assumption fails pays for the graph and the rerun.
``otherwise``, when capture knows it, is Python's choice when the test fails (a Python float:
the constants' own ``max``/``min``): a target that cannot rerun (ONNX, NumPy alone) uses it
where it can prove the rest of the graph computes the same values from it
(``export/choice.py``).

``asserted(holds)`` is the same bet on an ``assert`` whose test is a graph value
(``capture/flow/assertions.py``): capture goes on past the statement as if it passed, and the
node raises ``AssumptionFailed`` when ``holds`` is false, so the frame reruns in Python, which
raises the ``AssertionError`` itself, with its message and the state Python leaves.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import Op, UnsupportedArguments, register
from npdynamo.ops.rules import to_meta


class AssumptionFailed(Exception):
    """The data made Python choose another value than the one the graph was captured with."""


def _check_test(shape: tuple, dtype: np.dtype) -> None:
    if shape != () or dtype != np.dtype(bool):
        raise TypeError(f"chosen: the test must be one boolean, not {dtype}{shape}")


def _chosen(holds, value, *, otherwise=None):
    _check_test(np.shape(holds), np.asarray(holds).dtype)
    if not holds:
        raise AssumptionFailed("a value chosen at capture is not Python's choice for this data")
    return value


def _chosen_rule(holds: object, value: object, *, otherwise: float | None = None) -> ArrayMeta:
    if otherwise is not None and type(otherwise) is not float:
        raise TypeError(f"chosen: otherwise is a Python float, not {otherwise!r}")
    test = to_meta("chosen", holds)
    _check_test(test.shape, test.dtype)
    if not isinstance(value, (ArrayMeta, np.ndarray, np.generic)):
        raise UnsupportedArguments("chosen: the value is an array or a NumPy scalar")
    return to_meta("chosen", value)


chosen = register(Op("chosen", _chosen, _chosen_rule, kind="opaque",
                     defaults={"otherwise": None}))


def _asserted(holds):
    _check_test(np.shape(holds), np.asarray(holds).dtype)
    if not holds:
        raise AssumptionFailed("an assert captured as passing fails on this data")
    return holds


def _asserted_rule(holds: object) -> ArrayMeta:
    test = to_meta("asserted", holds)
    _check_test(test.shape, test.dtype)
    return test


asserted = register(Op("asserted", _asserted, _asserted_rule, kind="opaque",
                       differentiable=False, checks=True))
