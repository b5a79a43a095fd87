"""``npdynamo.cond``, ``while_loop``, ``fori_loop``: control flow a graph can hold, as in jax.lax.

Called outside a compiled function they run plainly: each is exactly the few lines of Python in
its body below (the reference semantics jax.lax documents for its own versions). Inside
``npdynamo.compile`` the translator does not run these lines: it captures each function passed
in into a subgraph and records one ``cond``/``while_loop``/``fori_loop`` node
(``capture/flow/higher_order.py``), so a loop of any length is one graph whose size does not grow
with the trip count. When a function cannot be captured that way (a graph break inside it, a carried
value that changes dtype or shape, a side effect on outside objects) the call is a graph break and
runs as written here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def cond(pred: Any, true_fun: Callable[..., T], false_fun: Callable[..., T], *operands: Any) -> T:
    """``true_fun(*operands)`` if ``pred`` is true, else ``false_fun(*operands)``.

    Under ``compile`` a ``pred`` that is a graph value (an array of shape ``()``, a NumPy scalar)
    makes one graph for both branches, so taking the other branch needs no recompile; both
    branches must then return the same structure of arrays (same shapes and dtypes) and numbers.
    """
    if pred:
        return true_fun(*operands)
    return false_fun(*operands)


def while_loop(cond_fun: Callable[[T], Any], body_fun: Callable[[T], T], init_val: T) -> T:
    """Apply ``body_fun`` to the carried value while ``cond_fun`` of it is true; return it.

    The carried value is an array, a NumPy scalar, a Python number or a tuple/list of those;
    under ``compile`` the body must return the same structure with the same dtypes and shapes.
    """
    val = init_val
    while cond_fun(val):
        val = body_fun(val)
    return val


def fori_loop(lower: int, upper: int, body_fun: Callable[[int, T], T], init_val: T) -> T:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; return ``val``.

    Under ``compile`` the bounds may be values known only at run time (a new trip count is not a
    new capture), and ``i`` is a Python int the body may compute with (``t * dt``) but not
    branch or index on.
    """
    val = init_val
    for i in range(lower, upper):
        val = body_fun(i, val)
    return val


__all__ = ["cond", "fori_loop", "while_loop"]
