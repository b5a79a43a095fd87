"""``with np.errstate(...):`` inside a compiled function (``capture/flow/errstate_blocks.py``): one
graph whose ops inside the block run under its modes, on both backends, with NumPy's results,
warnings and exceptions, composed with the state the caller runs under."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same, check_same_warnings

BACKENDS = ["eager", "numba"]


def log_ignoring_zeros(a):
    with np.errstate(divide="ignore"):
        r = np.log(a)
    s = np.log(a)  # the same op outside the block: warns (never merged with the one inside)
    return r, s


def nested(a, b):
    with np.errstate(all="ignore"):
        with np.errstate(divide="warn"):
            r = a / b  # divide warns, invalid (0/0) is still ignored
        t = a / b + np.sqrt(-a)
    u = np.sqrt(-a)
    return r, t, u


def raising_after_a_write(a, b):
    a += 1.0  # written before the raise: the rerun in Python must see the caller's a
    with np.errstate(divide="raise"):
        c = a / b
    return c


def loop_inside(a, n):
    total = np.zeros_like(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(n):
            total = total + np.log(a - i)
    return total


def mode_from_a_variable(a, mode):
    with np.errstate(over=mode):
        return np.exp(a * 1000.0)


def returning_inside(a):
    with np.errstate(divide="ignore"):
        return 1.0 / a


CASES = [
    (log_ignoring_zeros, lambda: (np.arange(3.0),)),
    (nested, lambda: (np.arange(3.0), np.zeros(3))),
    (raising_after_a_write, lambda: (np.arange(3.0), np.array([1.0, 0.0, 2.0]))),
    (raising_after_a_write, lambda: (np.arange(3.0), np.ones(3))),
    (loop_inside, lambda: (np.arange(4.0), 3)),
    (mode_from_a_variable, lambda: (np.ones(2), "ignore")),
    (mode_from_a_variable, lambda: (np.ones(2), "raise")),
    (returning_inside, lambda: (np.arange(3.0),)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", CASES, ids=[f"{c[0].__name__}{i}" for i, c in enumerate(CASES)])
def test_errstate_block_matches_numpy(backend, fn, make):
    # one graph each (where NumPy raises, the graph raises and Python reruns the frame)
    check_same_warnings(fn, *make(), backend=backend, graphs=1, breaks=0)


QUIET = [c for i, c in enumerate(CASES) if i not in (2, 6)]  # the others raise in NumPy


@pytest.mark.parametrize("fn,make", QUIET, ids=[c[0].__name__ for c in QUIET])
def test_errstate_block_is_in_the_graph(fn, make):
    report = npdynamo.explain(fn)(*make())
    assert report.graph_break_count == 0 and report.graph_count == 1, report
    with pytest.raises(FloatingPointError):  # and so it raises under fullgraph as NumPy does
        npdynamo.compile(raising_after_a_write, fullgraph=True)(np.ones(2), np.zeros(2))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("outer", [{"all": "raise"}, {"all": "ignore"}, {"divide": "raise"}])
def test_the_callers_state_composes(backend, outer):
    compiled = npdynamo.compile(nested, backend=backend)
    args = (np.arange(3.0), np.zeros(3))
    with np.errstate(**outer):
        check_same(nested, *args, compiled=compiled, graphs=1, breaks=0)


def passed_in(a, state):
    with state:
        return np.log(a)


def block_with_a_break(a):
    with np.errstate(divide="ignore"):
        r = np.log(a)
        print("inside")  # a break inside the block: the frame runs in Python
    return r


def with_a_callback(a):
    with np.errstate(call=print, divide="call"):
        return np.log(a)


def bad_mode(a):
    with np.errstate(divide="loudly"):
        return np.log(a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", [
    (passed_in, (np.arange(3.0), np.errstate(divide="ignore"))),
    (block_with_a_break, (np.arange(3.0),)),
    (with_a_callback, (np.arange(3.0),)),
    (bad_mode, (np.arange(3.0),)),
])
def test_other_blocks_run_in_python(backend, fn, args):
    # a break inside a block: its __exit__ cannot be handed back, the frame runs in Python
    graphs, breaks = {passed_in: (0, 2), block_with_a_break: (0, 1), with_a_callback: (2, 5),
                      bad_mode: (0, 3)}[fn]
    check_same_warnings(fn, *args, backend=backend, graphs=graphs, breaks=breaks)
