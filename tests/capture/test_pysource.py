"""``capture/pysource.py``: what ``literal`` returns for real values (source text only where its
repr reads back as an equal value of the same type, else None), numbered ``Namespace`` names,
and ``make_function`` compiling a source once with its lines in ``linecache``. The generated
guard functions built on it are tested in ``test_guard.py``."""

from __future__ import annotations

import gc
import inspect
import linecache
import math

import numpy as np
import pytest

from npdynamo.capture.pysource import Namespace, literal, make_function
from npdynamo.generated import evaluate
from tests.differential import check_same


@pytest.mark.parametrize("value", [
    None, Ellipsis, True, False, 0, -7, 10**30, "a'b\"c\n", 1.5, -0.0, 1e300,
    (), (1,), (1, (2.5, "x"), None), (True, ...),
])
def test_a_literal_reads_back_as_the_same_value_and_type(value):
    text = literal(value)
    assert text is not None
    back = evaluate(text, {})  # as generated code reads it
    assert type(back) is type(value) and back == value
    if type(value) is float:
        assert math.copysign(1, back) == math.copysign(1, value)  # -0.0 stays negative


@pytest.mark.parametrize("value", [
    float("nan"), float("inf"), -float("inf"), 1 << 20_000, np.float64(1.0), np.int64(3),
    [1], {1: 2}, (1, [2]), (1.0, float("nan")), 1j, b"x", object(),
], ids=lambda value: type(value).__name__)  # (the repr of a huge int would raise)
def test_values_without_a_faithful_literal_are_none(value):
    assert literal(value) is None


def test_a_numbered_namespace_gives_one_name_per_object():
    ns = Namespace({"G": {}})
    obj = object()
    first = ns.bind(obj, "K")
    assert ns.bind(obj, "K") == first and ns.values[first] is obj
    assert ns.bind(object(), "K") != first
    assert first.startswith("K") and first[1:].isdigit()  # short names: K1, K2, ...
    assert ns.values["G"] == {}  # the base is kept


def test_make_function_compiles_once_with_its_lines_in_linecache():
    ns = Namespace()
    scale = ns.bind(2.5, "K")
    source = f"def scaled(a0):\n    return a0 * {scale}\n"
    fn = make_function(source, "scaled", ns, "test")
    assert fn(2) == 5.0
    assert fn.__npdynamo_source__ == source
    filename = fn.__code__.co_filename
    assert linecache.getline(filename, 2).strip() == f"return a0 * {scale}"
    assert inspect.getsource(fn) == source
    del fn
    gc.collect()
    assert linecache.getline(filename, 2) == ""  # gone with the function


def constant_args(x):
    return x * 2.5 + len((1, "a", None))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_guards_on_literal_constants_hold_and_miss(backend):
    compiled = check_same(constant_args, np.arange(3.0), backend=backend, graphs=1, breaks=0)
    check_same(constant_args, np.arange(3), compiled=compiled, graphs=2, breaks=0)
