"""``np.nonzero(a)`` and the one-argument ``np.where(a)``: one op whose results have a size
known only when the graph runs.

The number of nonzero elements is an unbacked size (``ops.unbacked``): one symbol per call of
the rule, at least 0 and at most ``a.size``. Ops after it that only carry the size along
(concatenating, slicing by constants, indexing with the result, ``np.diff``) stay in the graph;
one that must decide something about it (a comparison no expression settles) raises
``SymbolicDecision`` at capture, which breaks the graph there. Where no break is possible there
(Python code reading the count, ``if idx.size == 0``, whose value the break would have to hand
over) the capture runs again with the op refused (``refusing``): the graph breaks at the call,
as before the op existed, and the code after it is captured with the indices as an input.
The op runs NumPy's own
``np.nonzero`` (the numba backend swaps in a compiled loop for 1-d data:
``backends/numba/nonzero.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from npdynamo.ops import canonical as C
from npdynamo.ops.binding import functions
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY, Op, UnsupportedArguments, register
from npdynamo.ops.rules import to_meta
from npdynamo.ops.symbolic import _atom_expr
from npdynamo.ops.unbacked import UnbackedSymbol


def _nonzero_rule(a: object) -> tuple[ArrayMeta, ...]:
    meta = to_meta("nonzero", a)
    if meta.ndim == 0:  # NumPy's error for 0-d data, raised by the call in Python
        raise UnsupportedArguments("nonzero of a 0-d array runs in Python")
    if meta.dtype.kind not in "biuf":
        raise UnsupportedArguments(f"nonzero of {meta.dtype} data runs in Python")
    count = _atom_expr(UnbackedSymbol(f"the number of nonzero elements of {meta}", 0))
    return tuple(ArrayMeta((count,), np.dtype(np.intp)) for _ in range(meta.ndim))


register(Op("nonzero", np.nonzero, _nonzero_rule, differentiable=False))

_REFUSED: ContextVar[str | None] = ContextVar("nonzero_refused", default=None)

#: why a capture that ran again refuses the op (``refusing``)
COUNT_READ = ("this frame's Python code needs how many elements are nonzero, which only the run "
              "time knows (a data-dependent shape)")
COUNT_SAVED = ("an exported program saves its sizes, and how many elements are nonzero is known "
               "only at run time (a data-dependent shape)")


@contextmanager
def refusing(reason: str | None) -> Iterator[None]:
    """While active with a ``reason``, capturing ``nonzero`` is a graph break at the call."""
    token = _REFUSED.set(reason)
    try:
        yield
    finally:
        _REFUSED.reset(token)


def canon_nonzero(name: str, a: object):
    """The canonical ``nonzero`` call (``np.nonzero(a)``, ``np.where(a)``)."""
    reason = _REFUSED.get()
    if reason is not None:
        raise UnsupportedArguments(f"{name}: {reason}")
    return C.canon(REGISTRY["nonzero"], [C.operand(name, a)])


@functions("nonzero")
def _nonzero_binder(a):
    return canon_nonzero("nonzero", a)
