"""Programs written with npdynamo.cond/while_loop/fori_loop, shared by the capture and backend
tests: solvers that loop until convergence, stencils with a trip count, branches on data."""

from __future__ import annotations

import numpy as np

import npdynamo as nd
from examples.solver_loop import heat_stencil as stencil_1d  # noqa: F401 - shared
from examples.solver_loop import jacobi  # noqa: F401 - shared


def newton_sqrt(a, tol):
    """x**2 = a by Newton's method, elementwise, until every entry converged."""

    def going(state):
        x, step = state
        return np.abs(step).max() > tol

    def step(state):
        x, _ = state
        delta = (x * x - a) / (2 * x)
        return x - delta, delta

    x, _ = nd.while_loop(going, step, (a + 1.0, np.ones_like(a)))
    return x


def stencil_2d(u, T):
    def body(t, u):
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return new

    return nd.fori_loop(0, T, body, u)


def branch_on_sum(x):
    return nd.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)


def nested(x, n, m):
    """A fori_loop whose body runs a while_loop and a cond: loops inside loops."""

    def outer(i, x):
        def halve_while_big(v):
            return nd.while_loop(lambda w: np.abs(w).max() > 4.0, lambda w: w * 0.5, v)

        y = halve_while_big(x + i)
        return nd.cond(y.sum() > 1.0, lambda a: a - 0.25, lambda a: a * 1.5, y)

    return nd.fori_loop(n, m, outer, x)


def carried_numbers(x, n):
    """A tuple of an array, a Python int and a Python float carried through fori_loop."""

    def body(i, state):
        v, count, total = state
        return v * 0.5 + i, count + 1, total + i * 0.5

    return nd.fori_loop(0, n, body, (x, 0, 0.0))


def early_stopping(losses, patience):
    """Stop when the loss has not improved for ``patience`` steps (the loss curve is data)."""

    def going(state):
        k, best, wait = state
        return (k < losses.shape[0]) & (wait < patience)

    def step(state):
        k, best, wait = state
        loss = losses[k]
        better = loss < best
        return k + 1, np.minimum(loss, best), (wait + 1) * ~better

    return nd.while_loop(going, step, (np.int64(0), np.float64(np.inf), np.int64(0)))


def changes_dtype(x):
    return nd.fori_loop(0, 3, lambda i, v: v * 2.5, x)   # int array -> float array


def writes_outside(x, log):
    def body(i, v):
        log.append(i)
        return v + 1.0

    return nd.fori_loop(0, 3, body, x)


def writes_carried_in_place(x):
    def body(i, v):
        v[0] += 1.0
        return v

    return nd.fori_loop(0, 3, body, x)
