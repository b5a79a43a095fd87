"""Gradients of the test losses: tape vs central finite differences vs joint graphs.

The joint graphs are built from the loss's forward graph captured by ``npdynamo.compile``
(losses that capture into one graph) and from a graph made out of its tape (every loss), then
run whole and as the partitioned forward/backward pair. All must agree with the tape.
"""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.autograd import (
    build_joint,
    partition,
    tree_flatten,
    tree_unflatten,
    value_and_grad,
)
from tests.autograd.graphs import captured_graph, tape_graph
from tests.autograd.losses import LOSSES

RTOL = 1e-6
BY_NAME = {L.name: L for L in LOSSES}
ONE_GRAPH = [L.name for L in LOSSES if L.one_graph]


def argnums_of(L):
    return (L.argnums,) if isinstance(L.argnums, int) else tuple(L.argnums)


def flat_grads(L, grads):
    per_arg = (grads,) if isinstance(L.argnums, int) else grads
    out = []
    for g in per_arg:
        out += tree_flatten(g)[0]
    return out


def finite_differences(L, eps=1e-6):
    """Central differences of every scalar inside the differentiated arguments."""
    args = L.make_args()
    out = []
    for i in argnums_of(L):
        leaves, treedef, _ = tree_flatten(args[i])
        for k, leaf in enumerate(leaves):
            arr = np.array(leaf, dtype=np.float64)
            fd = np.zeros_like(arr)
            for idx in np.ndindex(arr.shape):
                values = []
                for sign in (1.0, -1.0):
                    moved = arr.copy()
                    moved[idx] += sign * eps
                    new = list(leaves)
                    new[k] = float(moved) if isinstance(leaf, float) else moved
                    call = list(L.make_args())
                    call[i] = tree_unflatten(treedef, new)
                    values.append(L.fn(*call))
                fd[idx] = (values[0] - values[1]) / (2 * eps)
            out.append(fd)
    return out


def tape_grads(L):
    value, grads = value_and_grad(L.fn, L.argnums)(*L.make_args())
    return value, flat_grads(L, grads)


@pytest.mark.parametrize("name", [L.name for L in LOSSES])
def test_tape_matches_finite_differences(name):
    L = BY_NAME[name]
    value, grads = tape_grads(L)
    assert value == L.fn(*L.make_args())
    for got, want in zip(grads, finite_differences(L), strict=True):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-8)


def check_joint(gm, inputs, requires_grad, expected):
    joint = build_joint(gm, requires_grad)
    tangent = np.ones(())
    outs = joint.gm(*inputs, tangent)
    grads = outs[joint.num_outputs:]
    assert len(grads) == len(expected)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12)
        assert np.result_type(got) == np.result_type(want)
    part = partition(joint)
    fwd = part.forward(*inputs)
    saved = fwd[part.num_outputs:]
    np.testing.assert_allclose(fwd[0], outs[0], rtol=1e-12)
    for got, want in zip(part.backward(*saved, tangent), grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    for node in part.backward.graph.nodes:
        if node.op == "call_function" and node.name in part.recomputed:
            assert node.target.kind == "elementwise" or node.target.name not in (
                "matmul", "dot", "einsum", "tensordot", "outer"), node.name
    return part


@pytest.mark.parametrize("name", [L.name for L in LOSSES])
def test_joint_of_tape_graph_matches_tape(name):
    L = BY_NAME[name]
    _, grads = tape_grads(L)
    gm, inputs = tape_graph(L.fn, L.make_args(), L.argnums)
    array_grads = [g for g, leaf in zip(grads, leaves_of(L)) if isinstance(leaf, np.ndarray)]
    assert len(array_grads) == len(inputs) > 0
    check_joint(gm, inputs, [True] * len(inputs), array_grads)


def leaves_of(L, args=None):
    args = L.make_args() if args is None else args
    leaves = []
    for i in argnums_of(L):
        leaves += tree_flatten(args[i])[0]
    return leaves


@pytest.mark.parametrize("name", ONE_GRAPH)
def test_joint_of_captured_graph_matches_tape(name):
    L = BY_NAME[name]
    args = L.make_args()
    _, grads = value_and_grad(L.fn, L.argnums)(*args)
    gm, inputs = captured_graph(L.fn, args)
    by_id = {id(leaf): g for leaf, g in zip(leaves_of(L, args), flat_grads(L, grads))}
    requires = [id(x) in by_id and isinstance(x, np.ndarray) for x in inputs]
    assert any(requires)
    expected = [by_id[id(x)] for x, r in zip(inputs, requires) if r]
    check_joint(gm, inputs, requires, expected)


def test_there_are_at_least_30_losses():
    assert len(LOSSES) >= 30
    assert len(ONE_GRAPH) >= 20
