"""A call of an ``npdynamo.disable``d function inside a compiled caller: a graph break at that
call, the code before and after it compiled (as ``torch._dynamo.disable`` inside a compiled
function); results, argument state and printed output as plain Python, on both backends."""

import contextlib
import io

import numpy as np
import pytest

import npdynamo
from tests.backends.compare import assert_close
from tests.differential import CountingBackend, assert_same_value, check_same, run_both


@npdynamo.disable
def to_python_number(x):
    return float(x.sum())


@npdynamo.disable
def noisy(x):
    print("noisy sees", x.shape)
    return x * 3


class Scaler:
    @npdynamo.disable
    def scale(self, x):
        return x * 2


SCALER = Scaler()


def plain_call(a):
    b = np.sin(a) + 1
    s = to_python_number(b)
    return np.cos(b) * s


def method_call(a):
    b = np.exp(a) - 1
    c = SCALER.scale(b)
    return c + np.tanh(b)


def two_deep_helper(a):
    return noisy(a * 2) - 1


def call_in_an_inlined_function(a):
    b = np.abs(a) + 0.5
    return np.sqrt(two_deep_helper(b))


def call_in_a_loop(a):
    total = np.zeros_like(a)
    for i in range(3):
        total = total + noisy(a + i)
    return total


def disabled_compiled_function_as_callee(a):
    return DISABLED_COMPILED(a) + np.log1p(a)


DISABLED_COMPILED = npdynamo.disable(npdynamo.compile(lambda x: np.sin(x) * 2))

PROGRAMS = [
    plain_call,
    method_call,
    call_in_an_inlined_function,
    call_in_a_loop,
    disabled_compiled_function_as_callee,
]

#: (graphs, breaks) of each program: a break at the disabled call, the code around it in graphs
#: (in the loop: a break in each of its three iterations)
COUNTS = {plain_call: (2, 1), method_call: (2, 1), call_in_an_inlined_function: (2, 1),
          call_in_a_loop: (3, 3), disabled_compiled_function_as_callee: (1, 1)}


def counted_run(fn, *args, graphs: int, breaks: int):
    backend = CountingBackend()
    with contextlib.redirect_stdout(io.StringIO()):
        check_same(fn, *args, graphs=graphs, breaks=breaks,
                   compiled=npdynamo.compile(fn, backend=backend), calls=3)
    return backend


@pytest.mark.parametrize("fn", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_the_rest_of_the_caller_is_compiled(fn):
    graphs, breaks = COUNTS[fn]
    backend = counted_run(fn, np.linspace(0.1, 1.0, 5), graphs=graphs, breaks=breaks)
    assert backend.count >= 1
    ops = {name for i in range(backend.count) for name in backend.op_names(i)}
    assert ops, "no op of the caller went into a graph"


@pytest.mark.parametrize("fn", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_matches_python_on_numba(fn):
    # numba's exp/tanh may differ from NumPy's in the last bit: values compared to 1e-12
    compiled = npdynamo.compile(fn, backend="numba")
    for _ in range(2):
        with contextlib.redirect_stdout(io.StringIO()):
            run = run_both(fn, compiled, (np.linspace(0.1, 1.0, 5),), {})
        assert_close(run.got, run.expected)
        assert_same_value(run.plain_args, run.comp_args, "args after the call")


def test_the_break_is_at_the_call_and_says_why():
    with contextlib.redirect_stdout(io.StringIO()):
        report = npdynamo.explain(plain_call)(np.ones(3))
    assert report.graph_count == 2
    assert report.graph_break_count == 1
    (reason,) = report.break_reasons
    assert reason.kind == "disabled"
    assert "to_python_number is marked npdynamo.disable" in reason.reason
    assert reason.source_line == "s = to_python_number(b)"
    assert "NULL" not in str(report)


def test_the_disabled_function_itself_is_never_captured():
    backend = CountingBackend()
    compiled = npdynamo.compile(plain_call, backend=backend)
    compiled(np.ones(3))
    names = [name for i in range(backend.count) for name in backend.op_names(i)]
    assert "sum" not in names  # the reduction inside to_python_number ran in Python


def test_a_different_function_in_the_same_global_recompiles():
    def caller(a):
        return np.sin(a) + CALLEE(a)

    global CALLEE
    CALLEE = noisy
    compiled = npdynamo.compile(caller)
    with contextlib.redirect_stdout(io.StringIO()):
        first = compiled(np.ones(2))
    CALLEE = np.cos  # the guard on the disabled function's identity fails: captured again
    second = compiled(np.ones(2))
    np.testing.assert_array_equal(first, np.sin(np.ones(2)) + 3)
    np.testing.assert_array_equal(second, np.sin(np.ones(2)) + np.cos(np.ones(2)))


CALLEE = noisy
