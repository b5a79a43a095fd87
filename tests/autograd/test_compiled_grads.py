"""Gradients of every test loss four ways: the tape, value_and_grad inside a compiled function
(the joint graph captured in one graph where there is no break), grad of a compiled function
(each captured graph one AOT step, chained by the tape across breaks), and finite differences."""

import contextlib
import io

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import tree_flatten
from tests.autograd.losses import LOSSES
from tests.differential import CountingBackend

IDS = [loss.name for loss in LOSSES]


def leaves(tree):
    return tree_flatten(tree)[0]


def assert_grads_close(expected, got, rtol=1e-6):
    e, g = leaves(expected), leaves(got)
    assert len(e) == len(g)
    for a, b in zip(e, g):
        assert type(a) is type(b), (type(a), type(b))
        np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-9)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape


def finite_difference(fn, args, argnums, eps=1e-6):
    """Central differences of fn's scalar output for every differentiated array leaf."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    grads = []
    for i in nums:
        flat, treedef, _paths = tree_flatten(args[i])
        out = []
        for j, leaf in enumerate(flat):
            if isinstance(leaf, float):
                def at(v, j=j, i=i, flat=flat, treedef=treedef):
                    new = list(flat)
                    new[j] = v
                    call = list(args)
                    call[i] = npdynamo.autograd.tree_unflatten(treedef, new)
                    return float(fn(*call))

                out.append((at(leaf + eps) - at(leaf - eps)) / (2 * eps))
                continue
            g = np.zeros_like(leaf)
            for idx in np.ndindex(leaf.shape):
                orig = leaf[idx]
                leaf[idx] = orig + eps
                up = float(fn(*args))
                leaf[idx] = orig - eps
                down = float(fn(*args))
                leaf[idx] = orig
                g[idx] = (up - down) / (2 * eps)
            out.append(g)
        grads.append(npdynamo.autograd.tree_unflatten(treedef, out))
    return grads[0] if isinstance(argnums, int) else tuple(grads)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_compiled_value_and_grad_matches_the_tape(loss):
    vg = npdynamo.value_and_grad(loss.fn, argnums=loss.argnums)

    def step(*args):
        return vg(*args)

    with contextlib.redirect_stdout(io.StringIO()):
        value, tape_grads = vg(*loss.make_args())
        backend = CountingBackend()
        compiled = npdynamo.compile(step, backend=backend)
        for _ in range(2):
            got_value, got_grads = compiled(*loss.make_args())
    np.testing.assert_allclose(got_value, value, rtol=1e-12)
    assert_grads_close(tape_grads, got_grads)
    if loss.one_graph and not any(isinstance(x, float) for x in leaves(loss.make_args())):
        assert backend.count == 1, "forward and backward should be one captured graph"


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_grad_of_compiled_matches_the_tape_and_finite_differences(loss):
    with contextlib.redirect_stdout(io.StringIO()):
        tape_grads = npdynamo.grad(loss.fn, argnums=loss.argnums)(*loss.make_args())
        compiled_grads = npdynamo.grad(npdynamo.compile(loss.fn), argnums=loss.argnums)(
            *loss.make_args())
        numeric = finite_difference(loss.fn, loss.make_args(), loss.argnums)
    assert_grads_close(tape_grads, compiled_grads)
    for a, b in zip(leaves(tape_grads), leaves(numeric)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_enough_losses():
    assert len(LOSSES) >= 30


def _loss_with_break(w, x):
    h = np.tanh(x @ w)
    npdynamo.graph_break()
    return (h * h).mean()


def test_explain_of_a_compiled_gradient_reports_what_is_saved():
    w, x = np.random.default_rng(0).standard_normal((3, 2)), np.ones((4, 3))
    out = npdynamo.explain(npdynamo.grad(npdynamo.compile(_loss_with_break)))(w, x)
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    np.testing.assert_allclose(out.result, npdynamo.grad(_loss_with_break)(w, x), rtol=1e-12)
    text = out.verbose()
    assert "saved for backward" in text and "B)" in text
    partitions = [p for f in out.aot_functions for p in f.partitions]
    assert len(partitions) == 2
    assert all(p.bytes_saved <= p.bytes_all_intermediates for p in partitions)


def _complex_on_the_path(x):
    return np.sum(np.abs(x * 1j) * x)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_complex_value_on_the_path_is_an_error_not_a_lost_gradient(backend):
    x = np.array([0.5, -1.0, 2.0])
    for grad in (npdynamo.grad(npdynamo.compile(_complex_on_the_path, backend=backend)),
                 npdynamo.compile(npdynamo.grad(_complex_on_the_path), backend=backend)):
        with pytest.raises(npdynamo.GradError, match="gradients through complex values"):
            grad(x)
