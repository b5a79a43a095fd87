"""``capture/flow/if_statements.py``: an ``if`` on an array test becomes one ``cond`` node with
both branches in the graph, for each form CPython compiles (``if``/``else``, ``if`` alone,
``elif`` chains, both branches returning); the switch off or branches that disagree break at
the test, with the reason. More forms (inside loops, writes through views, numba kernels of
branches) are in ``test_if_formation.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def if_else(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y + 1.0


def if_alone(x, scale):
    if np.abs(x).max() > 2.0:
        x = x / np.abs(x).max()
        scale = scale * 2.0
    return x, scale


def elif_chain(x):
    s = x.sum()
    if s > 10:
        y = x * 2.0
    elif s > 0:
        y = x * 3.0
    else:
        y = -x
    return y


def both_return(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


def _conds(compiled) -> list[int]:
    return [graph.ops.count("cond") for graph in npdynamo.inspect(compiled).graphs]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, conds", [(if_else, 1), (if_alone, 1), (elif_chain, 1),
                                       (both_return, 1)], ids=lambda v: getattr(v, "__name__", v))
def test_each_form_is_one_cond_node_taking_either_branch(fn, conds, backend):
    x = np.arange(1.0, 5.0)
    args = (x, 1.5) if fn is if_alone else (x,)
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=0)
    # the other branch runs in the same entry: no recompile, no new graph
    check_same(fn, -args[0], *args[1:], compiled=compiled, graphs=1, breaks=0)
    assert _conds(compiled) == [conds]  # an elif chain nests its second cond in a branch


def if_changes_dtype(x):
    y = x
    if x.sum() > 0:
        y = x.astype(np.float32)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_branches_giving_other_kinds_break_at_the_test(backend):
    compiled = check_same(if_changes_dtype, np.arange(3.0), backend=backend, graphs=2, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert "cannot become an in-graph cond" in brk.reason
    assert "y different kinds: float32[3] and float64[3]" in brk.reason


def test_switched_off_the_test_is_a_graph_break(monkeypatch):
    monkeypatch.setattr(npdynamo.config, "capture_if_branches", False)
    compiled = check_same(if_else, np.arange(3.0), graphs=2, breaks=1)
    assert _conds(compiled) == [0, 0]
