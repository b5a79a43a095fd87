"""An internal error during capture never drops a guard (issue 23, trust).

Fault injection: one of npdynamo's own functions that make value kinds, sources or guards
(``INJECTED``) raises ``TypeError``/``AttributeError``/``KeyError``/``IndexError`` at one of its
calls during a capture. The capture must end in a graph break with an internal-error reason or
in an entry that runs Python (both run the frame as Python would); never in an entry that
serves a later call whose inputs its missing guard would have told apart, and never taken for
the program's own exception. Each later call, with changed dict items, list items, attributes,
globals, closure cells, must match plain Python.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.capture import builder, calls, session, values
from npdynamo.capture.guards import guard as guards
from npdynamo.capture.guards import sources
from npdynamo.ops.registry import Op
from tests.capture import programs
from tests.differential import assert_same_value

BACKENDS = ["eager", "numba"]
ERRORS = [TypeError, AttributeError, KeyError, IndexError]

#: (class, method): npdynamo's own code that makes value kinds, sources and guards
INJECTED = [
    (builder.ValueBuilder, "wrap"),
    (builder.ValueBuilder, "_wrap"),
    (builder.ValueBuilder, "guarded_const"),
    (builder._LazyDict, "__getitem__"),
    (builder._LazyDict, "_has"),
    (values.GuardedConst, "__init__"),
    (values._Container, "__init__"),
    (values.UserObjectValue, "__init__"),
    (values.ArrayValue, "__init__"),
    (session.CaptureContext, "guard"),
    (guards.GuardSet, "add"),
    (guards.Guard, "__init__"),
    (sources.ItemSource, "__init__"),
    (sources.AttrSource, "__init__"),
]


@contextlib.contextmanager
def failing(cls, name: str, error: type[Exception] | None, at: int):
    """``cls.name`` raises ``error`` at its call number ``at`` (0-based) inside the block;
    yields the list of calls made (its length counts them)."""
    original = cls.__dict__[name]
    calls: list[int] = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if error is not None and len(calls) == at + 1:
            raise error("injected by test_swallowed_errors")
        return original(*args, **kwargs)

    setattr(cls, name, wrapper)
    try:
        yield calls
    finally:
        setattr(cls, name, original)


def injected_outcome(compiled) -> list[str]:
    """Each entry's reason for not being a whole graph ('' for a graph)."""
    found = npdynamo.inspect(compiled)
    return [entry.runs_python or (str(entry.graph_break.reason) if entry.graph_break else "")
            for entry in found.entries]


def assert_internal_outcome(reasons: list[str]) -> None:
    """The failed capture became a break or a Python entry that says npdynamo failed, not an
    entry that says the program raised our injected error."""
    assert any("npdynamo failed" in r for r in reasons), reasons
    assert not any(r.startswith(tuple(e.__name__ for e in ERRORS)) for r in reasons), reasons


# -- the programs: each reads one kind of value from outside ------------------------------------
SCALE = 2.0


class Holder:
    def __init__(self, k):
        self.k = k


def read_dict_item(x, d):
    return x + d["a"]


def read_list_item(x, items):
    return x * items[0]


def read_attribute(x, o):
    return x * o.k


def read_global(x):
    return x * SCALE


def make_cell_reader():
    c = 3.0

    def read_cell(x):
        return x * c

    def set_cell(value):
        nonlocal c
        c = value

    return read_cell, set_cell


read_cell, set_cell = make_cell_reader()


def read_with_default(x, o):
    return x * getattr(o, "k", 1.0)


def set_scale(value):
    global SCALE
    SCALE = value


def keep(_value):
    pass


