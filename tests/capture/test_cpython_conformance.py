"""Regressions found by running CPython's own test modules compiled (``make conformance``):
each case, cut down from the test that found it, runs plainly and compiled and must agree on
results, types, identities, iterator states and exceptions (``check_fidelity``)."""

from __future__ import annotations

import functools
import math
import sys
import warnings

import pytest

import npdynamo
from npdynamo.capture.breaks import broken_frame as breaks
from tests.fidelity import check_fidelity

BACKENDS = ["eager", "numba"]


# -- sequence methods take every argument (test_tuple.test_index) ----------------------------
def tuple_index_with_start():
    t = (1, 2, 3, 2, 1)
    return t.index(2, 2), t.index(1, -2), t.index(2, 0, 2), t.count(2)


def tuple_index_missing_in_range():
    return (1, 2, 3).index(1, 1)


def list_index_and_remove(lst):
    i = lst.index(3, 1)
    lst.remove(3)
    return i, lst


def list_remove_absent():
    lst = [1, 2]
    lst.remove(5)


def list_index_without_argument():
    return [1].index()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (tuple_index_with_start, ()),
    (tuple_index_missing_in_range, ()),
    (list_index_and_remove, ([1, 3, 2, 3],)),
    (list_remove_absent, ()),
    (list_index_without_argument, ()),
])
def test_sequence_methods(fn, args, backend):
    check_fidelity(fn, *args, backend=backend)


# -- identity of items (test_sort, test_builtin: sorted/max give the items themselves) --------
def sorted_keeps_identity():
    a, b = (1,), (2, 3)
    return (sorted([a])[0] is a, sorted([b, a], key=len)[0] is a,
            max([b, a], key=len) is b, min([a, b]) is a)


def sorted_keeps_identity_of_arguments(a, b):
    return sorted([a])[0] is a, sorted([b, a], key=len)[0] is a, max([b, a], key=len) is b


@pytest.mark.parametrize("backend", BACKENDS)
def test_sorted_and_max_keep_identity(backend):
    check_fidelity(sorted_keeps_identity, backend=backend)
    check_fidelity(sorted_keeps_identity_of_arguments, (1,), (2, 3), backend=backend)


def same_object(a, b):
    return a is b, a is not b


def test_is_between_arguments_is_guarded():
    """One entry must not answer ``a is b`` for both an aliased and a distinct pair."""
    compiled = npdynamo.compile(same_object)
    t, u = (1, 2), (1, 2)
    for x, y in [(t, t), (t, u), (t, t), ([1], [1])]:
        assert compiled(x, y) == same_object(x, y)
    lst = [1]
    assert compiled(lst, lst) == (True, False)


# -- constants equal but not the same value (test_range.test_attributes) ----------------------
def range_members_after_break(r):
    print("break")
    return r.start, r.stop, r.step


def sign_of(x):
    return math.copysign(1.0, x)


def tuple_item_types(t):
    return [type(v).__name__ for v in t]


def test_equal_constants_are_told_apart():
    compiled = npdynamo.compile(range_members_after_break)
    for r in [range(0), range(10), range(-10), range(0, -5, 2), range(3, 7)]:
        assert compiled(r) == range_members_after_break(r)
    compiled = npdynamo.compile(sign_of)
    for x in [0.0, -0.0, 0.0, -0.0]:
        assert compiled(x) == sign_of(x)
    compiled = npdynamo.compile(tuple_item_types)
    for t in [(1,), (1.0,), (True,)]:
        assert compiled(t) == tuple_item_types(t)


# -- containers that hold themselves, or are nested deeply (test_list/test_dict.test_repr) ----
def self_containing_dict():
    d = {}
    d[1] = d
    return repr(d), d


def self_containing_list():
    lst = [0, 1]
    lst.append(lst)
    return str(lst), lst


def deeply_nested_list():
    a = []
    for _ in range(sys.getrecursionlimit() + 100):
        a = [a]
    try:
        repr(a)
    except RecursionError:
        return "RecursionError"
    return "no error"


@pytest.mark.parametrize("fn", [self_containing_dict, self_containing_list, deeply_nested_list])
def test_self_containing_and_deep_containers(fn):
    expected, got = fn(), npdynamo.compile(fn)()
    assert (repr(got) if fn is deeply_nested_list else got[0]) == (
        repr(expected) if fn is deeply_nested_list else expected[0])


# -- capture time does not grow with long sequences (test_tuple.test_repr_large, test_range) --
def repeated_tuple(n):
    t = (0,) * n
    return len(t), t[-1], repr(t)[:7]


def iterator_over_huge_range():
    it = iter(range(1 << 1000))
    return next(it), type(it).__name__


def repeated_by_too_much():
    lst = [0]
    try:
        lst * sys.maxsize
    except (MemoryError, OverflowError) as error:
        return type(error).__name__


@pytest.mark.parametrize("fn, args", [
    (repeated_tuple, (10,)), (repeated_tuple, (1_000_000,)),
    (iterator_over_huge_range, ()), (repeated_by_too_much, ()),
])
def test_long_sequences_break(fn, args):
    check_fidelity(fn, *args)


def many_breaks(n):
    total = 0
    for i in range(n):
        print(i)
        total += i
        print(total)
    return total


def test_breaks_past_the_regeneration_budget_run_natively(monkeypatch):
    monkeypatch.setattr(breaks, "REGENERATION_BUDGET", 1)
    npdynamo.reset()
    check_fidelity(many_breaks, 5)
    npdynamo.reset()


