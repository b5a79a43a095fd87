"""``tuple_item``: one result of an op that returns several (``np.linalg.svd``, ``cond``).

An op with several results is one node whose value is the tuple of them (NumPy's named tuple
for the decompositions); each result the program uses is a ``tuple_item(results, index)`` node.
Reverse mode gathers the cotangents of these projections into one tuple per results node
(``autograd/reverse_mode.py``), which the op's VJP rule, or autograd's control-flow step, receives.
"""

from __future__ import annotations

from typing import Any

from npdynamo.ops.registry import Op, register


def _tuple_item(results: Any, index: int) -> Any:
    return results[index]


def _tuple_item_rule(results: object, index: int) -> Any:
    if not isinstance(results, tuple):
        raise TypeError(f"tuple_item: {results!r} is not the result of a multi-output op")
    return results[index]


#: differentiated by reverse mode's projection step, not by a VJP rule of its own
TUPLE_ITEM = register(Op("tuple_item", _tuple_item, _tuple_item_rule, kind="opaque",
                         differentiable=False, cost="free"))
