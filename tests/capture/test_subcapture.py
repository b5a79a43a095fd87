"""``capture/flow/subcapture.py``: a sub-capture records into its own graph while active, lifts
an outer graph value into one placeholder (through every enclosing sub-capture), and refuses a
body that writes into an outer array or lets its values escape. Asked directly over a small
stand-in context; then end to end through ``npdynamo.cond`` and a formed loop (every former of
``flow/`` uses it: ``test_control_flow.py``, ``test_while_formation.py`` go further)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.subcapture import SubCapture
from npdynamo.capture.values import ArrayValue
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta
from tests.differential import check_same

META = ArrayMeta((3,), np.dtype(np.float64))


class Context:
    """What a sub-capture reads of a ``CaptureContext``: the function's own graph, the active
    sub-capture, and how a refusal is made."""

    def __init__(self) -> None:
        self.root_graph = Graph()
        self.subcapture = None

    def unsupported(self, reason, hint="", kind="unsupported_construct"):
        return CaptureUnsupported(reason, hint, kind=kind)


def test_an_outer_value_is_lifted_once_into_a_placeholder():
    ctx = Context()
    x = ctx.root_graph.placeholder("x", META)
    sub = SubCapture(ctx, "cond_true_0")
    inside = sub.lift_node(x)
    assert inside.graph is sub.graph and inside.op == "placeholder"
    assert inside.meta["val"] is META
    assert sub.lift_node(x) is inside and sub.lift_node(inside) is inside
    assert sub.extra == [x]


def test_a_nested_sub_capture_lifts_through_its_parent():
    ctx = Context()
    x = ctx.root_graph.placeholder("x", META)
    outer = SubCapture(ctx, "while_body")
    with outer.active():
        inner = SubCapture(ctx, "cond_true_0")
    assert inner.parent is outer
    lifted = inner.lift_node(x)
    assert outer.extra == [x]  # the outer body takes x in ...
    assert inner.extra == [outer.lifted[x]]  # ... and passes its own placeholder on
    assert lifted.graph is inner.graph


def test_active_sets_the_context_and_restores_it_after_an_error():
    ctx = Context()
    sub = SubCapture(ctx, "body")
    with pytest.raises(KeyError), sub.active():
        assert ctx.subcapture is sub
        raise KeyError
    assert ctx.subcapture is None


def test_a_value_of_another_body_cannot_be_lifted():
    ctx = Context()
    stray = Graph().placeholder("y", META)
    with pytest.raises(CaptureUnsupported, match="used outside it") as info:
        SubCapture(ctx, "body").lift_node(stray)
    assert info.value.kind == "side_effect"


def test_finish_refuses_an_outer_array_written_in_place():
    ctx = Context()
    value = ArrayValue(ctx.root_graph.placeholder("x", META))
    sub = SubCapture(ctx, "while_loop_body_0")  # {api}_{role}_{n}, as formed
    node = sub.lift(value)
    assert sub.watched == [(value, value.node)]
    value.node = ctx.root_graph.placeholder("x_written", META)  # what an in-place write does
    with pytest.raises(CaptureUnsupported, match="npdynamo.while_loop writes into an array"):
        sub.finish([])
    fine = SubCapture(ctx, "cond_true_1")
    lifted = fine.lift(value)
    module = fine.finish([value])
    assert module.graph.output_node.args == ((lifted,),)
    assert node.graph is sub.graph


def cond_in_a_loop(x, n):
    for i in range(n):
        x = npdynamo.cond(x.sum() > i, lambda v: v * 0.5, lambda v: v + 1.0, x)
    return x


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_cond_inside_a_formed_loop(backend):
    check_same(cond_in_a_loop, np.arange(4.0), 5, backend=backend, graphs=1, breaks=0)
