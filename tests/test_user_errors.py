"""User mistakes raise NpdynamoError subclasses naming the caller's file and line and what to
do: compile/explain/set_logs arguments, the backend registry."""

import types
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.backends import registry

HERE = __file__


def _f(x):
    return x + 1


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda: npdynamo.compile(_f, fullgraph="yes"), "fullgraph"),
        (lambda: npdynamo.compile(_f, dynamic="x"), "dynamic"),
        (lambda: npdynamo.set_logs("nonsense"), "unknown log topic"),
        (lambda: npdynamo.set_logs(nonsense=True), "unknown log topic"),
        (lambda: npdynamo.explain(42), "Python function"),
        (lambda: npdynamo.explain(np.add), "Python function"),
        (lambda: npdynamo.compile(_f, backend="nope"), "unknown backend"),
    ],
)
def test_mistakes_are_typed_and_name_the_callers_line(call, words):
    with pytest.raises(npdynamo.NpdynamoError) as info:
        call()
    message = str(info.value)
    assert words in message
    assert HERE in message  # the user's file (this test), with a line number after it
    assert message.split(HERE, 1)[1].startswith(":")


def test_invalid_argument_is_also_the_builtin_error_python_code_expects():
    with pytest.raises(TypeError):
        npdynamo.compile(_f, fullgraph="yes")
    with pytest.raises(ValueError):
        npdynamo.set_logs("nonsense")


def test_register_backend_refuses_to_replace_a_name_without_override():
    eager = registry.lookup_backend("eager")

    def mine(gm, example_inputs):
        return gm.forward

    with pytest.raises(npdynamo.InvalidBackend, match="already registered"):
        npdynamo.register_backend("eager", mine)
    assert registry.lookup_backend("eager") is eager  # nothing replaced
    try:
        assert npdynamo.register_backend("eager", mine, override=True) is mine
        assert registry.lookup_backend("eager") is mine
    finally:
        npdynamo.register_backend("eager", eager, override=True)
    npdynamo.register_backend("eager", eager)  # the same function again: allowed


def test_register_backend_refuses_a_non_callable():
    with pytest.raises(npdynamo.InvalidBackend, match="callable"):
        npdynamo.register_backend("broken_backend_name", 42)
    assert "broken_backend_name" not in npdynamo.list_backends()


def _warning_classes_in_the_package() -> set[type]:
    """Every Warning subclass a module of npdynamo defines."""
    import importlib
    import pkgutil

    found = set()
    for info in pkgutil.walk_packages(npdynamo.__path__, "npdynamo."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        found |= {v for v in vars(module).values()
                  if isinstance(v, type) and issubclass(v, Warning) and v.__module__.startswith(
                      "npdynamo")}
    return found


def test_every_warning_npdynamo_defines_is_public_and_one_root_filters_them():
    classes = _warning_classes_in_the_package()
    assert {c.__name__ for c in classes} <= set(npdynamo.__all__)
    for cls in classes:
        assert getattr(npdynamo, cls.__name__) is cls
        assert issubclass(cls, npdynamo.NpdynamoWarning) and issubclass(cls, UserWarning)


def _raises_inside(gm, example_inputs):
    raise RuntimeError("no compiler here")


def _scaled(x):
    return x * 2.0 + 1.0


def _fresh_scaled():
    """``_scaled`` with a code object of its own: compiled entries are kept per code object."""
    return types.FunctionType(_scaled.__code__.replace(), globals())


@pytest.mark.parametrize("category", ["BackendFallbackWarning", "NpdynamoWarning"])
def test_a_filter_on_the_public_class_silences_the_fallback_and_the_result_is_numpys(category):
    x = np.arange(4.0)
    compiled = npdynamo.compile(_fresh_scaled(), backend=_raises_inside)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=getattr(npdynamo, category))
        got = compiled(x)
    assert caught == []
    np.testing.assert_array_equal(got, _scaled(x))
    with pytest.warns(npdynamo.BackendFallbackWarning):  # unfiltered, it is seen
        npdynamo.compile(_fresh_scaled(), backend=_raises_inside)(x)
