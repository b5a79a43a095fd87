"""``capture/calls.py``: calls and attribute reads under capture. A user function is inlined
with Python's argument binding (defaults, ``*args``, keyword-only, ``**kwargs``), and a call
Python would refuse raises Python's ``TypeError``; array methods and NumPy functions become ops;
a user object's attributes are read as Python's lookup finds them (instance dict, property,
method); a call that cannot be captured breaks with a reason naming it, and a class that
customises attribute access breaks at the read."""

from __future__ import annotations

import json

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same

BACKENDS = ["eager", "numba"]
X = np.arange(3.0)


def scaled(v, scale=2.0, *rest, shift=0.0, **extra):
    return v * scale + shift + sum(rest) + extra.get("bias", 0.0)


def positional_only(v, w, /):
    return v - w


def inlined(x):
    return (scaled(x), scaled(x, 3.0, 1.0, 2.0, shift=1.0, bias=0.5),
            scaled(*(x, 4.0), **{"shift": 2.0}), positional_only(x, 1.0),
            x.reshape(3, 1).sum(axis=0), np.clip(x, 0.5, 1.5))


class Model:
    def __init__(self) -> None:
        self.w = np.ones(3)

    @property
    def doubled(self):
        return self.w * 2.0

    def forward(self, x):
        return x @ self.w + self.doubled.sum()


def user_object(x, model):
    return model.forward(x), model.w.shape


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args", [(inlined, (X,)), (user_object, (np.ones((2, 3)), Model()))],
                         ids=["inlined", "user_object"])
def test_calls_and_attributes_in_one_graph(fn, args, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=0)
    # inlined: the callee's ops are the frame's own, no call op remains
    assert "call" not in " ".join(npdynamo.inspect(compiled).graphs[0].ops)


def bad_binding(x):
    return positional_only(x, w=1.0)


def missing_attribute(x, model):
    return x * model.nothere


@pytest.mark.parametrize("fn, args, error", [
    (bad_binding, (X,), "TypeError: positional_only() got "),
    (missing_attribute, (X, Model()), "AttributeError: 'Model' object has no attribute"),
], ids=["bad_binding", "missing_attribute"])
def test_what_python_refuses_raises_pythons_error(fn, args, error):
    compiled = check_same(fn, *args, graphs=0, breaks=0)
    (entry,) = npdynamo.inspect(compiled).entries
    assert entry.runs_python.startswith(error)


def library_call(x):
    return json.dumps(float(x.sum()))


class Dynamic:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return 1.5


def dynamic_attribute(x, obj):
    return x * obj.anything


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, reason", [
    (library_call, (X,), "dumps (json/__init__.py, library code) cannot be captured"),
    (dynamic_attribute, (X, Dynamic()), "Dynamic customises attribute access"),
], ids=["library_call", "dynamic_attribute"])
def test_what_capture_cannot_hold_breaks_with_its_reason(fn, args, reason, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=1, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    assert reason in brk.reason
