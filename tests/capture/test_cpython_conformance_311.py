"""More regressions found by ``make conformance`` on Python 3.11 (round 3 of issue 23), one class
per section, each a small program of the shape the CPython test had: plain and compiled must
agree on results, identities and exceptions (``check_fidelity``), on both backends."""

from __future__ import annotations

import operator
import sys

import pytest

from tests.fidelity import check_fidelity

BACKENDS = ["eager", "numba"]


# -- a string built at run time is not the code's constant (test_operator.test_is,
#    test_class.testSetattrWrapperNameIntern): rebuilt after a break, it was a literal of the
#    generated code, which the compiler interns or shares with an equal literal ------------------
def computed_string_after_break():
    a = b = "xyzpdq"
    c = a[:3] + b[3:]
    print("break")
    return operator.is_(a, b), operator.is_(a, c), a is c, c == a


def decoded_name_after_break():
    name = str(b"__add__", "ascii")
    literal = "__add__"
    print("break")
    return name is literal, name is not literal, name == literal


def computed_numbers_after_break(n):
    big = n * 10**20
    f = n / 3
    print("break")
    return big is n * 10**20, f is n / 3, big == n * 10**20, f == n / 3


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (computed_string_after_break, ()),
    (decoded_name_after_break, ()),
    (computed_numbers_after_break, (7,)),
])
def test_computed_constants_keep_their_identity(fn, args, backend):
    check_fidelity(fn, *args, backend=backend)


# -- an except block after a break (test_exceptions.test_getattr_has_name_and_obj_for_method,
#    test_generator_leaking3, test_dataclasses.test_clean_traceback_from_fields_exception): the
#    resume function's stack was sized without its handlers, so a call inside one overwrote
#    the callee's frame (a wrong result, an UnboundLocalError in the callee, or a crash) -------
class Checker:
    def pair(self, a, b):
        return (a, b)

    def three(self, a, b, c):
        return [a, b, c]


class Plain:
    def method(self):
        return 1


def method_call_in_handler_after_break(checker, obj):
    print("break")
    try:
        obj.missing()
    except AttributeError as exc:
        first = checker.pair("missing", exc.name)
        second = checker.three(obj is exc.obj, first, len(first))
        return first, second


def exc_info_in_handler_after_break(checker):
    print("break")
    try:
        checker.ratio = 1 / 0
    except ZeroDivisionError as e:
        pair = checker.pair(sys.exc_info()[1], e)
        return pair[0] is e, type(pair[1]).__name__
    return None


def nested_handlers_after_break(checker, items):
    print("break")
    out = []
    for x in items:
        try:
            try:
                out.append(checker.pair(x, 1 // x))
            except ZeroDivisionError as inner:
                out.append(checker.three(x, str(inner), checker.pair(x, x)))
                raise KeyError(x) from inner
        except KeyError as outer:
            out.append(checker.pair("outer", outer.args))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [
    (method_call_in_handler_after_break, (Checker(), Plain())),
    (exc_info_in_handler_after_break, (Checker(),)),
    (nested_handlers_after_break, (Checker(), [2, 0, 1])),
])
def test_calls_in_except_blocks_after_a_break(fn, args, backend):
    check_fidelity(fn, *args, backend=backend)


# -- capture calls no user __hash__ (test_class: testInit, testBinaryOps, testUnaryOps,
#    testMisc, testGetSetAndDel; test_dict's test_setdefault_atomic): asking whether an object
#    is a disabled or compiled function looked it up in weak sets and dicts, which ran the
#    class's own __hash__ -------------------------------------------------------------------
class Logged:
    def __init__(self, log):
        self.log = log
        log.append("__init__")

    def __hash__(self):
        self.log.append("__hash__")
        return 1

    def __eq__(self, other):
        self.log.append("__eq__")
        return self is other

    def __neg__(self):
        self.log.append("__neg__")
        return 0


def user_object_made_inside(log):
    obj = Logged(log)
    seen = list(log)
    return seen, [("made", obj is not None)]


def user_object_passed_in(obj):
    before = list(obj.log)
    value = -obj
    print("break")
    return before, value, list(obj.log)


def setdefault_hashes_once(log):
    y = {Logged(log): 5}
    y.setdefault(Logged(log), [])
    return list(log)  # each key hashed once by the dict, compared once


@pytest.mark.parametrize("backend", BACKENDS)
def test_capture_calls_no_user_hash(backend):
    check_fidelity(user_object_made_inside, [], backend=backend)
    check_fidelity(user_object_passed_in, Logged([]), backend=backend)
    check_fidelity(setdefault_hashes_once, [], backend=backend)


# -- a descriptor written in Python runs on every read (test_dataclasses.
#    test_getting_field_calls_get): capture read it once, natively, and the compiled code never
#    called __get__ (the call count was 0) ---------------------------------------------------
class Logging:
    """A data descriptor logging its calls on the owner's list."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        obj.log.append("get")
        return len(obj.log)

    def __set__(self, obj, value):
        obj.log.append(("set", value))


class Counting:
    """A non-data descriptor: the instance's own attribute wins over it."""

    def __get__(self, obj, owner=None):
        return 42


class Holder:
    field = Logging()
    shadowed = Counting()

    def __init__(self):
        self.log = []


def read_data_descriptor(h):
    first = h.field
    h.field = 5
    second = h.field
    return first, second, list(h.log)


def read_non_data_descriptor(h):
    before = h.shadowed
    h.__dict__["shadowed"] = 7
    return before, h.shadowed


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [read_data_descriptor, read_non_data_descriptor])
def test_python_descriptors_run_their_get(fn, backend):
    check_fidelity(fn, Holder(), backend=backend)

