"""A broken frame's code is built once per plan and shared by its entries (issue 23, item 5).

A loop whose body breaks captures its resume function again at each guard miss (an item of a new
type, an array of a new shape), and each capture breaks at the same instruction with the same
stack, locals and resume functions: only the prefix (the graph before the break) differs. So
``bytecode/break_code.break_code`` encodes the code once and each entry gets a copy with its own
prefix in the constant's place. Counted, never timed:

- the same results, arguments after the call and printed output as plain Python, with exact
  graph and break counts, on both backends;
- the counts and results are those of a capture that builds every broken frame anew;
- each entry runs its own prefix (entries of other shapes and types give their own results);
- the code is encoded once per plan, not once per entry.
"""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.bytecode import break_code as gen
from tests.differential import check_same


def loop_breaking_in_body(x, items):
    total = x * 2.0
    for item in items:
        print(type(item).__name__)  # a graph break at the same instruction every iteration
        total = total + np.float64(len(str(item)))
    return total


ITEMS = [1, 2.5, "s", (1,)]


@pytest.fixture
def builds(monkeypatch):
    """How many broken frames' codes were encoded (not taken from the cache) in the test."""
    built: list = []
    build = gen._build_break_code
    monkeypatch.setattr(gen, "_build_break_code", lambda plan: built.append(plan) or build(plan))
    gen._BREAK_CODES.clear()
    return built


class _Forgetful(dict):
    """A ``_BREAK_CODES`` that keeps nothing: every broken frame is built anew."""

    def __setitem__(self, key, value) -> None:
        pass


def _run_shapes(backend: str):
    compiled = npdynamo.compile(loop_breaking_in_body, backend=backend)
    # each shape makes new entries of the same resume functions: new prefixes, the same plans
    check_same(loop_breaking_in_body, np.ones(3), ITEMS, compiled=compiled, graphs=5, breaks=9)
    check_same(loop_breaking_in_body, np.ones((2, 2)), ITEMS, compiled=compiled, graphs=9,
               breaks=17)
    return compiled


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_loop_breaking_in_its_body_encodes_each_plan_once(builds, backend):
    _run_shapes(backend)
    # 20 broken frames built anew (below), from 5 plans: each resume point's entries (items of
    # 4 types, two shapes) break at one instruction with one stack and one set of locals
    assert len(builds) == 5


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_same_counts_and_results_when_every_broken_frame_is_built_anew(builds, monkeypatch,
                                                                      backend):
    monkeypatch.setattr(gen, "_BREAK_CODES", _Forgetful())
    _run_shapes(backend)  # the same exact counts as with the cache
    assert len(builds) == 20


def test_each_entry_runs_its_own_prefix():
    # the prefix holds the graph before the break: x * k for this call's k, shape and dtype
    def scaled(x, k, items):
        y = x * k
        for item in items:
            print(item)
            y = y + 1
        return y

    compiled = npdynamo.compile(scaled, backend="eager")
    # counts so far: a guard miss (dtype, the value of k) adds entries of the frame and resumes
    for x, k, graphs, breaks in [(np.ones(2), 3.0, 2, 3), (np.arange(4).reshape(2, 2), 5, 3, 4),
                                 (np.ones(2), 7.0, 5, 7)]:
        check_same(scaled, x, k, ["a", 1], compiled=compiled, calls=1, graphs=graphs,
                   breaks=breaks)
    before = len(gen._BREAK_CODES)
    check_same(scaled, np.ones(3, dtype=np.float32), 2.0, ["b", 2.0], compiled=compiled, graphs=7,
               breaks=10, calls=1)
    assert len(gen._BREAK_CODES) == before  # new entries, no new plan


def test_reset_forgets_cached_codes():
    compiled = npdynamo.compile(loop_breaking_in_body, backend="eager")
    compiled(np.ones(2), ITEMS[:2])
    assert gen._BREAK_CODES
    npdynamo.reset()
    assert not gen._BREAK_CODES
