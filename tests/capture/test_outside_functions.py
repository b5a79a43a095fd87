"""Functions read from outside a capture, plain vs compiled: a lambda or closure made before a
graph break reaches the resume function as a new object on every call; it is guarded on what
calling it reads (its code, globals, defaults, cells), so one resume graph serves every call,
and a change of what it captured is a guard miss, never a stale value. Where the code relies on
the object itself (``is``, handing it back, ``__name__``) the answer stays Python's."""

import numpy as np
import pytest

import npdynamo
from tests.capture.test_dynamic_shapes import NumbaCounting
from tests.differential import CountingBackend, check_same, run_both

CALLS = 20


@pytest.fixture(autouse=True)
def _fresh():
    npdynamo.reset()
    yield
    npdynamo.reset()


def lambda_before_break(x, k):
    f = lambda v: v * k  # noqa: E731
    npdynamo.graph_break()
    return f(x)


def closure_over_array(x):
    w = x * 2.0

    def g(v):
        return v + w

    npdynamo.graph_break()
    return g(x) - 1.0


def lambda_with_default(x, k):
    g = lambda v, s=k: v + s  # noqa: E731
    npdynamo.graph_break()
    return g(x) * 2.0


def _counting(backend):
    return CountingBackend() if backend == "eager" else NumbaCounting()


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize(
    "fn, args, graphs",
    [
        (lambda_before_break, (np.arange(4.0), 3.0), 1),
        (closure_over_array, (np.arange(4.0),), 2),
        (lambda_with_default, (np.arange(4.0), 1.5), 1),
    ],
    ids=["lambda", "closure-over-array", "lambda-default"],
)
def test_one_resume_graph_serves_every_call(backend, fn, args, graphs):
    counting = _counting(backend)
    compiled = npdynamo.compile(fn, backend=counting)
    check_same(fn, *args, compiled=compiled, calls=CALLS, graphs=graphs, breaks=1)
    assert counting.count == graphs


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_changed_captured_value_is_a_guard_miss(backend):
    counting = _counting(backend)
    compiled = npdynamo.compile(lambda_before_break, backend=counting)
    x = np.arange(4.0)
    # k changes: a miss, then a dynamic scalar (running totals of graphs made)
    for k, graphs in zip((3.0, 3.0, 5.0, 5.0, 7.0, 3.0), (1, 1, 2, 2, 2, 2)):
        check_same(lambda_before_break, x, k, compiled=compiled, calls=1, graphs=graphs,
                   breaks=1)
    assert counting.count == 2
    ints = npdynamo.compile(lambda_before_break, backend=_counting(backend))
    for k in (2, 2, 3, 2**40):  # an int captured: Python's own promotion, value by value
        check_same(lambda_before_break, np.arange(4, dtype=np.int8), k, compiled=ints, calls=1,
                   graphs=1, breaks=1)


def test_a_changed_array_in_a_cell_is_read_again():
    compiled = npdynamo.compile(closure_over_array, backend=CountingBackend())
    # a new shape: a guard miss on the cell's contents (running totals)
    for n, graphs, breaks in ((4, 2, 1), (4, 2, 1), (6, 4, 2), (6, 4, 2)):
        check_same(closure_over_array, np.arange(float(n)), compiled=compiled, calls=1,
                   graphs=graphs, breaks=breaks)
    check_same(closure_over_array, np.arange(4, dtype=np.float32), compiled=compiled, calls=1,
               graphs=6, breaks=3)


def test_a_changed_default_is_a_guard_miss():
    compiled = npdynamo.compile(lambda_with_default, backend=CountingBackend())
    for k, graphs in zip((1.5, 1.5, 2.5, 4.0, 1.5), (1, 1, 2, 2, 2)):  # (running totals)
        check_same(lambda_with_default, np.arange(3.0), k, compiled=compiled, calls=1,
                   graphs=graphs, breaks=1)


def make_adder(k):
    return lambda v: v + k


def make_keyword_scaler(k):
    return lambda v, *, s=k: v * s


def apply(fn, x):
    npdynamo.graph_break()
    return fn(x) * 2.0


def test_a_closure_passed_in_is_guarded_on_its_parts():
    compiled = npdynamo.compile(apply, backend=CountingBackend())
    x = np.arange(3.0)
    for k, graphs in zip((1.0, 1.0, 2.0, 2.0, 9.0), (1, 1, 2, 2, 2)):  # (running totals)
        check_same(apply, make_adder(k), x, compiled=compiled, calls=1, graphs=graphs, breaks=1)
    # keyword-only defaults made anew on each call
    for k, graphs in zip((1.0, 1.0, 3.0), (3, 3, 4)):
        check_same(apply, make_keyword_scaler(k), x, compiled=compiled, calls=1, graphs=graphs,
                   breaks=2)
    # another function with other code: a miss on __code__
    check_same(apply, lambda v: v - 1.0, x, compiled=compiled, calls=1, graphs=5, breaks=3)
    check_same(apply, np.negative, x, compiled=compiled, calls=1, graphs=6, breaks=4)


