"""``capture/flow/if_statements.py``: an ``if`` on an array test becomes one ``cond`` node with
both branches in the graph, for each form CPython compiles (``if``/``else``, ``if`` alone,
``elif`` chains, both branches returning); the switch off or branches that disagree break at
the test, with the reason. More forms (inside loops, writes through views, numba kernels of
branches) are in ``test_if_formation.py``."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.capture.test_if_formation import if_else, if_only
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


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


X = np.arange(1.0, 5.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, other", [
    (if_else, (X,), (-X,)),
    (if_only, (X, 1.5), (X * 0.1, 1.5)),
    (elif_chain, (X,), (-X,)),
    (both_return, (X,), (-X,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_each_form_is_one_cond_node_taking_either_branch(fn, args, other, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=0)
    # the other branch runs in the same entry: no recompile, no new graph
    check_same(fn, *other, compiled=compiled, graphs=1, breaks=0)
    assert _conds(compiled) == [1]  # an elif chain nests its second cond in a branch


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
