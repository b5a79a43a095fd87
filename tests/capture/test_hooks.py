"""The decorator entry and the per-code cache, with a fake translator (``build_entry``)."""

from __future__ import annotations

import functools
import inspect
import logging
import warnings

import numpy as np
import pytest

from npdynamo import config
from npdynamo.api import compile, reset
from npdynamo.backends import lookup_backend
from npdynamo.capture import compile_frame
from npdynamo.capture.hooks import (
    NotCompilable,
    RecompileLimitWarning,
    UnsupportedPythonWarning,
    compiled_entries,
    disable,
    is_disabled,
    mark_generated,
    recompile_reasons,
)
from npdynamo.capture.hooks import cache as cache_module
from npdynamo.errors import InvalidBackend, NpdynamoError, Unsupported


class FakeEntry:
    """Stands in for ``CompiledEntry``: accepts frame args whose first value equals its own."""

    def __init__(self, fn, frame_args):
        key = frame_args[0]
        self.fn = fn
        self.frame_args = frame_args
        self.hits = 0

        def check(*args):
            return args[0] == key

        def run(*args):
            self.hits += 1
            return ("compiled", fn.__name__, args)

        # Real entries are generated code; the region hook must not hook them either.
        mark_generated(check.__code__)
        mark_generated(run.__code__)
        self.check, self.run = check, run
        self.key = key

    def miss_reason(self, *frame_args) -> str:
        return f"a: expected {self.key!r}, got {frame_args[0]!r}"

    def serve(self, rebind):
        """``CompiledEntry.serve`` of a graph that waits for nothing: its ``run``."""
        return self.run


class FakeBuilder:
    """Records every ``build_entry`` call; raises ``Unsupported`` for names in ``refuse``."""

    def __init__(self):
        self.calls = []
        self.refuse: set[str] = set()

    def __call__(self, fn, frame_args, *, backend, fullgraph, dynamic=None):
        self.calls.append((fn, frame_args, backend, fullgraph))
        if fn.__name__ in self.refuse:
            raise Unsupported(f"cannot capture {fn.__name__}")
        return FakeEntry(fn, frame_args)

    def names(self) -> list[str]:
        return [fn.__name__ for fn, *_ in self.calls]


@pytest.fixture
def builder(monkeypatch):
    fake = FakeBuilder()
    # every session's ``build_entry`` (bound when the session was made, also at this module's
    # import) captures through ``_build_entry``
    monkeypatch.setattr(
        compile_frame, "_build_entry",
        lambda fn, frame_args, fullgraph, context, *_: fake(
            fn, frame_args, backend=context.backend, fullgraph=fullgraph,
            dynamic=context.dynamic),
    )
    reset()
    yield fake
    reset()


def plain(a, b=2):
    return ("native", a, b)


def complex_signature(a, b=2, /, c=3, *args, k, m=4, **kw):
    """A docstring."""
    return ("native", a, b, c, args, k, m, kw)


# --- decorator: signature, metadata, forms -------------------------------------------------


def annotated(x: np.ndarray, n: int = 2, *, scale: float = 1.0) -> np.ndarray:
    return x


def test_annotated_signature_is_kept(builder):
    wrapped = compile(annotated)
    assert inspect.signature(wrapped, follow_wrapped=False) == inspect.signature(annotated)
    assert wrapped.__annotations__ == annotated.__annotations__
    assert wrapped.__kwdefaults__ == {"scale": 1.0} and wrapped.__defaults__ == (2,)


def test_signature_and_metadata_are_kept(builder):
    complex_signature.extra = "attribute"
    try:
        wrapped = compile(complex_signature)
    finally:
        del complex_signature.extra
    assert inspect.signature(wrapped) == inspect.signature(complex_signature)
    assert inspect.signature(wrapped, follow_wrapped=False) == inspect.signature(complex_signature)
    assert wrapped.__name__ == "complex_signature"
    assert wrapped.__qualname__ == complex_signature.__qualname__
    assert wrapped.__doc__ == "A docstring."
    assert wrapped.__module__ == __name__
    assert wrapped.__wrapped__ is complex_signature
    assert wrapped.extra == "attribute"
    assert inspect.getsource(wrapped) == inspect.getsource(complex_signature)


