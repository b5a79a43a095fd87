"""The region hook (``enable``): hooking on first call, compiled later calls, hook removal."""

from __future__ import annotations

import inspect
import json
import sys
import warnings

import numpy as np
import pytest

from npdynamo.api import compile, enable, reset
from npdynamo.backends import lookup_backend
from npdynamo.capture.hooks import (
    NpdynamoWarning,
    UnsupportedPythonWarning,
    disable,
    original_function,
)
from npdynamo.capture.hooks import cache as cache_module
from npdynamo.capture.hooks import region as region_module
from npdynamo.errors import InvalidBackend
from tests.capture import test_hooks

#: the fake entry builder of test_hooks, as a fixture here too
builder = test_hooks.builder

MONITORING = sys.version_info >= (3, 12)
TRACER_BEFORE_TESTS = sys.gettrace()


def assert_no_hook():
    # None in a plain run; a coverage or debugger tracer installed before the test must be back.
    assert sys.gettrace() is TRACER_BEFORE_TESTS
    if MONITORING:
        assert sys.monitoring.get_tool(sys.monitoring.OPTIMIZER_ID) is None


def step(x, y=1):
    return ("native", x, y)


def varargs(a, *rest, scale=2, **options):
    return ("native", a, rest, scale, options)


def kwonly(a, *, b, c=3):
    return ("native", a, b, c)


def make_counter(start):
    def counter(x):
        return ("native", x + start)

    return counter


class Layer:
    def forward(self, x):
        return ("native", x)


def caller_of_step(x):
    return step(x)


def test_second_call_is_compiled_and_stays_compiled_after_the_block(builder):
    with enable():
        assert step(1) == ("native", 1, 1)
        assert step(2) == ("compiled", "step", (2, 1))
        assert step(2) == ("compiled", "step", (2, 1))
    assert_no_hook()
    assert step(3, 4) == ("compiled", "step", (3, 4))
    assert [args for _, args, _, _ in builder.calls] == [(2, 1), (3, 4)]
    assert builder.calls[0][0].__code__ is original_function(step).__code__
    assert builder.calls[0][3] is False


def test_varargs_kwargs_and_kwonly_functions(builder):
    with enable():
        varargs(0)
        assert varargs(1, 2, 3, scale=4, mode="x") == (
            "compiled",
            "varargs",
            (1, 4, (2, 3), {"mode": "x"}),
        )
        kwonly(0, b=1)
        assert kwonly(1, b=2) == ("compiled", "kwonly", (1, 2, 3))
    assert varargs(5) == ("compiled", "varargs", (5, 2, (), {}))
    assert inspect.signature(varargs) == inspect.signature(original_function(varargs))
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'b'"):
        kwonly(1)


def test_closure_is_hooked_through_gc(builder):
    counter = make_counter(10)
    with enable():
        assert counter(1) == ("native", 11)
        assert counter(2) == ("compiled", "counter", (2,))
    assert counter(3) == ("compiled", "counter", (3,))
    assert counter.__code__.co_freevars == ("start",)
    assert original_function(counter)(5) == ("native", 15)


def test_method_is_hooked(builder):
    layer = Layer()
    with enable():
        assert layer.forward(1) == ("native", 1)
        assert layer.forward(2) == ("compiled", "forward", (layer, 2))


def test_function_called_by_another_is_hooked(builder):
    with enable():
        caller_of_step(1)
        caller_of_step(2)
    assert builder.names() == ["caller_of_step"]  # its compiled run does not call step
    assert step(9) == ("compiled", "step", (9, 1))
    assert builder.names() == ["caller_of_step", "step"]


class Base:
    def value(self, x):
        return ("native base", x)


class Derived(Base):
    def value(self, x):
        return super().value(x) + ("derived",)


def countdown(n):
    return ("native", n) if n == 0 else countdown(n - 1)


def test_method_using_super_keeps_its_class_cell(builder):
    obj = Derived()
    with enable():
        assert obj.value(1) == ("native base", 1, "derived")
        assert obj.value(2) == ("compiled", "value", (obj, 2))
    builder.refuse.add("value")
    reset()
    with enable():
        obj.value(1)
        # Refused: the fallback runs the original code, whose super() needs the __class__ cell.
        assert obj.value(3) == ("native base", 3, "derived")


def test_recursive_function_is_compiled_from_its_inner_call(builder):
    with enable():
        assert countdown(2) == ("compiled", "countdown", (1,))
    assert builder.names() == ["countdown"]


def test_reset_inside_a_block_lets_functions_be_hooked_again(builder):
    with enable():
        step(1)
        reset()
        assert step(2) == ("native", 2, 1)
        assert step(3) == ("compiled", "step", (3, 1))
    assert_no_hook()


