"""``capture/builtin_calls.py``: Python builtins evaluated at capture on tracked values. Each
program runs plain and compiled: ``len``/``range``/``enumerate``/``zip``/``reversed``/``iter``/
``next`` unrolled, ``min``/``max``/``abs``/``sum`` on numbers and folded into ops on arrays,
``float`` of a graph value and ``math.sqrt`` as graph numbers, ``isinstance``/``type``/
``sorted``/``dict``/``getattr``; a builtin that would raise keeps the frame in Python with
Python's error, and ``npdynamo.graph_break()`` breaks where it is called (a no-op in Python)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.builtin_calls import graph_break
from tests.differential import check_same

BACKENDS = ["eager", "numba"]
X = np.arange(3.0)


def iteration(x, items):
    total = x * 0.0
    for i, v in enumerate(items):
        total = total + i * v
    for a, b in zip(items, reversed(items)):
        total = total + a - b
    it = iter(items)
    return total + next(it), next(it, None), len(x), list(range(len(items)))


def numbers_and_arrays(x, items):
    m = max(items) + min(2, 3) + abs(-1.5) + sum(items)
    return m + abs(x) + sum([x, x]) + max(x.sum(), 1.0)


def graph_numbers(x, s):
    return float(x.sum()) + 1.0, x * math.sqrt(s), int(x.max())


def types_and_attributes(x, items):
    d = dict(a=1.0, b=2.0)
    return (x * d["b"], x.shape, isinstance(x, np.ndarray), type(items) is list,
            sorted(items), tuple(items))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (iteration, (X, [1.0, 2.0, 5.0])),
    (numbers_and_arrays, (X, [1.0, 2.0, 5.0])),
    (graph_numbers, (X, 2.0)),
    (types_and_attributes, (X, [3.0, 1.0])),
], ids=lambda v: getattr(v, "__name__", ""))
def test_builtins_evaluate_in_one_graph(fn, args, backend):
    check_same(fn, *args, backend=backend, graphs=1, breaks=0)


def len_of_a_number(x):
    return len(x.sum())


def next_of_an_empty_iterator(x):
    return x * next(iter([]))


@pytest.mark.parametrize("fn", [len_of_a_number, next_of_an_empty_iterator])
def test_a_builtin_that_would_raise_runs_the_frame_in_python(fn):
    compiled = check_same(fn, X, graphs=0, breaks=0)
    (entry,) = npdynamo.inspect(compiled).entries
    assert entry.runs_python.split(":")[0] in ("TypeError", "StopIteration")


def asks_for_a_break(x):
    y = x + 1.0
    npdynamo.graph_break()
    return y * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_break_breaks_where_it_is_called(backend):
    assert graph_break() is None and npdynamo.graph_break is graph_break
    compiled = check_same(asks_for_a_break, X, backend=backend, graphs=2, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert brk.lineno == asks_for_a_break.__code__.co_firstlineno + 2
    assert "npdynamo.graph_break() was called" in brk.reason