def test_frame_args_follow_co_varnames_with_defaults(builder):
    wrapped = compile(complex_signature)
    assert wrapped(1, k=5) == ("compiled", "complex_signature", (1, 2, 3, 5, 4, (), {}))
    wrapped(7, 8, 9, 10, 11, k=5, m=6, z=1)
    assert builder.calls[-1][1] == (7, 8, 9, 5, 6, (10, 11), {"z": 1})


def test_wrong_arguments_raise_like_the_original(builder):
    wrapped = compile(complex_signature)
    for args, kwargs in [((), {"k": 1}), ((1,), {}), ((1,), {"k": 1, "c": 2, "zz": 3, "b": 4})]:
        try:
            complex_signature(*args, **kwargs)
        except TypeError as exc:
            expected = str(exc)
        else:
            expected = None
        if expected is None:
            wrapped(*args, **kwargs)
        else:
            with pytest.raises(TypeError) as info:
                wrapped(*args, **kwargs)
            assert str(info.value) == expected


def test_decorator_with_and_without_arguments(builder):
    @compile
    def bare(x):
        return x

    @compile(backend="eager", fullgraph=True)
    def configured(x):
        return x

    assert bare(1) == ("compiled", "bare", (1,))
    assert configured(2) == ("compiled", "configured", (2,))
    (_, _, backend1, full1), (_, _, backend2, full2) = builder.calls
    assert backend1 is backend2 is lookup_backend("eager")
    assert (full1, full2) == (False, True)


def test_unknown_backend_raises_at_decoration():
    with pytest.raises(InvalidBackend, match="unknown backend 'nope'"):
        compile(backend="nope")
    with pytest.raises(InvalidBackend):
        compile(plain, backend="nope")


def test_bad_options_raise():
    with pytest.raises(TypeError, match="fullgraph"):
        compile(plain, fullgraph="yes")
    with pytest.raises(TypeError, match="dynamic"):
        compile(plain, dynamic="auto")
    with pytest.raises(TypeError, match="dynamic"):
        compile(plain, dynamic=1)
    with pytest.raises(NotCompilable, match=r"backend='eager'"):
        compile("eager")


class Model:
    scale = 3

    @compile
    def method(self, x):
        return x * self.scale

    @staticmethod
    @compile
    def static_inner(x):
        return x

    @compile
    @staticmethod
    def static_outer(x):
        return x

    @compile
    @classmethod
    def klass(cls, x):
        return cls, x


def test_methods_bind_like_functions(builder):
    model = Model()
    assert model.method(2) == ("compiled", "method", (model, 2))
    assert Model.method(model, 4) == ("compiled", "method", (model, 4))
    assert model.static_inner(5) == ("compiled", "static_inner", (5,))
    assert Model.static_outer(6) == ("compiled", "static_outer", (6,))
    assert model.klass(7) == ("compiled", "klass", (Model, 7))
    params = list(inspect.signature(Model.method).parameters)
    assert params == ["self", "x"]


def test_bound_method_keeps_its_binding(builder):
    class Plain:
        def scaled(self, x):
            return x

    obj = Plain()
    compiled = compile(obj.scaled)
    assert compiled.__self__ is obj
    assert compiled(3) == ("compiled", "scaled", (obj, 3))
    assert list(inspect.signature(compiled).parameters) == ["x"]


def test_compiling_a_compiled_function_uses_the_original(builder):
    once = compile(plain)
    twice = compile(once, fullgraph=True)
    twice(1)
    assert twice.__wrapped__ is plain
    assert builder.calls[0][0].__code__ is plain.__code__ and builder.calls[0][3] is True


class CallableThing:
    def __call__(self, x):
        return x


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        (len, "'len' (of type builtin_function_or_method)"),
        (np.sum, "'sum'"),
        (np.add, "'add' (of type ufunc)"),
        (Model, "the class Model"),
        (functools.partial(plain, 1), "of type partial"),
        (CallableThing(), "compile(obj.__call__)"),
    ],
)
def test_not_a_python_function_is_refused_clearly(obj, fragment):
    with pytest.raises(NotCompilable) as info:
        compile(obj)
    assert isinstance(info.value, NpdynamoError) and isinstance(info.value, TypeError)
    message = str(info.value)
    assert fragment in message
    assert "Python functions" in message or "methods" in message