def helper(v, s=2.0):
    return v * s


def use_helper(x):
    npdynamo.graph_break()
    return helper(x)


def test_a_global_function_changed_in_place_is_a_guard_miss():
    compiled = npdynamo.compile(use_helper, backend=CountingBackend())
    x = np.arange(3.0)
    try:
        check_same(use_helper, x, compiled=compiled, calls=2, graphs=1, breaks=1)
        helper.__defaults__ = (5.0,)
        check_same(use_helper, x, compiled=compiled, calls=2, graphs=2, breaks=1)
        helper.__defaults__ = None
        # TypeError, as in Python
        check_same(use_helper, x, compiled=compiled, calls=1, graphs=2, breaks=1)
        helper.__defaults__ = (2.0,)
        helper.__code__ = (lambda v, s=0.0: v + s).__code__
        check_same(use_helper, x, compiled=compiled, calls=2, graphs=3, breaks=1)
    finally:
        helper.__code__ = _HELPER_CODE
        helper.__defaults__ = (2.0,)


_HELPER_CODE = helper.__code__


def scaled(v, *, s=3.0):
    return v * s


def test_keyword_only_defaults_changed_in_place_are_read_again():
    compiled = npdynamo.compile(apply, backend=CountingBackend())
    x = np.arange(3.0)
    try:
        check_same(apply, scaled, x, compiled=compiled, calls=2, graphs=1, breaks=1)
        scaled.__kwdefaults__["s"] = 4.0
        check_same(apply, scaled, x, compiled=compiled, calls=2, graphs=2, breaks=1)
        scaled.__kwdefaults__ = None
        # TypeError, as in Python; the frame before the break does not call ``fn``, so it does
        # not guard its defaults: its entry still serves
        check_same(apply, scaled, x, compiled=compiled, calls=1, graphs=2, breaks=1)
    finally:
        scaled.__kwdefaults__ = {"s": 3.0}


# -- where the object itself matters -------------------------------------------------------
def return_the_closure(x, k):
    f = lambda v: v * k  # noqa: E731
    npdynamo.graph_break()
    return f, f, f(x)


def test_a_returned_closure_is_the_object_made_in_that_call():
    compiled = npdynamo.compile(return_the_closure, backend=CountingBackend())
    x = np.arange(3.0)
    seen = []
    for k in (2.0, 2.0, 2.0, 4.0):
        f, g, y = compiled(x, k)
        plain_f, _, plain_y = return_the_closure(x, k)
        assert f is g and f not in seen
        seen.append(f)
        assert np.array_equal(y, plain_y) and np.array_equal(f(x), plain_f(x))
        assert f.__code__ is plain_f.__code__ and f.__closure__[0].cell_contents == k


def compare_closures(x, same):
    f = lambda v: v + 1.0  # noqa: E731
    g = f if same else (lambda v: v + 1.0)
    npdynamo.graph_break()
    return (f is g), (f is not g), g(x)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_is_between_closures_is_guarded(backend):
    compiled = npdynamo.compile(compare_closures, backend=backend)
    for same, made in zip((True, True, False, False, True), (1, 1, 2, 2, 2)):  # (totals)
        check_same(compare_closures, np.arange(3.0), same, compiled=compiled, calls=1,
                   graphs=made, breaks=made)


def name_of_closure(x, flag):
    f = (lambda v: v) if flag else (lambda v: -v)
    if not flag:
        f.__name__ = "renamed"
    npdynamo.graph_break()
    return f.__name__, f(x)


def test_reading_an_attribute_of_the_closure_is_python_s_answer():
    compiled = npdynamo.compile(name_of_closure, backend=CountingBackend())
    for flag, graphs, breaks in ((True, 0, 1), (True, 0, 1), (False, 1, 3), (False, 2, 3),
                                 (True, 2, 3)):  # (running totals)
        check_same(name_of_closure, np.arange(3.0), flag, compiled=compiled, calls=1,
                   graphs=graphs, breaks=breaks)


# -- cells written after the break ------------------------------------------------------------
def rebind_after_break(x, k):
    f = lambda v: v * k  # noqa: E731
    npdynamo.graph_break()
    k = k + 1.0
    return f(x)


def write_through_closure(x, k):
    def bump():
        nonlocal k
        k = k * 2.0

    f = lambda v: v + k  # noqa: E731
    npdynamo.graph_break()
    bump()
    return f(x), k


def shared_or_not(x, same):
    k = 1.0
    f = lambda v: v + k  # noqa: E731
    if same:
        def set_k(value):
            nonlocal k
            k = value
    else:
        def set_k(value, k=0.0):
            pass
    npdynamo.graph_break()
    set_k(10.0)
    return f(x)


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn", [rebind_after_break, write_through_closure])
def test_a_cell_written_after_the_break_is_seen_by_the_closure(backend, fn):
    compiled = npdynamo.compile(fn, backend=_counting(backend))
    for k, graphs in zip((1.0, 1.0, 2.0), (1, 1, 2)):  # (running totals)
        check_same(fn, np.arange(3.0), k, compiled=compiled, calls=2, graphs=graphs, breaks=1)