def test_hook_removed_when_the_block_raises(builder):
    with pytest.raises(ZeroDivisionError):
        with enable():
            step(1)
            raise ZeroDivisionError
    assert_no_hook()
    assert step(2)[0] == "compiled"  # hooked before the exception


def test_library_and_anonymous_code_is_not_captured(builder):
    dumps_code = json.dumps.__code__
    with enable():
        for _ in range(3):
            json.dumps({"a": 1})
            np.mean(np.ones(3))
            (lambda v: v)(1)
            [v for v in range(2)]
            sum(v for v in range(2))
            list(generator(2))
    assert json.dumps.__code__ is dumps_code
    assert [fn.__qualname__ for fn in region_module.hooked_functions()] == []
    assert builder.calls == []
    assert list(generator(2)) == [0, 1]


def generator(n):
    yield from range(n)


def test_disabled_function_and_its_callees_are_not_hooked(builder):
    def uses_step(x):
        return step(x)

    off = disable(uses_step)
    with enable():
        off(1)
        off(2)
    assert step(3) == ("native", 3, 1)
    assert builder.calls == []


def test_reset_restores_the_original_code(builder):
    code = step.__code__
    with enable():
        step(1)
    assert step.__code__ is not code
    assert inspect.getsource(step).startswith("def step(x, y=1):")
    reset()
    assert step.__code__ is code
    assert original_function(step) is None
    assert step(1) == ("native", 1, 1)


def test_nested_blocks_remove_the_hook_only_at_the_outermost_exit(builder):
    def other_backend(gm, example_inputs):
        return gm.forward

    with enable():
        with enable(backend=other_backend):
            step(1)
        if MONITORING:
            assert sys.monitoring.get_tool(sys.monitoring.OPTIMIZER_ID) == "npdynamo"
        else:
            assert sys.gettrace() is not None
        kwonly(1, b=1)
    assert_no_hook()
    step(2)
    kwonly(2, b=2)
    assert [c[2] for c in builder.calls] == [other_backend, lookup_backend("eager")]


def test_function_compiled_elsewhere_is_still_hooked(builder):
    compiled = compile(step)
    compiled(1)
    with enable():
        step(2)
        assert step(3) == ("compiled", "step", (3, 1))
    assert compiled.__wrapped__ is step
    assert len(builder.calls) == 2


def test_region_and_decorator_share_entries(builder):
    with enable():
        step(1)
        step(2)
    wrapped = compile(step)
    assert wrapped.__wrapped__ is step
    assert wrapped(2) == ("compiled", "step", (2, 1))
    assert len(builder.calls) == 1


def test_unknown_backend_raises():
    with pytest.raises(InvalidBackend):
        enable("nope")


def test_existing_tracer_is_kept(builder):
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code is step.__code__ or frame.f_code.co_name == "step":
            seen.append(event)
        return None

    sys.settrace(tracer)
    try:
        with enable():
            step(1)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(TRACER_BEFORE_TESTS)
    assert "call" in seen  # chained on 3.11, untouched on 3.12+
    assert step(2)[0] == "compiled"


def test_taken_tool_id_warns_and_runs_uncompiled(builder):
    if not MONITORING:
        # 3.11 has no tool ids: the settrace hook always installs.
        with enable():
            step(1)
        assert step(2)[0] == "compiled"
        return
    monitoring = sys.monitoring
    monitoring.use_tool_id(monitoring.OPTIMIZER_ID, "someone else")
    try:
        with pytest.warns(NpdynamoWarning, match="held by 'someone else'"):
            with enable():
                step(1)
                step(2)
        assert monitoring.get_tool(monitoring.OPTIMIZER_ID) == "someone else"
    finally:
        monitoring.free_tool_id(monitoring.OPTIMIZER_ID)
    assert step(3) == ("native", 3, 1)


def test_unsupported_python_region_is_a_no_op(builder, monkeypatch):
    monkeypatch.setattr(cache_module, "_python", (3, 10))
    monkeypatch.setattr(cache_module, "_python_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with enable():
            assert_no_hook()
            step(1)
            step(2)
    assert [w.category for w in caught] == [UnsupportedPythonWarning]
    assert step(3) == ("native", 3, 1)


def make_adder(start):
    def adder(x):
        return ("native", x + start)

    return adder


def test_new_closure_objects_are_hooked_until_the_lookup_limit(builder, monkeypatch):
    monkeypatch.setattr(region_module, "MAX_INSTANCE_LOOKUPS", 3)
    factory = disable(make_adder)  # so the factory itself stays native
    results = []
    with enable():
        for i in range(5):
            adder = factory(i)
            results.append((adder(0)[0], adder(0)[0]))
    assert results == [("native", "compiled")] * 3 + [("native", "native")] * 2
