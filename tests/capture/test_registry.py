"""``capture/registry.py``: the tables the translator looks things up in. A handler registers only
for the Python versions it names; a builtin's handler refuses keyword arguments it does not
implement (a graph break, never a dropped argument); the modules that fill the tables have done
so once the capture package is imported. Then a builtin called with a keyword it does not take,
plain against compiled with exact graph/break counts."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import npdynamo.capture.entry  # noqa: F401 (imports every module that registers)
from npdynamo.capture import registry
from npdynamo.capture.registry import (
    BUILTINS,
    HANDLERS,
    OBJECT_METHODS,
    VALUE_CALLS,
    VALUE_METHODS,
    builtin,
    handler,
)
from tests.differential import check_same

HERE = sys.version_info[:2]


@pytest.fixture
def scratch(monkeypatch):
    """Registrations made by a test are dropped after it."""
    monkeypatch.setattr(registry, "HANDLERS", dict(HANDLERS))
    monkeypatch.setattr(registry, "BUILTINS", dict(BUILTINS))
    return registry


def test_a_handler_registers_only_for_the_versions_it_names(scratch):
    def fake(frame, ins):
        return None

    assert scratch.handler("FAKE_NOW", "FAKE_TOO", since=HERE, until=HERE)(fake) is fake
    scratch.handler("FAKE_LATER", since=(HERE[0], HERE[1] + 1))(fake)
    scratch.handler("FAKE_BEFORE", until=(HERE[0], HERE[1] - 1))(fake)
    assert scratch.HANDLERS["FAKE_NOW"] is fake and scratch.HANDLERS["FAKE_TOO"] is fake
    assert "FAKE_LATER" not in scratch.HANDLERS and "FAKE_BEFORE" not in scratch.HANDLERS


class Refused(Exception):
    pass


class FakeFrame:
    def unsupported(self, why):
        return Refused(why)


def test_a_builtin_refuses_keywords_it_does_not_implement(scratch):
    def target(x, *, fast=False, slow=False):
        return x

    seen = []
    scratch.builtin(target, keywords=("fast",))(
        lambda frame, fn, args, kwargs: seen.append((fn, args, kwargs)) or "handled")
    checked = scratch.BUILTINS[target]
    assert checked(FakeFrame(), target, [1], {"fast": True}) == "handled"
    assert seen == [(target, [1], {"fast": True})]
    with pytest.raises(Refused, match=r"target\(\) with the keyword argument slow="):
        checked(FakeFrame(), target, [1], {"slow": True})
    scratch.builtin(abs, keywords=None)(lambda frame, fn, args, kwargs: "any")
    assert scratch.BUILTINS[abs](FakeFrame(), abs, [], {"whatever": 1}) == "any"


def test_the_tables_are_filled_once_capture_is_imported():
    assert {"LOAD_FAST", "BINARY_OP", "CALL", "RETURN_GENERATOR"} <= set(HANDLERS)
    assert all(callable(h) for h in HANDLERS.values())
    assert {len, range, zip, sorted, np.random.normal} <= set(BUILTINS)
    assert np.random.Generator in OBJECT_METHODS
    assert VALUE_CALLS and VALUE_METHODS
    for names, call in VALUE_METHODS.values():
        assert isinstance(names, frozenset) and callable(call)
    assert builtin is registry.builtin and handler is registry.handler


def sorts_by_key(x, items):
    y = x * 2
    order = sorted(items, key=abs)  # sorted's handler takes reverse= only: a break here
    return y + order[0]


def sorts_reversed(x, items):
    return x * sorted(items, reverse=True)[0]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_keyword_a_builtin_does_not_take_breaks(backend):
    check_same(sorts_reversed, np.arange(3.0), [2.0, -5.0], backend=backend, graphs=1, breaks=0)
    check_same(sorts_by_key, np.arange(3.0), [2.0, -5.0], backend=backend, graphs=2, breaks=1)
