"""Plain ``for ... in range(...)`` loops for the for-loop formation tests: ones that become one
in-graph fori_loop, and ones that must keep today's unrolled behaviour."""

# ruff: noqa: B007 - time loops name their unused step variable, as users write them

from __future__ import annotations

import numpy as np

STEPS = 25  # a global trip count


# -- loops that go into the graph ----------------------------------------------------------------
def heat_1d(u, T):
    """A 1-D heat stencil on a copy: the copy is written in place every step."""
    u = u.copy()
    for t in range(T):
        u[1:-1] = u[1:-1] + 0.1 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return u


def heat_1d_in_place(u, T):
    """The stencil written into the caller's array; nothing returned."""
    for t in range(T):
        u[1:-1] = u[1:-1] + 0.1 * (u[:-2] - 2.0 * u[1:-1] + u[2:])


def jacobi_2d(u, T):
    """A 2-D five-point sweep written into the argument, then a value read from it."""
    for t in range(T):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u.sum()


def two_arrays(a, b, T):
    """Two carried arrays rebound each step (polybench's jacobi-1d shape)."""
    for t in range(1, T):
        b = 0.33333 * (a[:-2] + a[1:-1] + a[2:])
        a = np.concatenate([a[:1], b, a[-1:]])
    return a, b


def nested(u, T, S):
    """An inner loop rebinding u inside an outer loop that then writes into u in place."""
    for t in range(T):
        for s in range(S):
            u = u * 0.99 + 0.01
        u[0] = u[-1]
    return u


def with_index_arithmetic(x, T):
    """The index used as a number feeding array ops (a weak scalar): representable."""
    for i in range(T):
        x = x + i * 0.5
    return x


def counters(x, T):
    """A Python float and int carried next to the array."""
    t, k = 0.0, 0
    for step in range(2, T):
        x = x + np.sin(x) * 0.01
        t += 0.01
        k += 1
    return x, t, k


def with_continue(u, T):
    """``continue`` goes to the loop's head, like the end of the body."""
    for t in range(T):
        u = u + 1.0
        if u.shape[0] > 2:
            continue
        u = u * 2.0
    return u


def two_loops(u, T):
    """Two loops over ranges of one argument: each range's emptiness is its own guard."""
    for t in range(T):
        u = u * 0.9
    for t in range(1, T):
        u = u + 0.1
    return u


def global_steps(u):
    for _ in range(STEPS):
        u = np.tanh(u)
    return u


def written_after(u, T):
    """The argument written in place after the loop: no break (the loop kept its identity)."""
    for t in range(T):
        u[1:] = u[1:] * 0.5 + u[:-1] * 0.5
    u[0] = -1.0
    v = u * 2.0
    v[1] = 7.0
    return v


def index_after(x, n):
    """The loop variable read after the loop: n - 1, or unbound when the range is empty."""
    for i in range(n):
        x = x + 1.0
    return x, i


def index_after_old(x, n):
    i = -7
    for i in range(n):
        x = x * 1.5
    return x, i


def between(x, lo, hi):
    for i in range(lo, hi):
        x = x * 0.5 + 1.0
    return x


def if_else_ends_body(u, T):
    """An if/else on an array as the body's last statement: both blocks jump back to the head."""
    for t in range(T):
        if u.sum() > 10:
            u = u * 0.5
        else:
            u = u + 1.0
    return u


def if_ends_body(u, T):
    for t in range(T):
        u = u + 1.0
        if u.sum() > 10:   # 3.12+: POP_JUMP_IF_TRUE into the block, the jump back otherwise
            u = u * 0.5
    return u


def if_in_short_loop(u):
    for t in range(3):     # unrolled: the iterator is on the stack under the if statement
        u = u + 1.0
        if u.sum() > 10:
            u = u * 0.5
    return u


def while_in_short_loop(u):
    for k in range(3):
        while u.max() > 1.0:
            u = u * 0.5
        u = u + 2.0
    return u


def index_mod(x, T):
    """The index as a scalar index: x[i % 3] is read and written at run time."""
    for i in range(T):
        x[i % 3] += 1.0
    return x


def row_recurrence(u0, T):
    """Row t of a history array from row t - 1."""
    H = np.zeros((T + 1, u0.shape[0]))
    H[0] = u0
    for t in range(1, T + 1):
        H[t] = H[t - 1] * 0.9 + 0.1
    return H


def rows_in_place(H):
    for t in range(1, H.shape[0]):
        H[t, 1:-1] = 0.5 * (H[t - 1, :-2] + H[t - 1, 2:])
    return H.sum()


def mirrored(x, out):
    for i in range(out.shape[0]):
        out[-i - 1] = x[i] * 2.0 + x[-1 - i]
    return out


def past_the_end(x, T):
    for i in range(T):
        x[i] += 1.0            # IndexError when T > len(x): raised as Python raises it
    return x


# -- loops that keep today's behaviour -----------------------------------------------------------
def dtype_changes(x, T):
    for t in range(T):
        x = x * 0.5            # int64 -> float64 in the first iteration
    return x


def body_breaks(x, T):
    for t in range(T):
        x = x + 1.0
        print(float(x.sum()))  # a graph break in every iteration
    return x


def triangular(x, T):
    for i in range(T):
        for j in range(i % 5):  # empty at i = 0, 5, 10...: a nested loop of 0 to 4 trips
            x = x + 1.0
    return x


def index_branch(x, T):
    for i in range(T):
        if i % 5 == 0:  # Python needs i's value
            x = x + 1.0
    return x


def swaps(a, b, T):
    for k in range(T):
        a, b = b, a + b        # a is bound to b itself: an identity the graph would lose
    return a, b


def aliased(u, T):
    v = u
    for k in range(T):
        u[0] += v[0]           # v is u: the graph would carry two values for one array
    return u, v


def appends(x, T):
    seen = []
    for t in range(T):
        x = x + 1.0
        seen.append(t)         # an outside list mutated
    return x, seen


def step_two(x, T):
    for t in range(0, T, 2):
        x = x + 1.0
    return x
