"""Programs with graph breaks: every kind of break, in loops, helpers, try, with, closures.

Each is registered with its argument factories and the exact (graphs, breaks) ``explain`` must
report for the first factory's arguments (the strict mode of ``test_graph_breaks.py``).
"""

from __future__ import annotations

import numpy as np

import npdynamo

BREAK_PROGRAMS: list[tuple[str, object, object, tuple[int, int] | None]] = []


def breaks(counts, *factories):
    """Register ``fn``; ``counts`` = (graphs, breaks) for the first factory, or None."""

    def register(fn):
        for i, factory in enumerate(factories):
            BREAK_PROGRAMS.append((f"{fn.__name__}-{i}", fn, factory, counts if i == 0 else None))
        return fn

    return register


def a(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- print and explicit breaks -----------------------------------------------------------------
@breaks((2, 1), lambda: (a(3),))
def print_middle(x):
    y = x * 2
    print("y has shape", y.shape)
    return y + 1


@breaks((1, 1), lambda: (a(3),))
def print_first(x):
    print("start")
    return np.tanh(x) * 2


@breaks((1, 1), lambda: (a(3),))
def print_last(x):
    y = np.exp(x) - 1
    print("done")
    return y


@breaks((3, 2), lambda: (a(4),))
def two_prints(x):
    y = x + 1
    print("a")
    z = y * y
    print("b", len(z))
    return z - y


@breaks((3, 3), lambda: (a(2, 2),))
def explicit_breaks(x):
    x = x @ x
    npdynamo.graph_break()
    x = x + 1
    npdynamo.graph_break()
    x = x.T
    npdynamo.graph_break()
    return x.sum(axis=0)


@breaks((1, 1), lambda: (a(3),))
def print_keywords(x):
    y = x * 3
    print("values", y.shape, sep="|", end="!\n")
    return y


@breaks((2, 1), lambda: (a(3),))
def print_star_args(x):
    y = x - 1
    parts = ("p", len(y))
    print(*parts)
    return y * y


@breaks((2, 1), lambda: (a(3),))
def print_fstring_of_constant(x):
    n = x.shape[0]
    y = x * n
    print(f"n = {n}")
    return y / n


# -- graph values needed in Python -------------------------------------------------------------
# float(), int() and .item() of a 0-d array are numbers the graph computes (no break until Python
# needs their value); .tolist() still hands the value to Python at once.
@breaks((1, 0), lambda: (a(5),))
def item_call(x):
    s = x.sum()
    scale = s.item()
    return x * 2, scale


@breaks((1, 0), lambda: (a(5),))
def float_of_graph_value(x):
    m = float(x.max())
    return x - 1, m


@breaks((1, 0), lambda: (a(5),))
def int_in_expression(x):
    k = int((x > 0).sum()) + 1
    return x * 2, k


@breaks((2, 1), lambda: (a(4),))
def break_mid_expression(x):
    y = x + np.abs(x).max().tolist() * 2
    return y * 3


@breaks((2, 1), lambda: (a(4),))
def break_in_call_argument(x):
    return np.maximum(x * 2, x.min().tolist())


@breaks((2, 1), lambda: (a(4),))
def tolist_call(x):
    values = (x * 2).tolist()
    return len(values), x + 1


@breaks((2, 1), lambda: (a(4),))
def method_pair_on_stack(x):
    out = []
    out.append(x.sum().tolist())
    return out, x * 2


# -- unknown functions ---------------------------------------------------------------------------
@breaks((2, 1), lambda: (a(3, 3) + 3 * np.eye(3),))
def linalg_inverse(m):
    m2 = m @ m.T
    inv = np.linalg.tensorinv(m2, ind=1)
    return inv @ m2


@breaks((2, 1), lambda: (a(3, 3),))
def linalg_norm(m):
    n = np.linalg.cond(m * 2)
    return m / n


@breaks((1, 1), lambda: (a(3),))
def sorted_of_array(x):
    return np.unique(x)[::-1] * 2


# -- data-dependent control flow ------------------------------------------------------------------
# an if on an array whose branches can be captured is one cond node (config.capture_if_branches)
@breaks((1, 0), lambda: (a(3) + 5,), lambda: (a(3) - 5,))
def branch_on_sum(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


@breaks((1, 0), lambda: (a(3),), lambda: (-np.abs(a(3)),))
def branch_any(x):
    if (x > 0).any():
        x = x * 10
    return x + 1


@breaks((1, 0), lambda: (a(3) + 9,), lambda: (a(3),), lambda: (a(3) - 9,))
def elif_chain(x):
    m = x.mean()
    if m > 1:
        r = x * 2
    elif m < -1:
        r = x * 3
    else:
        r = x * 4
    return r


@breaks((2, 2), lambda: (a(3) + 5,), lambda: (a(3) - 5,))
def branch_with_print(x):
    y = x * 2
    if y.sum() > 0:        # a branch that prints cannot be a cond: a break at the test
        print("positive")
        y = y + 1
    return y - 1


@breaks((1, 0), lambda: (np.array([8.0, 4.0]),))  # captured whole: a while_loop node
def while_converge(x):
    err = np.abs(x).max()
    steps = 0
    while err > 0.5:
        x = x * 0.5
        err = np.abs(x).max()
        steps += 1
    return x, steps


@breaks((1, 0), lambda: (a(4),))  # formed: a rotated while_loop
def while_true_with_break(x):
    i = 0
    while True:
        x = x * 0.5
        i += 1
        if np.abs(x).max() < 0.1:
            break
    return x, i


@breaks((1, 0), lambda: (a(4),))  # checked in the graph (a speculated assert)
def assert_on_data(x):
    y = np.abs(x)
    assert (y >= 0).all(), "abs is negative"
    return y + 1


@breaks((2, 1), lambda: (a(3),), lambda: (-np.abs(a(3)) - 1,))
def early_return_on_data(x):
    y = x * 2
    if y.max() < 0:
        return None
    return y.sum()


# -- loops --------------------------------------------------------------------------------------
@breaks((5, 5), lambda: (a(3),))
def print_in_loop(x):
    for i in range(5):
        x = x * 2
        print("step", i)
        x = x + i
    return x


@breaks((3, 3), lambda: ([a(2, seed=i) for i in range(3)],))
def loop_over_list_of_arrays(ws):
    total = ws[0] * 0
    for w in ws:
        total = total + w
        npdynamo.graph_break()
        total = total * 0.5
    return total


@breaks((2, 2), lambda: ({"a": a(2), "b": a(2, seed=1)},))
def loop_over_dict_items(params):
    out = {}
    for name, value in params.items():
        out[name] = value * 2
        print(name)
    return out


@breaks((3, 3), lambda: (a(3),))
def loop_enumerate_zip(x):
    acc = x * 0
    for i, (c, d) in enumerate(zip((1.0, 2.0, 3.0), "abc")):
        acc = acc + c * x
        print(i, d)
    return acc


@breaks((4, 4), lambda: (a(3),))
def nested_loops(x):
    for i in range(2):
        for j in range(2):
            x = x + i * j
            print(i, j)
    return x


# the if ends the body (continue is the jump back to the head): one cond node per iteration
@breaks((1, 0), lambda: (a(3), 4))
def loop_with_data_dependent_continue(x, n):
    total = x * 0
    for i in range(n):
        y = x * i
        if (y > 1).any():
            continue
        total = total + y
    return total


@breaks((1, 0), lambda: (a(5),))  # a for loop left by break: one rotated while_loop
def loop_early_exit_on_data(x):
    for i in range(6):  # noqa: B007 (i is returned)
        x = x * 1.5
        if np.abs(x).max() > 4:
            break
    return x, i


# -- helpers and objects ---------------------------------------------------------------------------
def _log_and_scale(v, k):
    print("helper called")
    return v * k


def _outer_helper(v):
    w = v + 1
    return _log_and_scale(w, 3) - 1


@breaks((3, 2), lambda: (a(3),))
def break_in_helper(x):
    y = x * 2
    z = _log_and_scale(y, 2)
    return z + 1


@breaks((5, 3), lambda: (a(3),))
def break_two_calls_deep(x):
    y = _outer_helper(x * 2)
    return y * y


@breaks((2, 4), lambda: (a(3),))
def helper_in_loop(x):
    for k in (1.0, 2.0):
        x = _log_and_scale(x, k)
    return x


class Model:
    def __init__(self):
        self.w = a(3, 3)
        self.verbose = True

    def forward(self, x):
        h = x @ self.w
        if self.verbose:
            print("forward", h.shape)
        return np.maximum(h, 0)

    @property
    def scale(self):
        print("reading scale")
        return 2.0

    def __call__(self, x):
        return self.forward(x) * self.scale


@breaks((3, 2), lambda: (Model(), a(2, 3)))
def method_with_break(model, x):
    return model.forward(x) + 1


@breaks((3, 4), lambda: (Model(), a(2, 3)))
def call_object_with_breaks(model, x):
    return model(x)


def _factorial_print(x, n):
    if n == 0:
        print("base")
        return x
    return _factorial_print(x * n, n - 1)


@breaks((3, 5), lambda: (a(2),))
def recursion_with_break(x):
    return _factorial_print(x, 3)


# -- try / with / exceptions --------------------------------------------------------------------
@breaks((1, 1), lambda: (a(3),))
def try_caught_after_break(x):
    total = x * 1
    try:
        total = total + 1
        print("in try")
        raise ValueError("boom")
    except ValueError:
        total = total * 10
    return total


@breaks((2, 1), lambda: (a(3),))
def try_finally_with_break(x):
    log = []
    try:
        y = x * 2
        print("body")
        y = y + 1
    finally:
        log.append("finally")
    return y, log


@breaks(None, lambda: (a(3),))
def exception_escapes_after_break(x):
    y = x * 2
    print("about to fail")
    return y @ np.ones((5, 5))


@breaks((1, 1), lambda: (a(3),), lambda: (-np.abs(a(3)) - 1,))
def try_except_on_data(x):
    try:
        if x.min() < 0:
            raise ArithmeticError("negative")
        y = np.sqrt(x)
    except ArithmeticError:
        y = x * 0
    return y


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.events.append("exit")
        return False


@breaks((3, 2), lambda: (a(3), Recorder()))
def with_block(x, rec):
    y = x * 2
    with rec:
        y = y + 1
        print("inside")
        y = y * 3
    return y, rec.events


# one graph (``x + 1`` after the break at ``with``): the resume function from line 445 used to
# be refused by the assembler (a try range starting in its dead code) and ran in Python
@breaks((1, 2), lambda: (a(3), Recorder()))
def with_block_exception(x, rec):
    try:
        with rec:
            y = x + 1
            print("inside")
            raise KeyError("k")
    except KeyError as exc:
        return str(exc), rec.events, y


# -- locals, closures, cells -------------------------------------------------------------------
@breaks((2, 1), lambda: (a(3), True), lambda: (a(3), False))
def local_bound_on_some_paths(x, flag):
    if flag:
        w = x * 2
    print("between")
    if flag:
        return w + 1
    return x


@breaks((1, 1), lambda: (a(3),))
def closure_cell_changes_after_break(x):
    k = 2
    scale = lambda v: v * k  # noqa: E731
    print("closure made")
    k = 5
    return scale(x)


@breaks((2, 1), lambda: (a(3),))
def nonlocal_counter(x):
    count = 0

    def bump(v):
        nonlocal count
        count += 1
        return v + count

    y = bump(x)
    print("bumped")
    y = bump(y)
    return y, count


@breaks((2, 1), lambda: (a(3), 3))
def default_and_kw_args_kept(x, n, *, scale=2.0, **extra):
    y = x * scale
    print("n", n, sorted(extra))
    return y + n


@breaks((2, 1), lambda: (a(3),))
def many_live_values(x):
    a1, a2, a3 = x + 1, x + 2, x + 3
    t = (a1, [a2, {"k": a3}], "s", 4)
    print("live")
    return t, a1 * a2 * a3


@breaks(None, lambda: (a(3),))
def comprehension_with_break(x):
    return [v.tolist() for v in x * 2]


@breaks((1, 0), lambda: (a(3),))
def generator_function_is_inlined(x):
    def gen(v):
        yield v * 2

    return list(gen(x))[0] + 1


@breaks((1, 2), lambda: (a(3),))
def generator_with_finally_is_a_break(x):
    def gen(v):
        try:
            yield v * 2
        finally:
            print("closed")

    return list(gen(x))[0] + 1


# ** between NumPy scalars: the scalar_power op (the scalars' own **), no longer a break
@breaks((1, 0), lambda: (a(50),))
def scalar_powers_match_python(x):
    s = x.sum()
    m = np.abs(x).max()
    return s**2, m**0.5, m**1.5, 2.0**m, np.power(m, 1.5), x * s
