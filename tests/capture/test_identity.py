"""Identity under capture (``capture/identity.py``): sentinel defaults, enum members, class and
module attributes, closure cells and items of containers passed in are the same objects inside
the capture as in Python, and the answers of ``is``/``in``/``id()`` are guarded, so a call with
another object recompiles instead of reusing the other branch (issue 30).

Objects are passed as they are (no copies: a deep copy would make a new sentinel); each program
is pure, and a fresh ``x`` is made for every call.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from tests.capture import identity_programs as P
from tests.differential import CountingBackend, assert_same_value

BACKENDS = ["eager", "numba"]


def outcome(fn, args, kwargs):
    """(result, exception type, message) of one call on a fresh ``x``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a numba fallback warns; the result is what counts
            return fn(np.arange(1.0, 4.0), *args, **kwargs), None, None
    except Exception as exc:  # the compiled call must raise the same
        return None, type(exc), str(exc)


def assert_same_outcome(expected, got, what: str) -> None:
    assert got[1:] == expected[1:], f"{what}: raised {got[1:]}, Python {expected[1:]}"
    if expected[1] is None:
        assert_same_value(expected[0], got[0], what)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(P.CASES))
def test_matches_python_across_calls(name, backend):
    """One compiled function called with the same and with other objects: every call is
    Python's result (a changed object recompiles or misses, never reuses the other branch)."""
    fn, calls = P.CASES[name]
    compiled = npdynamo.compile(fn, backend=backend)
    for i, (args, kwargs) in enumerate(calls * 2):  # the second round hits the cache
        assert_same_outcome(outcome(fn, args, kwargs), outcome(compiled, args, kwargs),
                            f"{name}, call {i}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(P.CASES))
def test_matches_python_on_a_first_call(name, backend):
    """Each call captured afresh (no earlier entry to reuse)."""
    fn, calls = P.CASES[name]
    for i, (args, kwargs) in enumerate(calls):
        npdynamo.reset()
        compiled = npdynamo.compile(fn, backend=backend)
        assert_same_outcome(outcome(fn, args, kwargs), outcome(compiled, args, kwargs),
                            f"{name}, call {i}")


def test_the_issue_examples_are_one_graph_without_a_break():
    for fn, args in ((P.shift, ()), (P.scale, (P.Mode.B,)), (P.keyword_only, ()),
                     (P.dataclass_missing, ()), (P.scale_in, (P.Mode.B,))):
        report = npdynamo.explain(fn)(np.ones(3), *args)
        assert report.graph_break_count == 0, (fn.__name__, report.break_reasons)
        assert report.graph_count == 1


def guard_texts(fn, *args, **kwargs) -> str:
    report = npdynamo.explain(fn)(np.ones(3), *args, **kwargs)
    return report.verbose()


def test_the_answer_is_guarded_by_identity():
    # the default and the global are one object: an alias guard between their sources
    assert "d is _MISSING" in guard_texts(P.shift)
    # another object: a guard that it stays another object
    assert "m is not Mode.B" in guard_texts(P.scale, P.Mode.A)
    # against an object of the code with no source of its own (a fixed object)
    text = guard_texts(P.member_ids, P.Mode.B)
    assert "m is <Mode.B: 2>" in text or "m is Mode.B" in text, text


def test_a_changed_class_attribute_is_seen():
    compiled = npdynamo.compile(P.class_attribute)
    x = np.ones(2)
    try:
        assert_same_value(P.class_attribute(x, P._MISSING), compiled(x, P._MISSING))
        P.Settings.SENTINEL = P.OTHER
        assert_same_value(P.class_attribute(x, P._MISSING), compiled(x, P._MISSING))
        assert_same_value(P.class_attribute(x, P.OTHER), compiled(x, P.OTHER))
    finally:
        P.Settings.SENTINEL = P._MISSING


def test_a_changed_module_attribute_and_dict_item_are_seen():
    compiled = npdynamo.compile(P.from_global_dict)
    x = np.ones(2)
    try:
        assert_same_value(P.from_global_dict(x), compiled(x))
        P.CFG["d"] = P.OTHER
        assert_same_value(P.from_global_dict(x), compiled(x))
    finally:
        P.CFG["d"] = P._MISSING
    assert_same_value(P.from_global_dict(x), compiled(x))


def test_is_between_a_computed_array_and_its_input_is_python_s():
    # np.asarray(x) is x itself in NumPy; the graph's array is not that object: a break
    report = npdynamo.explain(P.asarray_is)(np.ones(3))
    assert any("NumPy may hand back its input" in r.reason for r in report.break_reasons)
    x = np.ones(3)
    assert_same_value(P.asarray_is(x), npdynamo.compile(P.asarray_is)(x))


def test_tuple_constants_of_the_code_are_one_object():
    compiled = npdynamo.compile(P.code_tuples)
    same, t = compiled()
    assert same is True
    assert t is P.code_tuples()[1]  # the code's own constant, as Python hands back


def test_is_on_bound_methods_is_refused():
    class Box:
        def get(self):
            return 1

    box = Box()

    def f(x, b):
        return x * 2 if b.get is b.get else x

    report = npdynamo.explain(f)(np.ones(2), box)
    assert any("bound method" in r.reason for r in report.break_reasons)
    assert_same_value(f(np.ones(2), box), npdynamo.compile(f)(np.ones(2), box))


def test_is_between_equal_numbers_read_from_outside_is_guarded():
    def f(x, a, b):
        return x * 2 if a is b else x

    compiled = npdynamo.compile(f)
    big, other = 10**20, 10**20 + 0  # equal values; ``other`` may or may not be another int
    for a, b in ((big, big), (big, int(str(big))), (other, other)):
        assert_same_value(f(np.ones(2), a, b), compiled(np.ones(2), a, b))


# -- generated programs ----------------------------------------------------------------------
class Holder:
    S = None


SENT, ALT = object(), object()
ARR = np.zeros(2)
#: What the generated programs see as module globals (``Kind``: an Enum).
GLOBALS = {"SENT": SENT, "ALT": ALT, "Kind": P.Mode, "KB": P.Mode.B, "Holder": Holder,
           "dataclasses": dataclasses}
#: Objects passed in: sentinels, members of three enum kinds, numbers, a string, an array.
POOL = [SENT, ALT, P.Mode.A, P.Mode.B, P.Perm.R, P.Level.HIGH, None, 1, 2.5, "s", ARR,
        dataclasses.MISSING]
#: What a comparison reads: arguments, a default and a keyword-only default (``d``, ``kd``), a
#: closure cell (``c``), items of a tuple and a dict passed in, globals, enum members read
#: through their class, a global alias of one, a class attribute, a module attribute (``G1``
#: and ``Holder.S`` are given another object before each call).
SUBJECTS = ["a", "b", "d", "kd", "c", "t[0]", "t[1]", "cfg['k']", "SENT", "ALT", "G1", "Kind.A",
            "Kind.B", "KB", "Holder.S", "dataclasses.MISSING", "None"]
COMPARISONS = ["{l} is {r}", "{l} is not {r}", "{l} == {r}", "{l} != {r}", "{l} in ({r}, {s})",
               "{l} not in ({r}, {s})"]


@st.composite
def identity_programs(draw):
    subject = st.sampled_from(SUBJECTS)
    lines = ["def make(c):", "    def f(x, a, b, t, cfg, d=SENT, *, kd=ALT):", "        k = 0"]
    flags = []
    for i in range(draw(st.integers(1, 3))):
        test = draw(st.sampled_from(COMPARISONS)).format(
            l=draw(subject), r=draw(subject), s=draw(subject))
        lines += [f"        f{i} = {test}", f"        if f{i}:", f"            k += {1 << i}"]
        flags.append(f"f{i}")
    lines += [f"        return x * k, ({', '.join(flags)},)", "    return f"]
    return "\n".join(lines) + "\n"


@st.composite
def call_sequences(draw):
    """(cell, calls): each call's arguments and the global and class attribute it runs with."""
    item = st.sampled_from(POOL)
    calls = []
    for _ in range(draw(st.integers(1, 4))):
        kwargs = {}
        if draw(st.booleans()):
            kwargs["d"] = draw(item)
        if draw(st.booleans()):
            kwargs["kd"] = draw(item)
        args = (draw(item), draw(item), (draw(item), draw(item)), {"k": draw(item)})
        calls.append((args, kwargs, draw(item), draw(item)))
    return draw(item), calls


#: Generated programs per run (``NPDYNAMO_IDENTITY_EXAMPLES``; the numba test runs a fifth).
EXAMPLES = int(os.environ.get("NPDYNAMO_IDENTITY_EXAMPLES", "150"))


def run_generated(source: str, cell, calls, backend: str) -> None:
    namespace = dict(GLOBALS)
    exec(compile(source, "<identity>", "exec"), namespace)  # noqa: S102
    fn = namespace["make"](cell)
    compiled = npdynamo.compile(fn, backend=backend)
    try:
        for i, (args, kwargs, held, global_value) in enumerate(calls):
            Holder.S, namespace["G1"] = held, global_value
            assert_same_outcome(outcome(fn, args, kwargs), outcome(compiled, args, kwargs),
                                f"call {i}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nprogram:\n{source}cell: {cell!r}\ncalls: {calls!r}"
                             ) from None
    finally:
        Holder.S = None


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(identity_programs(), call_sequences())
def test_generated_identity_programs_eager(source, sequence):
    run_generated(source, *sequence, "eager")


@settings(max_examples=max(1, EXAMPLES // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(identity_programs(), call_sequences())
def test_generated_identity_programs_numba(source, sequence):
    run_generated(source, *sequence, "numba")


def test_is_none_on_a_dynamic_number_guards_its_type_only():
    def f(x, n=None):
        return x * 2 if n is None else x * n

    backend = CountingBackend()
    compiled = npdynamo.compile(f, backend=backend)
    for n in (2, 3, 4, 5, None, 6):
        assert_same_value(f(np.ones(2), n), compiled(np.ones(2), n))
    # 2, then 3 (the number becomes a graph input), then None: `n is None` relies on its type
    assert backend.count == 3