# -- methods loaded from containers, singletons, builtins' argument errors --------------------
def fromkeys_through_an_instance():
    d = {}
    return d.fromkeys("abc"), d.fromkeys("ab", 0) is d


def or_returns_not_implemented():
    d = {1: 2}
    return d.__or__(None) is NotImplemented, d.__ror__(None)


def enumerate_without_arguments():
    return enumerate()


def enumerate_with_three_arguments():
    return enumerate("abc", 2, 3)


def tuple_subclass_iteration():
    class T(tuple):
        def __getitem__(self, key):
            return str(key) + "!!!"

    return next(iter(T((1, 2)))), list(T((3, 4)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [
    fromkeys_through_an_instance, or_returns_not_implemented, enumerate_without_arguments,
    enumerate_with_three_arguments, tuple_subclass_iteration,
])
def test_methods_singletons_and_argument_errors(fn, backend):
    check_fidelity(fn, backend=backend)


def int_past_the_str_digit_limit(n):
    x = 10 ** n
    print("break")
    try:
        return len(str(x))
    except ValueError as error:
        return str(error)[:30]


def test_int_past_the_str_digit_limit():
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(2048)
    try:
        check_fidelity(int_past_the_str_digit_limit, 3000)
        check_fidelity(int_past_the_str_digit_limit, 100)
    finally:
        sys.set_int_max_str_digits(limit)


# -- identity of functions and sentinels (test_functools.TestUpdateWrapper, test_dataclasses) --
def function_identity_after_break():
    def f():
        pass

    g = f
    print("break")
    return g is f, f


def dataclass_helpers(p):
    import dataclasses

    return dataclasses.asdict(p), dataclasses.astuple(p), len(dataclasses.fields(p))


@pytest.mark.parametrize("backend", BACKENDS)
def test_identity_of_functions_and_sentinels(backend):
    import dataclasses

    point = dataclasses.make_dataclass("Point", [("x", int), ("y", list)])
    check_fidelity(function_identity_after_break, backend=backend)
    check_fidelity(dataclass_helpers, point(1, [2]), backend=backend)


# -- exceptions and functions made in the frame keep what Python gives them (test_exceptions,
# -- test_functools.TestSingleDispatch) --------------------------------------------------------
def exception_with_keywords():
    e = AttributeError("x", name="carry", obj=5)
    return e.name, e.obj, e.args


def exception_constructor_error():
    try:
        SyntaxError("bad bad", ("bad.py", 1, 2))
    except TypeError as error:
        return str(error)


def annotated_function_handed_back():
    def f(x: int) -> str:
        return str(x)

    return f.__annotations__, f(3), f


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [
    exception_with_keywords, exception_constructor_error, annotated_function_handed_back,
])
def test_exceptions_and_functions_made_here(fn, backend):
    # a function with annotations made in the frame cannot be handed back: the frame runs in Python
    check_fidelity(fn, backend=backend, graphs=0 if fn is annotated_function_handed_back else None)


# -- an argument that is also a cell, closed over after a break (3.13: test_tuple) -------------
def argument_cell_closed_over_after_break(tp, n):
    print("break")
    return tuple(tp([o]) for o in range(n))


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_cell_closed_over_after_break(backend):
    check_fidelity(argument_cell_closed_over_after_break, tuple, 3, backend=backend)


# -- nan items and iterators reached through two names (test_contains, test_enumerate) ---------
def nan_items_compare_by_identity(values):
    container = list(values)
    print("break")
    return container == list(values), container == container, [float("nan")] == [float("nan")]


def enumerate_seen_through_two_names():
    e = enumerate("abc")
    f = iter(e)
    print("break")
    return f == e, f is e, next(f), list(e)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_items_and_iterators_through_two_names(backend):
    check_fidelity(nan_items_compare_by_identity, (float("nan"), 1, None, "abc"), backend=backend)
    check_fidelity(enumerate_seen_through_two_names, backend=backend)


# -- a C descriptor's __get__ may warn at the reading line (3.13: test_functools) --------------
def _capture_args(*args, **kwargs):
    return args, kwargs


class _PartialSubclass(functools.partial):
    pass


class _WithPartials:
    meth = functools.partial(_capture_args, 1, a=2)
    sub = _PartialSubclass(_capture_args, 5)


def partial_read_as_method(obj):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = obj.meth(3, b=4), obj.sub(6)
    return got, [(w.category, w.filename, w.lineno) for w in caught]


@pytest.mark.parametrize("backend", BACKENDS)
def test_c_descriptor_warning_points_at_the_user_line(backend):
    """On 3.13 ``partial.__get__`` warns (FutureWarning) with the reading frame as its place:
    read at capture time or in a guard, it pointed at npdynamo's own files."""
    check_fidelity(partial_read_as_method, _WithPartials(), backend=backend)
    got = npdynamo.compile(partial_read_as_method, backend=backend)(_WithPartials())
    assert got == partial_read_as_method(_WithPartials())


# -- a resume function with many stack values, run in Python (3.13: test_exceptions) -----------
def many_stack_values_then_pairs(extra):
    # the break (bytearray) leaves 14 values on the stack, which come first among the resume
    # function's locals: the loop's two-local store packed indices of 16 or past wrongly
    table = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9),
             (10, 10), (11, 11), (12, 12), (bytearray(b"x"), 13), (14, 14)]
    try:
        table.append(NotDefinedAnywhere)  # noqa: F821  (the NameError runs the resume in Python)
    except NameError:
        pass
    out = []
    for first, second in table + extra:
        out.append((first, second))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_function_with_many_locals_unpacks_pairs(backend):
    check_fidelity(many_stack_values_then_pairs, [(1, 2)], backend=backend)