def test_lambda_can_be_compiled(builder):
    square = compile(lambda x: x * x)
    assert square(3) == ("compiled", "<lambda>", (3,))


def test_unsupported_python_runs_uncompiled_with_one_warning(builder, monkeypatch):
    monkeypatch.setattr(cache_module, "_python", (3, 14))
    monkeypatch.setattr(cache_module, "_python_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = compile(plain)
        second = compile(complex_signature)
    assert first is plain and second is complex_signature
    assert [w.category for w in caught] == [UnsupportedPythonWarning]
    assert "3.14" in str(caught[0].message) and "3.11" in str(caught[0].message)
    assert caught[0].filename == __file__
    assert first(1) == ("native", 1, 2)
    assert builder.calls == []


# --- the cache -------------------------------------------------------------------------------


def test_hits_and_misses(builder):
    wrapped = compile(plain)
    assert wrapped(1) == ("compiled", "plain", (1, 2))
    assert wrapped(1) == ("compiled", "plain", (1, 2))
    assert wrapped(2, 5) == ("compiled", "plain", (2, 5))
    assert wrapped(1, b=9) == ("compiled", "plain", (1, 9))  # the fake only checks ``a``
    entries = compiled_entries(wrapped)
    assert [e.key for e in entries] == [1, 2]
    assert [e.hits for e in entries] == [3, 1]
    assert builder.names() == ["plain", "plain"]


def test_wrappers_share_entries_per_backend_and_fullgraph(builder):
    def other_backend(gm, example_inputs):
        return gm.forward

    first, second = compile(plain), compile(plain)
    other, full = compile(plain, backend=other_backend), compile(plain, fullgraph=True)
    first(1)
    second(1)
    assert len(builder.calls) == 1
    other(1)
    full(1)
    assert [c[2] for c in builder.calls[1:]] == [other_backend, lookup_backend("eager")]
    assert [c[3] for c in builder.calls] == [False, False, True]


def make_closure(offset):
    def closure(x):
        return x + offset

    return closure


def test_closures_get_their_own_entries(builder):
    one, two = compile(make_closure(1)), compile(make_closure(2))
    one(5)
    two(5)
    one(5)
    assert len(builder.calls) == 2
    assert builder.calls[0][0].__closure__ is not builder.calls[1][0].__closure__


def test_recompile_reasons_are_recorded_and_logged(builder, caplog):
    wrapped = compile(plain)
    with caplog.at_level(logging.INFO, logger="npdynamo.recompiles"):
        wrapped(1)
        wrapped(2)
        wrapped(3)
    assert recompile_reasons(wrapped) == ["a: expected 1, got 2", "a: expected 1, got 3"]
    assert recompile_reasons(plain) == recompile_reasons(wrapped)
    messages = [r.getMessage() for r in caplog.records if r.name == "npdynamo.recompiles"]
    assert len(messages) == 2
    assert "Recompiling function plain" in messages[0]
    assert f"{__file__}:{plain.__code__.co_firstlineno}" in messages[0]
    assert "a: expected 1, got 2" in messages[0]


def test_python_only_after_the_limit_with_one_warning(builder, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 3)
    wrapped = compile(plain)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for a in range(3):
            assert wrapped(a)[0] == "compiled"
        assert caught == []
        assert wrapped(3) == ("native", 3, 2)
        assert wrapped(4) == ("native", 4, 2)
        # final: the code object runs as plain Python, the entries are kept for inspection
        assert wrapped(0) == ("native", 0, 2)
        assert wrapped(5) == ("native", 5, 2)
    assert len(builder.calls) == 3
    assert len(compiled_entries(wrapped)) == 3
    assert wrapped.__code__ is plain.__code__  # no dispatcher, guard or miss handler left
    assert len(caught) == 1
    warning = caught[0]
    assert warning.category is RecompileLimitWarning
    assert warning.filename == __file__  # points at the user's call
    message = str(warning.message)
    assert f"plain ({__file__}:{plain.__code__.co_firstlineno})" in message
    assert "cache_size_limit (3)" in message
    assert "Last recompile reason: a: expected 0, got 3" in message
    assert "raise npdynamo.config.cache_size_limit" in message


def test_limit_is_read_at_miss_time(builder, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 1)
    wrapped = compile(plain)
    wrapped(0)
    with pytest.warns(RecompileLimitWarning):
        assert wrapped(1)[0] == "native"
    monkeypatch.setattr(config, "cache_size_limit", 2)
    assert wrapped(1)[0] == "native"  # the decision is final until reset()
    reset()
    wrapped(0)
    assert wrapped(1)[0] == "compiled"


def test_reset_drops_entries_and_records(builder, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 1)
    wrapped = compile(plain)
    wrapped(0)
    with pytest.warns(RecompileLimitWarning):
        wrapped(1)
    reset()
    assert compiled_entries(wrapped) == []
    assert recompile_reasons(wrapped) == []
    assert wrapped(1) == ("compiled", "plain", (1, 2))
    with pytest.warns(RecompileLimitWarning):  # the warning is re-armed
        wrapped(2)
    assert len(builder.calls) == 2


def test_unsupported_runs_in_python_and_is_not_retried(builder):
    builder.refuse.add("plain")
    wrapped = compile(plain)
    assert wrapped(1) == ("native", 1, 2)
    assert wrapped(2) == ("native", 2, 2)
    assert len(builder.calls) == 1


def test_unsupported_with_fullgraph_raises(builder):
    builder.refuse.add("plain")
    wrapped = compile(plain, fullgraph=True)
    with pytest.raises(Unsupported, match="cannot capture plain"):
        wrapped(1)
    with pytest.raises(Unsupported):
        wrapped(1)


def test_exceptions_from_compiled_code_propagate(builder):
    wrapped = compile(plain)
    wrapped(1)
    entry = compiled_entries(wrapped)[0]

    def failing_run(*args):
        raise ValueError("from the graph")

    cache_module.cache_of(wrapped).pairs[0] = (entry.check, failing_run)
    with pytest.raises(ValueError, match="from the graph"):
        wrapped(1)


def cell_param(x, *rest):
    def inner():
        return x + len(rest)

    x += 1
    return ("native", inner())


def counting_generator(n, *, step=1):
    yield from range(0, n, step)


def only_kwargs(**kw):
    return ("native", sorted(kw.items()))


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (plain, (1,), {}),
        (complex_signature, (1, 2, 3, 4, 5), {"k": 6, "z": 7}),
        (complex_signature, (1,), {"k": 6, "m": 0}),
        (cell_param, (1, "a", "b"), {}),
        (only_kwargs, (), {"b": 1, "a": 2}),
        (make_closure(5), (1,), {}),
    ],
)
def test_fallback_runs_the_original_code_with_the_same_result(
    builder, fn, args, kwargs, monkeypatch
):
    # run-only (no entry may be compiled): every call runs the fallback in Python
    monkeypatch.setattr(config, "cache_size_limit", 0)
    with pytest.warns(RecompileLimitWarning):
        assert compile(fn)(*args, **kwargs) == fn(*args, **kwargs)
    assert builder.calls == []


def test_fallback_of_a_generator_function_returns_a_generator(builder, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 0)
    with pytest.warns(RecompileLimitWarning):
        assert list(compile(counting_generator)(5, step=2)) == [0, 2, 4]


# --- disable ---------------------------------------------------------------------------------


def test_disable_marks_the_wrapper_the_function_and_its_code(builder):
    def helper(x):
        return ("native", x)

    off = disable(helper)
    assert is_disabled(off) and is_disabled(helper) and is_disabled(helper.__code__)
    assert not is_disabled(plain) and not is_disabled(plain.__code__) and not is_disabled(42)
    assert off(1) == ("native", 1)
    assert off.__wrapped__ is helper and off.__name__ == "helper"
    assert compile(off) is off
    assert compile(helper) is helper
    assert builder.calls == []


def test_disable_of_a_compiled_function_runs_python(builder):
    def helper(x):
        return ("native", x)

    wrapped = compile(helper)
    off = disable(wrapped)
    assert off(1) == ("native", 1)
    assert is_disabled(helper)
    assert builder.calls == []


def test_disable_rejects_non_callables():
    with pytest.raises(TypeError, match="callable"):
        disable(3)
