"""Case strategies for the control-flow ops: small subgraphs built by hand around drawn arrays.

``cond``/``while_loop``/``fori_loop`` take ``GraphModule``s; the cases build them with shapes
propagated from the drawn operands, so the rule (which reads the subgraphs' output metas) and
the implementation (which runs them) see the same programs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from npdynamo import ops
from npdynamo.fx import Graph, GraphModule
from npdynamo.fx.passes import propagate_shapes
from npdynamo.ops import ArrayMeta, ScalarMeta
from tests.ops.strategies import Case

_FLOATS = st.sampled_from([np.float64, np.float32])
_SHAPES = st.sampled_from([(), (3,), (2, 3)])


def module(name: str, inputs: list, build) -> GraphModule:
    """A subgraph with one placeholder per input meta; ``build(graph, *placeholders)`` gives
    the output tuple."""
    g = Graph()
    params = [g.placeholder(f"in_{i}") for i in range(len(inputs))]
    g.output(tuple(build(g, *params)))
    propagate_shapes(g, inputs)
    return GraphModule(g, name)


@st.composite
def array(draw, nonneg: bool = False) -> np.ndarray:
    dtype, shape = draw(_FLOATS), draw(_SHAPES)
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return np.abs(x) if nonneg else x


@st.composite
def cond_case(draw) -> Case:
    x = draw(array())
    pred = draw(st.sampled_from([np.True_, np.False_, np.array(1.5), np.array(0.0), True, 0]))
    meta = ArrayMeta.of(x)
    true = module("true_branch", [meta], lambda g, a: [g.call_function(ops.multiply, (a, 2))])
    flip = draw(st.booleans())  # the false branch may return a float64 where true returns x's
    false = module("false_branch", [meta], lambda g, a: [g.call_function(
        ops.subtract, (a, np.float64(1.0) if flip else 1.0))])
    return Case((pred, true, false, (x,)), unsupported_ok=flip)


@st.composite
def while_case(draw) -> Case:
    x = draw(array(nonneg=True))
    meta = ArrayMeta.of(x)
    limit = draw(st.floats(0.0, 20.0))

    def test(g, a):
        total = g.call_function(ops.sum, (a,))
        return [g.call_function(ops.less, (total, limit))]

    cond = module("cond", [meta], test)
    body = module("body", [meta], lambda g, a: [g.call_function(ops.add, (a, 1.0))])
    # a 0-d array plus a number is a NumPy scalar: the carried kind changes, the rule refuses
    return Case((cond, body, (x,)), unsupported_ok=x.ndim == 0)


@st.composite
def fori_case(draw) -> Case:
    x = draw(array())
    lower, upper = draw(st.integers(-2, 4)), draw(st.integers(-2, 6))
    meta = ArrayMeta.of(x)
    body = module("body", [ScalarMeta(int), meta],
                  lambda g, i, a: [g.call_function(ops.add, (a, i))])
    return Case((lower, upper, body, (x,)), unsupported_ok=x.ndim == 0)


@st.composite
def fori_vjp_case(draw) -> Case:
    from npdynamo.autograd.vjp_higher_order import vjp_graph

    x = draw(array())
    e = np.cos(x) + 0.5  # an outer value of the same kind the body multiplies by
    ct = np.ones_like(x)
    lower, upper = draw(st.integers(-1, 3)), draw(st.integers(-1, 4))
    meta = ArrayMeta.of(x)
    body = module("body", [ScalarMeta(int), meta, meta], lambda g, i, v, w: [
        g.call_function(ops.multiply, (g.call_function(ops.sin, (v,)), w))])
    slots = [ScalarMeta(int), meta, meta]
    backward = vjp_graph(body.graph, slots, [0, 1, 2], [0], [1, 2], "body_vjp")
    return Case((lower, upper, body, backward, (x,), (e,), (ct,), (0,)),
                unsupported_ok=x.ndim == 0)


@st.composite
def tuple_item_case(draw) -> Case:
    items = tuple(draw(st.lists(array(), min_size=1, max_size=3)))
    return Case((items, draw(st.integers(0, len(items) - 1))))


CONTROL_FLOW_CASES = {
    "cond": cond_case(),
    "while_loop": while_case(),
    "fori_loop": fori_case(),
    "fori_loop_vjp": fori_vjp_case(),
    "tuple_item": tuple_item_case(),
}
