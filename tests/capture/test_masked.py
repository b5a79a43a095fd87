"""``capture/masked.py``: ``x[mask] op= v``, ``y[mask] = <expression of selections>`` and
``f(x[mask]).sum()`` under capture, plain against compiled with exact graph/break counts (the
array written back into the caller's, the reduction one node), and what stays a break: a
selection used any other way, selections under different masks combined, an in-place update
that is not the augmented assignment. ``same_value`` (the test that two masks are one) on
hand-made graph nodes. The numba loops of masked reductions are tested in
``tests/backends/test_masked_reductions.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.capture.masked import same_value
from npdynamo.fx.graph import Graph
from tests.differential import check_same


def test_same_value_is_what_cse_would_merge():
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    gt = ops.REGISTRY["greater"]
    a = g.call_function(gt, (x, 0.0))
    b = g.call_function(gt, (x, 0.0))
    assert same_value(a, a) and same_value(a, b)
    assert not same_value(a, g.call_function(gt, (y, 0.0)))  # another input
    assert not same_value(a, g.call_function(gt, (x, 0)))  # 0 == 0.0, another constant type
    assert not same_value(a, g.call_function(ops.REGISTRY["less"], (x, 0.0)))
    assert not same_value(x, y) and same_value(x, x)  # placeholders are themselves


def augmented(x, v):
    mask = x > 2
    x[mask] += v  # a MaskedRead, a MaskedUpdate, one mask_update node written back
    x[x < 1] *= 2.0
    return x.sum()


def assigned(x, y):
    m = x > 1
    y[m] = x[m] * 2 + y[m]  # a MaskedExpr stored under the same mask: one mask_apply node
    return y


def reductions(x, y):
    m = x > 1
    return (x[m] * y[m]).sum(), (x[m] + 1.0).mean()


def column(a, v):
    mask = a[:, 0] > 0
    return a[mask, 1].sum() * v  # A[mask, j]: a selection of the view A[:, 1], reduced


def selection_used_otherwise(x):
    y = x * 2
    picked = x[x > 1]  # a size only the data knows: computed in Python at a break
    return picked + y.sum()


def two_masks(x):
    y = x * 2
    return (x[x > 1] + x[x < 3]).sum() + y  # different masks (of one count): a break


PROGRAMS_ONE_GRAPH = [
    (augmented, lambda: (np.arange(5.0), 1.5)),
    (assigned, lambda: (np.arange(5.0), np.ones(5))),
    (reductions, lambda: (np.arange(5.0), np.arange(5.0) - 1)),
    (column, lambda: (np.array([[1.0, 2.0], [-1.0, 3.0], [2.0, 0.0]]), 10.0)),
]


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn, make", PROGRAMS_ONE_GRAPH,
                         ids=[p[0].__name__ for p in PROGRAMS_ONE_GRAPH])
def test_masked_updates_and_reductions_are_one_graph(backend, fn, make):
    check_same(fn, *make(), backend=backend, graphs=1, breaks=0)


def test_other_uses_of_a_selection_break():
    # the graph before the break computes y and the selection; the add runs in Python
    check_same(selection_used_otherwise, np.arange(5.0), graphs=1, breaks=1)
    check_same(two_masks, np.arange(5.0), graphs=2, breaks=1)
