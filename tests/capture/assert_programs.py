"""Programs with ``assert`` statements on graph values (``tests/capture/test_assertions.py``).

They live outside the test module: pytest rewrites the ``assert`` statements of test modules
into its own code, and these must stay CPython's.
"""

from __future__ import annotations

import numpy as np


def springs(pos, out):
    """wave's shape: an assert on a distance inside the loop, arguments written in the loop
    (``out``: the iterations before a failing one have written it when Python raises)."""
    for i in range(1, pos.shape[0]):
        dist = np.sqrt((pos[i] - pos[i - 1]) ** 2)
        assert dist != 0
        out[i] = out[i - 1] + 1.0 / dist
    return out


def with_message(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        v = x[i]
        assert v > 0, f"x[{i}] = {v} is not positive"
        total = total + np.log(v)
    return total


def two_tests(x, lo, hi):
    n = 0
    for i in range(x.shape[0]):
        assert x[i] >= lo and x[i] <= hi, "out of range"
        n += 1
    return n


def negated(x):
    acc = x * 0
    for _ in range(20):
        assert not np.any(x < 0)
        acc = acc + x
    return acc


def while_with_assert(x):
    while np.sum(x) < 100.0:
        assert np.max(x) > 0, "no positive entry"
        x = x * 2.0
    return x


def straight_line(x, y):
    y[0] = 5.0
    s = x.sum()
    assert s > 0
    return x / s


def on_python_value(x, n):
    for _ in range(3):
        assert n > 0, "n"
        x = x + n
    return x


def on_whole_array(x):
    for i in range(3):
        assert x > 0  # bool() of an array of two elements raises in Python
        x = x + i
    return x
