"""Graph breaks inside loops, plain vs compiled: long loops run at a constant cost per iteration
(no recursion, one resume function per resume point, a bounded number of entries), with Python's
results, printed output and exceptions; explain reports them grouped."""

import contextlib
import io
import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.capture.breaks.resume import CompileSession
from npdynamo.capture.bytecode import generate as bytecode_gen
from tests.differential import ANY, CountingBackend, check_same


def issue_example(zs, H):
    P0 = np.zeros((2, 2))
    P1 = np.zeros((2, 2))
    for z in zs:
        T = np.zeros((2, 2))
        for n in range(3):
            T += np.power(z, 1.0 - n) * H[n]
        X = np.linalg.inv(T)  # graph break
        if abs(z) < 1.0:  # a branch on an array value
            X = -X
        P0 += X
        P1 += z * X
    return P0, P1


def _issue_inputs(dtype=np.float64):
    rng = np.random.default_rng(0)
    zs = rng.normal(size=4).astype(dtype)
    H = rng.normal(size=(3, 2, 2)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        zs = zs + 0.5j * rng.normal(size=4)
        H = H + 0.5j * rng.normal(size=(3, 2, 2))
    return zs, H


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_issue_example_matches_python_bitwise(dtype):
    # complex: ``P0 += X`` casts complex into float64 and raises; the frame runs in Python
    graphs = 1 if dtype is np.float64 else 0
    check_same(issue_example, *_issue_inputs(dtype), calls=3, graphs=graphs, breaks=0)


def test_issue_example_on_numba():
    zs, H = _issue_inputs()
    expected = issue_example(zs, H)
    compiled = npdynamo.compile(issue_example, backend="numba")
    for _ in range(2):
        got = compiled(zs.copy(), H.copy())
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_creations_merged_by_cse_stay_distinct_arrays():
    def f(x):
        a = np.zeros(2)
        b = np.zeros(2)
        npdynamo.graph_break()
        a += x
        return a, b

    check_same(f, np.ones(2), graphs=2, breaks=1)
    a, b = npdynamo.compile(f)(np.ones(2))
    assert a is not b and not np.shares_memory(a, b)


def print_rows(xs):
    s = np.zeros(3)
    for x in xs:
        s = s * 0.5 + x
        print(x[0])
    return s


def _resume_state(context: CompileSession) -> list[int]:
    return [len(call.entries) for call in context.resume_calls.values()]


def _explain_quietly(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return npdynamo.explain(fn)(*args)


def test_print_in_a_100000_iteration_loop():
    xs = np.arange(300_000, dtype=np.float64).reshape(100_000, 3)
    backend = CountingBackend()
    check_same(print_rows, xs, graphs=2, breaks=2, calls=2,
               compiled=npdynamo.compile(print_rows, backend=backend))
    # the graphs before/after the print and around the loop step; nothing per iteration
    assert backend.count <= 6


def test_print_loop_uses_one_resume_function_per_resume_point():
    xs = np.ones((50, 3))
    out = _explain_quietly(print_rows, xs)
    codes_before = len(bytecode_gen._RESUME_CODES)
    _explain_quietly(print_rows, np.ones((500, 3)))
    assert len(bytecode_gen._RESUME_CODES) == codes_before  # no new code per iteration
    assert out.graph_count <= 6
    assert out.graph_break_count <= 6
    breaks = str(out).split("Loops and branches:")[0]  # (the loop's note names it too)
    assert breaks.count("print() does input/output") == 1  # grouped: "(x2)"


def newton_sqrt(a):
    x = a.copy()
    err = np.abs(x * x - a).max()
    steps = 0
    while err > 1e-300:  # never reached: stops on the step count below
        x = 0.5 * (x + a / x) + 1e-3
        err = np.abs(x * x - a).max()
        steps += 1
        if steps >= 2500:
            break
    return x, err, steps


@pytest.mark.filterwarnings("ignore:npdynamo.*cache_size_limit")
def test_while_on_an_array_runs_thousands_of_iterations():
    from npdynamo.capture.compile_frame import build_entry, new_session

    context = new_session(CountingBackend())

    a = np.linspace(1.0, 4.0, 5)
    # the entry and eight resume entries (one per value of steps, to the cache limit)
    check_same(newton_sqrt, a, calls=2, graphs=9, breaks=9)
    entry = build_entry(newton_sqrt, (a.copy(),), backend=context.backend, context=context)
    entry.run(a.copy())
    # the counter ``steps`` is a guarded int: its resume entries stop at the cache limit, after
    # which that resume runs in Python; everything else is one entry per resume point
    assert all(n <= npdynamo.config.cache_size_limit for n in _resume_state(context))
    assert len(context.resume_calls) <= 6


def converge(a):
    x = a.copy()
    err = np.abs(x).max()
    while err > 1e-9:
        x = x * 0.99
        err = np.abs(x).max()
    return x, err


def test_while_loop_is_two_resume_functions_with_one_entry_each(monkeypatch):
    # the break machinery of a loop on an array test (such a loop is otherwise captured whole
    # as a while_loop node: tests/capture/test_while_formation.py)
    monkeypatch.setattr(npdynamo.config, "capture_while_loops", False)
    backend = CountingBackend()
    compiled = npdynamo.compile(converge, backend=backend)
    check_same(converge, np.ones(4), compiled=compiled, graphs=2, breaks=2)
    assert backend.count == 2  # before the loop, the loop body (the exit has no graph)
    out = _explain_quietly(converge, np.ones(4))
    assert (out.graph_count, out.graph_break_count) == (2, 2)
    assert "(x2)" in str(out)  # the loop test met at the top and at the end of the body
    compiled(np.ones(4))
    assert backend.count == 2


def test_no_stack_growth_per_iteration():
    xs = np.ones((3000, 3))
    compiled = npdynamo.compile(print_rows)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(np.ones((2, 3)))  # warm: capture itself may nest a little
        depth = len(_stack())
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(depth + 80)
        try:
            result = compiled(xs)
        finally:
            sys.setrecursionlimit(limit)
    with contextlib.redirect_stdout(io.StringIO()):
        np.testing.assert_array_equal(result, print_rows(xs))


def _stack() -> list:
    frame, frames = sys._getframe(), []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def loop_over_list_with_try(items):
    out = []
    total = np.zeros(2)
    for k in items:
        try:
            total = total + k
            npdynamo.graph_break()
            if k.sum() > 5:
                raise ValueError("big")
            out.append(float(total.sum()))
        except ValueError as e:
            out.append(str(e))
        finally:
            total = total * 0.5
    return total, out


def loop_with_block(xs):
    acc = np.zeros(3)
    for x in xs:
        with contextlib.suppress(ZeroDivisionError):
            acc = acc + x
            print(x.sum())
            if x[0] > 2:
                raise ZeroDivisionError
            acc = acc * 2
    return acc


def loop_raises_in_resume(xs):
    acc = np.zeros(2)
    for i, x in enumerate(xs):
        acc = acc + x
        npdynamo.graph_break()
        if i == len(xs) - 3:
            raise KeyError(i)
    return acc


def loop_break_and_else(xs):
    acc = np.zeros(2)
    for x in xs:
        acc = acc + x
        print(x[0])
        if x[1] > 400:
            break
    else:
        acc = -acc
    return acc


def nested_loops_breaking(xs, m):
    acc = np.zeros(2)
    for x in xs:
        for j in range(m):
            acc = acc + x * j
            npdynamo.graph_break()
        acc = acc * 0.5
    return acc


def loop_with_closure_cells(xs):
    scale = 2.0

    def scaled(v):
        return v * scale

    acc = np.zeros(2)
    for x in xs:
        acc = acc + scaled(x)
        print(acc[0])
        scale = scale * 0.5  # the closure sees the cell change across the breaks
    return acc, scaled(1.0)


@pytest.mark.filterwarnings("ignore:npdynamo.*cache_size_limit")
@pytest.mark.parametrize(
    "fn,args,counts",
    [
        (loop_over_list_with_try, ([np.full(2, float(i)) for i in range(600)],), (4, 4)),
        (loop_with_block, (np.linspace(0, 3, 1500).reshape(500, 3),), (4, 6)),
        (loop_raises_in_resume, (np.ones((700, 2)),), (2, 10)),
        (loop_break_and_else, (np.arange(2000.0).reshape(1000, 2),), (3, 3)),
        (loop_break_and_else, (np.arange(400.0).reshape(200, 2),), (4, 3)),
        (nested_loops_breaking, (np.ones((300, 2)), 3), (4, 4)),
        (loop_with_closure_cells, (np.ones((300, 2)),), (3, 3)),  # (5, 5) before closure
    ],
    ids=["try-finally", "with", "raises", "break", "else", "nested", "closure"],
)
def test_long_loops_with_breaks_match_python(fn, args, counts):
    check_same(fn, *args, calls=2, graphs=counts[0], breaks=counts[1])


def list_grows_while_looping(x):
    lst = [1, 2, 3]
    out = []
    for v in lst:
        out.append(v)
        npdynamo.graph_break()
        if len(lst) < 6:
            lst.append(v * 10)
    return out, x + 1


def iterator_also_stepped_by_name(x):
    it = iter(range(10))
    acc = x
    for v in it:
        acc = acc + v
        print(v)
        next(it)
    return acc


@pytest.mark.filterwarnings("ignore:npdynamo.*cache_size_limit")
@pytest.mark.parametrize("fn,counts", [(list_grows_while_looping, (4, 6)),
                                       (iterator_also_stepped_by_name, (2, 3))])
def test_loop_iterator_state_is_exact_across_breaks(fn, counts):
    check_same(fn, np.ones(2), calls=2, graphs=counts[0], breaks=counts[1])


def test_a_loop_too_long_to_unroll_breaks_at_get_iter():
    def f(xs):
        s = np.zeros(2)
        for x in xs:
            s = s + x * 2.0
        return s, x  # (the row read after the loop: not one loop node, so it would unroll)

    xs = np.ones((5000, 2))
    check_same(f, xs, graphs=1, breaks=1)


# -- a generated family: nested loops, accumulators, breaks and branches at random places ------
BREAKS = [
    "npdynamo.graph_break()",
    "print(round(float(np.sum(t)), 6))",
    "t = np.linalg.inv(t + 3.0 * np.eye(2))",
]
BODY = [
    "t = t * 0.5 + z * h",
    "acc0 += t",
    "acc1 += z * t",
    "t = np.tanh(t) - z",
    "if np.sum(t) > 0:\n    t = -t",
    "if abs(z) < 0.5:\n    acc0 -= t",
]


def _render(outer_range: bool, inner: int, before, inside, after) -> str:
    def block(lines, indent):
        out = []
        for line in lines:
            out += [" " * indent + part for part in line.split("\n")]
        return out

    head = "for i in range(len(zs)):\n    z = zs[i]" if outer_range else "for z in zs:"
    lines = [
        "def f(zs, h):",
        "    acc0 = np.zeros((2, 2))",
        "    acc1 = np.zeros((2, 2))",
        "    t = np.zeros((2, 2))",
        *block(head.split("\n"), 4),
        *block(before, 8),
        f"        for n in range({inner}):",
        *block(inside or ["pass"], 12),
        *block(after, 8),
        "    return acc0, acc1, t",
    ]
    return "\n".join(lines) + "\n"


part = st.lists(st.sampled_from(BODY + BREAKS), max_size=3)


@pytest.mark.filterwarnings("ignore:npdynamo.*cache_size_limit")
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    outer_range=st.booleans(),
    inner=st.integers(0, 3),
    before=part,
    inside=part,
    after=part,
    complex_data=st.booleans(),
    seed=st.integers(0, 3),
)
def test_generated_loops_with_breaks_match_python(
    outer_range, inner, before, inside, after, complex_data, seed
):
    source = _render(outer_range, inner, before, inside, after)
    namespace = {"np": np, "npdynamo": npdynamo}
    exec(compile(source, f"<generated loop {abs(hash(source))}>", "exec"), namespace)  # noqa: S102
    rng = np.random.default_rng(seed)
    zs = rng.normal(size=5)
    h = rng.normal(size=(2, 2))
    if complex_data:
        zs = zs + 1j * rng.normal(size=5)
        h = h + 1j * rng.normal(size=(2, 2))
    # a generated program may run in Python by design: a data-dependent `if` whose branch
    # fails at capture (a float accumulator `-=` a complex value) cannot form a cond
    with np.errstate(all="ignore"):
        check_same(namespace["f"], zs, h, calls=2, graphs=ANY)


def test_generated_loop_on_numba():
    source = _render(False, 2, ["t = t * 0.5 + z * h"], ["acc0 += t", BREAKS[0]],
                     [BODY[4], BREAKS[2], "acc1 += z * t"])
    namespace = {"np": np, "npdynamo": npdynamo}
    exec(compile(source, "<generated loop numba>", "exec"), namespace)  # noqa: S102
    rng = np.random.default_rng(1)
    zs, h = rng.normal(size=4), rng.normal(size=(2, 2))
    expected = namespace["f"](zs, h)
    got = npdynamo.compile(namespace["f"], backend="numba")(zs.copy(), h.copy())
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.filterwarnings("ignore:npdynamo.*cache_size_limit")
def test_explain_of_a_long_while_loop_groups_what_repeats():
    out = npdynamo.explain(newton_sqrt)(np.linspace(1.0, 4.0, 5))
    report = str(out)
    assert out.result[2] == 2500
    assert out.graph_count <= 1 + npdynamo.config.cache_size_limit
    # the loop (it ends with a break) stays a break at its test, which says why
    assert report.count("the while loop on an array condition cannot become an in-graph") == 1
    # the counter's entries: one line for identical graphs
    assert re.search(r"graphs \d+-\d+ \(x\d+\)", report), report
    assert "later cases run in Python: cache_size_limit" in report
    assert len(report.splitlines()) < 60


def print_rows_in_region(xs):
    s = np.zeros(3)
    for x in xs:
        s = s * 0.5 + x
        print(x[0])
    return s


def test_region_mode_runs_a_loop_with_breaks():
    xs = np.arange(9000.0).reshape(3000, 3)
    plain_out = io.StringIO()
    with contextlib.redirect_stdout(plain_out):
        expected = print_rows_in_region(xs)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), npdynamo.enable():
            # the first call hooks the function, the later ones run compiled; the resume
            # functions' own frames are never hooked as user functions
            results = [print_rows_in_region(xs) for _ in range(3)]
    finally:
        npdynamo.reset()
    for got in results:
        np.testing.assert_array_equal(got, expected)
    assert out.getvalue() == plain_out.getvalue() * 3
