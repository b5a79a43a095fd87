"""``capture/session.py``: ``CaptureContext``, one capture's state, driven by hand: graph inputs
with their sources and symbolic dimensions, ``call_op`` (the one place an op becomes a node)
with NumPy's errors as the user's and the rules' refusals as breaks, guards recorded with the
user's line and compiled, the node and item limits. Then the limits end to end, plain against
compiled with exact graph/break counts. The captures driven by real frames are tested
throughout ``tests/capture``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.api import reset
from npdynamo.capture import session
from npdynamo.capture.errors import CaptureUnsupported, UserCodeRaises
from npdynamo.capture.guards import GuardKind, LocalSource
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.values import ArrayValue, SizeValue
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.symbolic import SymInt
from tests.differential import check_same


def model(x, y):
    return x + y


def capture_with_inputs(dynamic=frozenset()):
    ctx = CaptureContext(model)
    x, y = np.ones((2, 3)), np.ones(3, np.float32)
    xs, ys = LocalSource("x", 0), LocalSource("y", 1)
    xv = ArrayValue(ctx.add_placeholder(x, xs, dynamic), xs)
    yv = ArrayValue(ctx.add_placeholder(y, ys), ys)
    return ctx, xv, yv


def test_inputs_and_one_op():
    ctx, xv, yv = capture_with_inputs()
    assert ctx.arg_names == ["x", "y"] and ctx.guards.arg_count == 2
    assert [n.name for n, _ in ctx.placeholders] == ["x", "y"]
    assert xv.node.meta["source_name"] == "L['x']"
    out = ctx.call_op(ops.REGISTRY["add"], (xv, yv), {})
    assert isinstance(out, ArrayValue)
    assert out.meta == ArrayMeta((2, 3), np.dtype("float64"))  # NumPy's promotion and shape
    assert out.node.args == (xv.node, yv.node) and ctx.node_count == 1
    assert ctx.graph is ctx.root_graph and ctx.lift is None  # no sub-capture active


def test_numpys_errors_are_the_users_and_refusals_are_breaks():
    ctx, xv, _ = capture_with_inputs()
    bad = ArrayValue(ctx.add_placeholder(np.ones(4), LocalSource("z", 2)))
    with pytest.raises(UserCodeRaises) as raised:
        ctx.call_op(ops.REGISTRY["add"], (xv, bad), {})  # (2, 3) + (4,): NumPy's ValueError
    assert type(raised.value.error) is ValueError
    with pytest.raises(CaptureUnsupported) as refused:
        ctx.call_op(ops.REGISTRY["getitem"], (xv, np.array([True, False])), {})
    assert "cannot be captured" in refused.value.reason
    assert ctx.node_count == 0  # nothing recorded by either


def test_guards_carry_the_users_line_and_compile():
    ctx, _, _ = capture_with_inputs()
    ctx.guard(LocalSource("x", 0), GuardKind.SHAPE, (2, 3))
    ctx.guard(None, GuardKind.SHAPE, (9,))  # no source: nothing to check again
    (guard,) = ctx.guards.guards
    assert guard.where == (model.__code__.co_filename, model.__code__.co_firstlineno)
    ctx.finish_guards()
    assert ctx.guards.check(np.ones((2, 3)), None) and not ctx.guards.check(np.ones(3), None)


def test_dynamic_dimensions_are_symbols_and_reading_one_specialises_it():
    ctx, xv, _ = capture_with_inputs(dynamic=frozenset({1}))
    rows, cols = xv.meta.shape
    assert rows == 2 and isinstance(cols, SymInt)
    size = ctx.size_value(cols)
    assert isinstance(size, SizeValue) and ctx.facts.facts == []
    assert size.value == 3 and len(ctx.facts.facts) == 1  # Python read it: a fact now
    ctx.finish_guards()  # the size guard: the dimension may change, the fact may not
    assert ctx.guards.check(np.ones((2, 3)), np.ones(3, np.float32))
    assert not ctx.guards.check(np.ones((2, 5)), np.ones(3, np.float32))


def test_the_node_limit_ends_the_graph(monkeypatch):
    monkeypatch.setattr(session, "GRAPH_NODE_LIMIT", 2)
    ctx, xv, yv = capture_with_inputs()
    add = ops.REGISTRY["add"]
    xv = ctx.call_op(add, (ctx.call_op(add, (xv, yv), {}), yv), {})
    with pytest.raises(CaptureUnsupported, match="reached 2 ops"):
        ctx.call_op(add, (xv, yv), {})


def five_steps(x):
    for _ in range(5):
        x = x * 1.5 + 1.0
    return x


def sums_items(x, items):
    return x + sum(items)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_the_limits_end_to_end(backend, monkeypatch):
    check_same(five_steps, np.arange(3.0), backend=backend, graphs=1, breaks=0)
    reset()  # the entries of one code are shared by its compiled functions: capture anew
    monkeypatch.setattr(session, "GRAPH_NODE_LIMIT", 6)
    # 10 ops: the first graph ends at the 7th, the rest continues in a resume function
    check_same(five_steps, np.arange(3.0), backend=backend, graphs=2, breaks=1)
    monkeypatch.setattr(session, "ITEMS_READ_LIMIT", 4)
    check_same(sums_items, np.arange(3.0), [1.0, 2.0, 3.0], backend=backend, graphs=1, breaks=0)
    # six items pass the limit: a break (the counts include the three-item entry's graph)
    check_same(sums_items, np.arange(3.0), [1.0] * 6, backend=backend, graphs=2, breaks=1)
