"""Ops that only backward graphs need: canonical ops, but kept out of ``ops.REGISTRY``.

``index_add(x, index, value)`` is the functional ``np.add.at``: a copy of ``x`` with ``value``
added at ``index``, every repeated index adding again. It is the cotangent of ``getitem`` with
integer-array indices, where ``x[[0, 0]]`` reads element 0 twice and so must receive two
contributions; ``setitem`` would keep only one. User code never calls it, so it is not part of
the vocabulary normalisation maps NumPy calls to; it pickles by name through ``BACKWARD_OPS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.ops import REGISTRY, ArrayMeta, Op


class BackwardOp(Op):
    """An op emitted by VJP rules only; looked up in ``BACKWARD_OPS`` when unpickled."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (backward_op, (self.name,))


BACKWARD_OPS: dict[str, BackwardOp] = {}


def backward_op(name: str) -> BackwardOp:
    return BACKWARD_OPS[name]


def _index_add(x: Any, index: Any, value: Any) -> np.ndarray:
    out = np.array(x, copy=True)
    np.add.at(out, index, value)
    return out


def _index_add_rule(x: Any, index: Any, value: Any) -> ArrayMeta:
    # Same checks as an assignment of ``value`` to ``x[index]``.
    return REGISTRY["setitem"].infer(x, index, value)


index_add = BackwardOp("index_add", _index_add, _index_add_rule)
BACKWARD_OPS[index_add.name] = index_add


def _eigenvectors(a: Any) -> np.ndarray:
    return np.linalg.eigh(a).eigenvectors


def _eigenvectors_rule(a: Any) -> ArrayMeta:
    values = REGISTRY["eigvalsh"].infer(a)
    return ArrayMeta(values.shape + values.shape[-1:], values.dtype)


#: The eigenvectors ``eigvalsh``'s cotangent needs (``np.linalg.eigh(a).eigenvectors``).
eigenvectors = BackwardOp("eigenvectors", _eigenvectors, _eigenvectors_rule,
                          differentiable=False)
BACKWARD_OPS[eigenvectors.name] = eigenvectors