x3 = np.arange(3.0)
#: name -> (function, setter of its outside state, [(state, args)]: the first call captures
#: (under the injection), the others change what the missing guard would have checked)
CASES = {
    "dict item": (read_dict_item, keep, [
        (None, (x3, {"a": 1.0})), (None, (x3, {"a": 5.0})), (None, (x3, {"a": 2})),
        (None, (x3, {"b": 1.0, "a": 7.0}))]),
    "list item": (read_list_item, keep, [
        (None, (x3, [1.0])), (None, (x3, [4.0])), (None, (x3, [2, 3]))]),
    "attribute": (read_attribute, keep, [
        (None, (x3, Holder(1.0))), (None, (x3, Holder(4.0))), (None, (x3, Holder(3)))]),
    "global": (read_global, set_scale, [(2.0, (x3,)), (5.0, (x3,)), (3, (x3,))]),
    "closure cell": (read_cell, set_cell, [(3.0, (x3,)), (6.0, (x3,)), (4, (x3,))]),
    "getattr default": (read_with_default, keep, [
        (None, (x3, Holder(1.0))), (None, (x3, Holder(4.0))), (None, (x3, object()))]),
}


def run_case(case: str, cls, name: str, error, at: int, backend: str) -> list[str] | None:
    """The case's calls with the injection during the first; the reasons of its entries, or
    None when the injection did not fire (the function is called fewer times)."""
    fn, set_state, calls = CASES[case]
    npdynamo.reset()
    compiled = npdynamo.compile(fn, backend=backend)
    fired = False
    try:
        for i, (state, args) in enumerate(calls):
            if state is not None:
                set_state(state)
            with failing(cls, name, error if i == 0 else None, at) as made:
                got = compiled(*copy.deepcopy(args))
            fired |= i == 0 and len(made) > at
            assert_same_value(fn(*copy.deepcopy(args)), got, f"{case}, call {i}")
    finally:
        if calls[0][0] is not None:
            set_state(calls[0][0])
    return injected_outcome(compiled) if fired else None


#: functions every case's capture calls (the others are called only for some kinds of value)
ALWAYS_CALLED = [(builder.ValueBuilder, "wrap"), (session.CaptureContext, "guard"),
                 (guards.GuardSet, "add"), (guards.Guard, "__init__")]
#: the capture does not depend on the backend: numba runs the functions every case calls
MATRIX = [pytest.param(cls, name, case, backend, id=f"{cls.__name__}.{name}-{case}-{backend}")
          for backend in BACKENDS for cls, name in INJECTED for case in CASES
          if backend == "eager" or (cls, name) in ALWAYS_CALLED]


@pytest.mark.parametrize("cls,name,case,backend", MATRIX)
def test_an_injected_failure_never_serves_a_stale_entry(cls, name, case, backend):
    fired = 0
    for error in ERRORS if backend == "eager" else [TypeError]:
        for at in range(3):
            reasons = run_case(case, cls, name, error, at, backend)
            if reasons is not None:
                fired += 1
                assert_internal_outcome(reasons)
    npdynamo.reset()
    if (cls, name) in ALWAYS_CALLED:
        assert fired, f"{cls.__name__}.{name} was never called capturing {case}"



# -- the property: a random call of a random function fails, over the capture programs -------
def changed(value, draw):
    """``value`` with its Python numbers changed (what value guards check); arrays keep their
    type, dtype and shape, with new contents."""
    if isinstance(value, np.ndarray):
        return value * 1.5 + 1 if value.dtype.kind in "fc" else value + 1 \
            if value.dtype.kind in "iu" else ~value
    if type(value) is bool:
        return not value
    if type(value) in (int, float):
        return value + draw(st.sampled_from([1, 2, 0.5]))
    if type(value) in (tuple, list):
        return type(value)(changed(v, draw) for v in value)
    if type(value) is dict:
        return {k: changed(v, draw) for k, v in value.items()}
    return value


SAMPLED = [p for p in programs.PROGRAMS if p[0].split("-")[0] in {
    "python_scalars", "sequences", "dict_input", "dict_loops", "build_containers",
    "range_enumerate_zip", "arith", "softmax", "layernorm", "basic_indexing", "attributes",
    "builtins_on_numbers", "slices_and_none", "shape_ops"}]


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=st.sampled_from(SAMPLED), target=st.sampled_from(INJECTED),
       error=st.sampled_from(ERRORS), data=st.data())
