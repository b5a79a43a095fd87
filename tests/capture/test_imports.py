"""``import`` statements inside a captured function: an import of a module already in
``sys.modules`` is a constant under guards (the module found there is the same object, and
``builtins.__import__`` is the builtin); any import that would run code breaks the graph. Each
case runs plain and compiled on copies of the same inputs, with exact graph/break counts."""

from __future__ import annotations

import builtins
import sys
import types

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def import_numpy_inside(values):
    import numpy as np

    diff = np.concatenate(([1], np.diff(values)))
    return diff * 2, np.sum(diff)


def import_forms(x):
    import math
    import os.path  # fromlist None, dotted: binds os
    import os.path as osp  # IMPORT_NAME then IMPORT_FROM
    from math import pi, sqrt

    return x * math.e + sqrt(pi), os.sep, osp.sep


def import_in_loop(x, n):
    total = x * 0.0
    for i in range(n):
        import math

        total = total + math.pi * i
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_import_of_an_imported_module_is_one_graph(backend):
    values = np.sort(np.random.default_rng(0).integers(0, 40, size=200)).astype(np.uint32)
    check_same(import_numpy_inside, values, backend=backend, graphs=1, breaks=0)
    check_same(import_forms, np.arange(5.0), backend=backend, graphs=1, breaks=0)
    check_same(import_in_loop, np.arange(4.0), 3, backend=backend, graphs=1, breaks=0)


def _fake_module(name: str, scale: float, package: bool = False) -> types.ModuleType:
    module = types.ModuleType(name)
    module.SCALE = scale
    if package:
        module.__path__ = []
    return module


def import_fake(x):
    import npd_k25_fake

    return x * npd_k25_fake.SCALE


def from_fake(x):
    from npd_k25_fake import SCALE

    return x * SCALE


@pytest.mark.parametrize("fn", [import_fake, from_fake])
def test_a_replaced_module_in_sys_modules_is_seen(fn, monkeypatch):
    monkeypatch.setitem(sys.modules, "npd_k25_fake", _fake_module("npd_k25_fake", 2.0))
    compiled = npdynamo.compile(fn)
    x = np.arange(3.0)
    np.testing.assert_array_equal(compiled(x), x * 2.0)
    monkeypatch.setitem(sys.modules, "npd_k25_fake", _fake_module("npd_k25_fake", 3.0))
    np.testing.assert_array_equal(compiled(x), x * 3.0)  # the guard fails: a new capture
    check_same(fn, x, compiled=compiled, graphs=2, breaks=0)
    monkeypatch.delitem(sys.modules, "npd_k25_fake")
    with pytest.raises(ModuleNotFoundError):  # importing runs code now: as in Python
        compiled(x)


def import_missing(x):
    y = x + 1
    import npd_k25_no_such_module  # noqa: F401

    return y


def test_a_module_not_imported_breaks():
    # the import is a break: the first part is a graph, the import raises in Python as plain
    check_same(import_missing, np.arange(3.0), graphs=1, breaks=1)


def from_package(x):
    y = x + 1
    from npd_k25_fake import submodule_not_loaded  # a package imports the submodule

    return y * submodule_not_loaded.SCALE


def test_from_package_of_a_name_it_does_not_hold_breaks(monkeypatch):
    monkeypatch.setitem(sys.modules, "npd_k25_fake", _fake_module("npd_k25_fake", 2.0, True))
    monkeypatch.setitem(sys.modules, "npd_k25_fake.submodule_not_loaded",
                        _fake_module("npd_k25_fake.submodule_not_loaded", 5.0))
    # the import breaks; the resume function starts at IMPORT_FROM, whose name is found only
    # through the fallback to sys.modules: a second break
    check_same(from_package, np.arange(3.0), graphs=2, breaks=2)


def test_a_replaced_import_function_is_called_as_in_python(monkeypatch):
    calls = []
    original = builtins.__import__

    def counting(*args, **kwargs):
        if args[0] == "npd_k25_fake":  # not the imports npdynamo's own capture makes
            calls.append(args[0])
        return original(*args, **kwargs)

    x = np.arange(3.0)
    compiled = npdynamo.compile(import_fake)
    monkeypatch.setitem(sys.modules, "npd_k25_fake", _fake_module("npd_k25_fake", 2.0))
    compiled(x)  # compiled with the builtin __import__
    monkeypatch.setattr(builtins, "__import__", counting)
    np.testing.assert_array_equal(compiled(x), x * 2.0)
    assert calls == ["npd_k25_fake"]  # the guard failed: Python's import ran, and called it
    calls.clear()
    # the entry of the builtin __import__, and one that breaks at the import (and its resume)
    check_same(import_fake, x, graphs=2, breaks=1)
    assert calls == ["npd_k25_fake"] * 4  # plain and compiled, two calls each
