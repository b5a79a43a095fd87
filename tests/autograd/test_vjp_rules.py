"""Every VJP rule against central finite differences, eagerly and as a graph.

For a drawn call ``out = op(*args)`` and a random cotangent ``g``, the rule's cotangent ``ct``
of each float input ``x`` must satisfy ``<ct, v> = d/dt <g, op(x + t v)>`` for a random
direction ``v`` (central differences, float64). The same rule run symbolically through
``reverse_mode`` on a one-node fx graph must give the same cotangents.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from npdynamo.autograd import graph_emitter, reverse_mode, vjp_rules
from npdynamo.autograd.backward_ops import BACKWARD_OPS, index_add
from npdynamo.autograd.emitting import backprop_step
from npdynamo.autograd.tape import eager_emit
from npdynamo.fx import Graph, GraphModule
from npdynamo.ops import REGISTRY, ArrayMeta
from tests.autograd.rule_cases_breadth import CASES

EPS = 1e-6


def float_leaves(args, path=()):
    """(path, array) of every float64 ndarray inside the (nested) args."""
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            yield path + (i,), a
        elif isinstance(a, tuple) and any(isinstance(x, np.ndarray) for x in a):
            yield from float_leaves(a, path + (i,))


def replace(args, path, value):
    items = list(args)
    if len(path) == 1:
        items[path[0]] = value
    else:
        items[path[0]] = replace(items[path[0]], path[1:], value)
    return tuple(items)


def keys_for(args, paths, path=()):
    out = []
    for i, a in enumerate(args):
        here = path + (i,)
        if here in paths:
            out.append(repr(here))  # keys must not be tuples: tuples mean nesting
        elif isinstance(a, tuple) and any(p[: len(here)] == here for p in paths):
            out.append(keys_for(a, paths, here))
        else:
            out.append(None)
    return tuple(out)


def random_like(rng, value):
    if isinstance(value, tuple):  # an op with several results: one cotangent each
        return tuple(random_like(rng, v) for v in value)
    if isinstance(value, np.generic) or np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return np.float64(rng.standard_normal())
    return rng.standard_normal(np.shape(value))


def check_rule(name, args, kwargs):
    op = REGISTRY.get(name) or BACKWARD_OPS[name]
    out = op.impl(*args, **kwargs)
    rng = np.random.default_rng(0)
    g = random_like(rng, out)
    leaves = dict(float_leaves(args))
    keys = keys_for(args, set(leaves))
    cts = {eval(k): ct for k, ct in backprop_step(op, g, out, args, kwargs, keys, eager_emit)}
    for path, x in leaves.items():
        ct = cts.get(path)
        if ct is None:
            ct = np.zeros_like(x)
        assert np.shape(ct) == x.shape and np.result_type(ct) == x.dtype, (path, ct)
        v = rng.standard_normal(x.shape)

        def f(t, path=path, x=x, v=v):
            return _pairing(g, op.impl(*replace(args, path, x + t * v), **kwargs))

        fd = (f(EPS) - f(-EPS)) / (2 * EPS)
        analytic = float(np.sum(ct * v))
        size = sum(float(np.sum(np.abs(gi))) for gi in (g if isinstance(g, tuple) else (g,)))
        scale = 1.0 + size * (1.0 + float(np.max(np.abs(x), initial=0.0)))
        assert abs(fd - analytic) <= 1e-6 * abs(fd) + 1e-7 * scale, (name, path, fd, analytic)
    check_symbolic(op, args, kwargs, g, leaves, cts)


def _pairing(g, out) -> float:
    """<g, out>, summed over the results of a multi-result op."""
    if isinstance(out, tuple):
        return float(sum(np.sum(gi * oi) for gi, oi in zip(g, out)))
    return float(np.sum(g * out))


def check_symbolic(op, args, kwargs, g, leaves, eager_cts):
    """The same rule through reverse_mode on a graph ``out = op(*placeholders)``."""
    graph = Graph()
    inputs, placeholders = [], {}

    def to_graph(a, path):
        if isinstance(a, np.ndarray):
            node = graph.placeholder(f"in{len(inputs)}", ArrayMeta.of(a))
            inputs.append(a)
            placeholders[path] = node
            return node
        if isinstance(a, tuple):
            return tuple(to_graph(x, path + (i,)) for i, x in enumerate(a))
        if isinstance(a, list):
            return a
        return a

    node_args = tuple(to_graph(a, (i,)) for i, a in enumerate(args))
    gs = g if isinstance(g, tuple) else (g,)
    g_nodes = tuple(graph.placeholder(f"g{i}", ArrayMeta(np.shape(gi), np.float64))
                    for i, gi in enumerate(gs))
    call = graph.call_function(op, node_args, kwargs)
    call.meta["val"] = op.infer(*_metas(node_args), **kwargs)
    wrt = [placeholders[p] for p in leaves]
    grads = reverse_mode([call], call, wrt, graph_emitter(graph),
                         cotangent=g_nodes if isinstance(g, tuple) else g_nodes[0])
    graph.output(tuple(x for x in grads if x is not None))
    results = iter(GraphModule(graph)(*inputs, *map(np.asarray, gs)))
    for path, ct in zip(leaves, grads):
        if ct is None:
            assert path not in eager_cts or not np.any(eager_cts[path])
            continue
        value = next(results)
        assert ct.meta["val"].shape == np.shape(value)
        np.testing.assert_allclose(value, eager_cts[path], rtol=1e-12, atol=1e-12)


def _metas(a):
    from npdynamo.fx import map_arg

    return map_arg(a, lambda n: n.meta["val"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_vjp_matches_finite_differences(name):
    @settings(max_examples=20, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(CASES[name])
    def run(case):
        args, kwargs = case
        check_rule(name, args, kwargs)

    run()


def test_every_differentiable_op_has_a_rule_and_a_case():
    assert vjp_rules.missing_rules() == []
    differentiable = {n for n, op in {**REGISTRY, **BACKWARD_OPS}.items() if op.differentiable}
    assert differentiable - set(CASES) == set()


def test_backward_ops_stay_out_of_the_registry_and_pickle_by_name():
    assert "index_add" not in REGISTRY
    assert pickle.loads(pickle.dumps(index_add)) is index_add


def test_non_differentiable_ops_are_marked():
    for name in ("argmax", "argmin", "equal", "less", "greater_equal", "isnan", "floor_divide",
                 "logical_and", "bitwise_and", "any", "all", "zeros", "arange", "eye"):
        assert not REGISTRY[name].differentiable, name
        assert REGISTRY[name].vjp is None, name