def test_a_failure_at_any_call_keeps_programs_exact(program, target, error, data):
    _name, fn, factory = program
    cls, method = target
    args = factory()
    npdynamo.reset()
    with failing(cls, method, None, 0) as made:  # how often a clean capture calls it
        npdynamo.compile(fn, backend="eager")(*copy.deepcopy(args))
    event("called" if made else "not called")
    if not made:
        return
    at = data.draw(st.integers(0, len(made) - 1), label="failing call")
    npdynamo.reset()
    compiled = npdynamo.compile(fn, backend="eager")
    with failing(cls, method, error, at):
        got = compiled(*copy.deepcopy(args))
    assert_same_value(fn(*copy.deepcopy(args)), got)
    assert_internal_outcome(injected_outcome(compiled))
    old_scale = programs.SCALE
    try:
        for later in (changed(args, data.draw), args):
            programs.SCALE = old_scale + 1.0 if later is not args else old_scale
            assert_same_value(fn(*copy.deepcopy(later)), compiled(*copy.deepcopy(later)))
    finally:
        programs.SCALE = old_scale
        npdynamo.reset()


# -- an internal error inside a lookup that getattr's default would swallow ---------------------
class Named:
    def __init__(self, name):
        self.name = name

    @property
    def label(self):
        return self.name.upper()  # a method of a constant string: computed at capture

    @property
    def root(self):
        return np.sqrt(float(len(self.name)))  # an op on constants: computed at capture


def scale_by_label(x, o):
    return x * len(getattr(o, "label", "?"))


def scale_by_root(x, o):
    return x * getattr(o, "root", 1.0)


def _broken(error):
    def broken(*args, **kwargs):
        raise error("injected by test_swallowed_errors")
    return broken


#: (program, where npdynamo's own code fails inside the lookup getattr's default guards)
INSIDE_GETATTR = [(scale_by_label, calls, "wrap_result"), (scale_by_root, Op, "__call__")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("error", ERRORS)
@pytest.mark.parametrize("fn,owner,name", INSIDE_GETATTR, ids=["wrap_result", "op_on_constants"])
def test_an_internal_error_is_not_the_programs_attribute_error(fn, owner, name, backend, error,
                                                               monkeypatch):
    # npdynamo's own code fails computing the property: before, an AttributeError there became
    # the program's, and getattr returned its default on every call of the entry
    # (scale_by_label: len("?") where Python gives len("ABC"))
    npdynamo.reset()
    compiled = npdynamo.compile(fn, backend=backend)
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, _broken(error))
        got = compiled(x3, Named("abc"))
    assert_same_value(fn(x3, Named("abc")), got)
    for label in ("abc", "de"):
        assert_same_value(fn(x3, Named(label)), compiled(x3, Named(label)))
    if error is AttributeError or owner is calls:  # an op's NumPy-like error is the program's
        assert_internal_outcome(injected_outcome(compiled))
    npdynamo.reset()


# -- the guards themselves fail to generate --------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("failures", [1, 2, 5])
def test_guards_that_fail_to_generate_never_reach_the_user(backend, failures, monkeypatch):
    # the first failure makes the capture fall back to a Python entry, whose guards fail too
    # from the second on: that entry then holds no guard (Python is right for any input),
    # never a raw traceback and never an entry serving the wrong inputs
    original = guards.GuardSet.compile
    made: list[int] = []

    def broken(self):
        made.append(1)
        if len(made) <= failures:
            raise TypeError("injected by test_swallowed_errors")
        return original(self)

    npdynamo.reset()
    compiled = npdynamo.compile(read_dict_item, backend=backend)
    with monkeypatch.context() as patch:
        patch.setattr(guards.GuardSet, "compile", broken)
        assert_same_value(read_dict_item(x3, {"a": 1.0}), compiled(x3, {"a": 1.0}))
    for d in ({"a": 2.0}, {"a": 3}, {"b": 1, "a": -1.5}):
        assert_same_value(read_dict_item(x3, d), compiled(x3, d))
    assert_internal_outcome(injected_outcome(compiled)[:1])
    npdynamo.reset()
