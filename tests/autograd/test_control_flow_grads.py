"""Gradients through npdynamo.cond and fori_loop (checked against finite differences, inside a
compiled value_and_grad, through grad of a compiled function, and on the eager tape), and the
clear refusal for while_loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo as nd
from npdynamo.autograd import build_joint
from tests.backends.compare import assert_close
from tests.differential import CountingBackend

RNG = np.random.default_rng(3)


def branchy(w, x):
    return nd.cond(x.sum() > 0, lambda a: np.tanh(a * w).sum(),
                   lambda a: (a * w * w).sum(), x)


def looped(w, x):
    return nd.fori_loop(0, 6, lambda i, v: np.sin(v * w) + x * 0.5, x).sum()


def looped_counted(w, x, n):
    return nd.fori_loop(0, n, lambda i, v: np.cos(v) * w + 0.5, x).sum()


def nested(w, x):
    def body(i, v):
        return nd.cond(v.sum() > 1.0, lambda a: a * w, lambda a: a + w * w, v)

    return nd.fori_loop(0, 4, body, x).sum()


def converging(w, x):
    return nd.while_loop(lambda v: v.sum() < 10.0, lambda v: v * 1.5 + w, x).sum()


def finite_differences(f, w, *args, eps=1e-6):
    g = np.zeros_like(w)
    for i in range(w.size):
        e = np.zeros_like(w)
        e.flat[i] = eps
        g.flat[i] = (f(w + e, *args) - f(w - e, *args)) / (2 * eps)
    return g


CASES = {
    "cond_true": (branchy, (RNG.random(4), RNG.random(4))),
    "cond_false": (branchy, (RNG.random(4), -RNG.random(4))),
    "fori": (looped, (RNG.random(4), RNG.random(4))),
    "fori_counted": (looped_counted, (RNG.random(3), RNG.random(3), 5)),
    "fori_no_iteration": (looped_counted, (RNG.random(3), RNG.random(3), 0)),
    "nested": (nested, (RNG.random(3), RNG.random(3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_value_and_grad_matches_finite_differences(name):
    f, args = CASES[name]

    def step(w, *rest):
        return nd.value_and_grad(f)(w, *rest)

    compiled = nd.compile(step)
    value, grad = compiled(*args)
    want_value, want_grad = step(*args)   # the eager tape through the plain loop
    assert value == want_value
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad, finite_differences(f, *args), rtol=1e-6, atol=1e-8)
    report = nd.explain(step)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_of_a_compiled_function(name):
    f, args = CASES[name]
    got = nd.grad(nd.compile(f))(*args)
    np.testing.assert_allclose(got, nd.grad(f)(*args), rtol=1e-12, atol=1e-14)


def test_gradient_with_respect_to_the_initial_carried_value():
    w, x = RNG.random(4), RNG.random(4)
    got = nd.compile(lambda w, x: nd.grad(looped, argnums=1)(w, x))(w, x)
    np.testing.assert_allclose(got, finite_differences(lambda x, w: looped(w, x), x, w),
                               rtol=1e-6, atol=1e-8)


def test_numba_backend_gradients():
    w, x = RNG.random(4), RNG.random(4)

    def step(w, x):
        return nd.value_and_grad(nested)(w, x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(nd.compile(step, backend="numba")(w, x), step(w, x))


def test_while_loop_gradient_is_a_clear_error():
    w, x = RNG.random(3), RNG.random(3)
    backend = CountingBackend()
    nd.compile(converging, backend=backend)(w, x)
    (gm,) = backend.graphs
    with pytest.raises(nd.GradError, match=r"npdynamo.while_loop \(at .*\) is not differentiab"):
        build_joint(gm, (True, False))


def test_grad_of_a_compiled_while_loop_is_the_tape_s():
    w, x = RNG.random(3), RNG.random(3)
    np.testing.assert_array_equal(nd.grad(nd.compile(converging))(w, x),
                                  nd.grad(converging)(w, x))


def test_while_loop_inside_compiled_value_and_grad_is_left_to_the_tape():
    w, x = RNG.random(3), RNG.random(3)

    def step(w, x):
        return nd.value_and_grad(converging)(w, x)

    value, grad = nd.compile(step)(w, x)
    want_value, want_grad = step(w, x)
    assert value == want_value
    np.testing.assert_array_equal(grad, want_grad)
