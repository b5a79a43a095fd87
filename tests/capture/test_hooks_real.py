"""The frame hooks with the real translator: compiled calls match plain calls, misses recompile."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from npdynamo import config
from npdynamo.api import compile, enable, reset
from npdynamo.capture.hooks import RecompileLimitWarning, compiled_entries, recompile_reasons
from tests.differential import CountingBackend, assert_same_value


@pytest.fixture(autouse=True)
def fresh_caches():
    reset()
    yield
    reset()


def affine(x, scale, *, shift=1.0):
    return x * scale + shift


def with_varargs(x, *factors, **offsets):
    out = x
    for f in factors:
        out = out * f
    return out + offsets.get("bias", 0.0)


def test_decorated_function_matches_plain_and_reuses_its_entry():
    backend = CountingBackend()
    compiled = compile(affine, backend=backend)
    x = np.arange(6.0).reshape(2, 3)
    for scale in (2.0, 2.0):
        assert_same_value(affine(x, scale), compiled(x, scale))
    assert_same_value(affine(x, 2.0, shift=-3.0), compiled(x, 2.0, shift=-3.0))
    assert backend.count >= 1
    assert 1 <= len(compiled_entries(compiled)) <= 2


def test_shape_change_recompiles_with_a_reason():
    compiled = compile(affine)
    compiled(np.ones(3), 2.0)
    result = compiled(np.ones(5), 2.0)
    assert_same_value(affine(np.ones(5), 2.0), result)
    reasons = recompile_reasons(compiled)
    assert len(reasons) == 1
    assert "shape" in reasons[0] and "3" in reasons[0] and "5" in reasons[0]


def test_varargs_and_kwargs_match_plain():
    compiled = compile(with_varargs)
    x = np.linspace(0.0, 1.0, 4)
    assert_same_value(with_varargs(x, 2.0, 3.0, bias=1.0), compiled(x, 2.0, 3.0, bias=1.0))
    assert_same_value(with_varargs(x), compiled(x))


def test_limit_falls_back_to_python_with_same_results(monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 2)
    monkeypatch.setattr(config, "automatic_dynamic_shapes", False)
    compiled = compile(affine)
    with pytest.warns(RecompileLimitWarning, match="affine"):
        for n in range(2, 6):
            x = np.ones(n)
            assert_same_value(affine(x, 2.0), compiled(x, 2.0))
    assert len(compiled_entries(compiled)) == 2


def test_region_compiles_the_second_call_with_same_results():
    backend = CountingBackend()
    x = np.arange(4.0)
    with enable(backend=backend):
        first = affine(x, 3.0)
        second = affine(x, 3.0)
    assert backend.count >= 1
    assert_same_value(first, second)
    assert_same_value(first, affine(x, 3.0))
    assert len(compiled_entries(affine)) >= 1
    if sys.version_info >= (3, 12):
        assert sys.monitoring.get_tool(sys.monitoring.OPTIMIZER_ID) is None
    else:
        assert sys.gettrace() is None