def test_cells_shared_on_one_call_and_not_on_the_next():
    compiled = npdynamo.compile(shared_or_not, backend=CountingBackend())
    for same in (True, False, True, False, False):
        run = run_both(shared_or_not, compiled, (np.arange(3.0), same), {})
        assert run.exc is None and np.array_equal(run.got, run.expected), (same, run)


def counter_and_reader(k0):
    k = k0
    reader = lambda v: v + k  # noqa: E731

    def step(x, g):
        nonlocal k
        k = k + 1.0
        return g(x)

    return step, reader


@pytest.mark.parametrize("order", [[0, 1, 0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 1]])
def test_a_compiled_closure_called_with_a_function_sharing_its_cell_or_not(order):
    # the arguments are read before the frame's own cells: which cell the argument's is must
    # be guarded either way round (the same cell: ALIAS; another one, written: DISTINCT)
    step_p, reader_p = counter_and_reader(1.0)
    other_p = counter_and_reader(5.0)[1]
    step_c, reader_c = counter_and_reader(1.0)
    other_c = counter_and_reader(5.0)[1]
    compiled = npdynamo.compile(step_c, backend=CountingBackend())
    for which in order:
        expected = step_p(np.arange(3.0), (reader_p, other_p)[which])
        got = compiled(np.arange(3.0), (reader_c, other_c)[which])
        assert np.array_equal(got, expected), (order, which, got, expected)


class Scaler:
    def __init__(self, s):
        self.s = s

    def apply(self, v):
        return v * self.s


class Shifter(Scaler):
    def apply(self, v):
        return v + self.s


def call_bound(method, x):
    npdynamo.graph_break()
    return method(x)


def test_bound_methods_passed_in():
    compiled = npdynamo.compile(call_bound, backend=CountingBackend())
    x = np.arange(3.0)
    for obj, graphs, breaks in ((Scaler(2.0), 1, 1), (Scaler(2.0), 1, 1), (Scaler(3.0), 2, 1),
                                (Shifter(2.0), 3, 2), (Scaler(2.0), 3, 2)):  # (running totals)
        check_same(call_bound, obj.apply, x, compiled=compiled, calls=1, graphs=graphs,
                   breaks=breaks)
    # not a method
    check_same(call_bound, make_adder(1.0), x, compiled=compiled, calls=1, graphs=4, breaks=3)


# -- defaults are guarded where a call fills a parameter from them -------------------------
def pass_every_parameter(x):
    npdynamo.graph_break()
    return helper(x, 3.0)


def pass_every_then_use_default(x):
    npdynamo.graph_break()
    return helper(x, 3.0) + helper(x)


def test_defaults_a_call_does_not_read_are_not_guarded():
    compiled = npdynamo.compile(pass_every_parameter, backend=CountingBackend())
    x = np.arange(3.0)
    try:
        check_same(pass_every_parameter, x, compiled=compiled, calls=2, graphs=1, breaks=1)
        helper.__defaults__ = (5.0,)  # Python does not read them: the entry still serves
        check_same(pass_every_parameter, x, compiled=compiled, calls=2, graphs=1, breaks=1)
        helper.__defaults__ = None
        check_same(pass_every_parameter, x, compiled=compiled, calls=2, graphs=1, breaks=1)
    finally:
        helper.__defaults__ = (2.0,)


# (longer: the same first item, but ``s`` is now filled from the second, 9.0)
@pytest.mark.parametrize("swap", [(5.0,), None, (True,), (2.0, 9.0)],
                         ids=["value", "none", "bool", "longer"])
def test_a_later_call_of_the_same_function_that_uses_a_default_guards_it(swap):
    compiled = npdynamo.compile(pass_every_then_use_default, backend=CountingBackend())
    x = np.arange(3.0)
    try:
        check_same(pass_every_then_use_default, x, compiled=compiled, calls=2, graphs=1,
                   breaks=1)
        helper.__defaults__ = swap  # (None: TypeError, as in Python)
        check_same(pass_every_then_use_default, x, compiled=compiled, calls=2,
                   graphs=1 if swap is None else 2, breaks=1)
    finally:
        helper.__defaults__ = (2.0,)


def keyword_given(v, *, s=3.0):
    return v * s


def pass_the_keyword(x):
    npdynamo.graph_break()
    return keyword_given(x, s=2.0) + keyword_given(x)


def test_keyword_only_defaults_are_guarded_where_a_call_uses_them():
    compiled = npdynamo.compile(pass_the_keyword, backend=CountingBackend())
    x = np.arange(3.0)
    try:
        check_same(pass_the_keyword, x, compiled=compiled, calls=2, graphs=1, breaks=1)
        keyword_given.__kwdefaults__ = {"s": 7.0}
        check_same(pass_the_keyword, x, compiled=compiled, calls=2, graphs=2, breaks=1)
    finally:
        keyword_given.__kwdefaults__ = {"s": 3.0}
