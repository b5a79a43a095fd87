"""``capture/hooks/decorator.py``: ``compile_with`` compiles functions, methods, staticmethods and
classmethods in the session it is given, starts from the user's function when given a compiled
one, leaves disabled functions alone, and refuses anything without bytecode with a message that
says what to do. The options of ``compile`` and calls through the decorator are tested end to end
in ``test_hooks.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.api import REMAKE, make_session
from npdynamo.backends import lookup_backend
from npdynamo.capture.hooks.compiled_function import CompiledFunction
from npdynamo.capture.hooks.decorator import NotCompilable, compile_with
from npdynamo.capture.hooks.disable import disable
from npdynamo.errors import NpdynamoError
from tests.differential import assert_compiled, check_same

SETTINGS = ("eager", False, None)


def session():
    return make_session(lookup_backend("eager"))


def affine(x, w=2.0):
    return x * w + 1


def test_a_function_compiles_in_the_session_it_is_given():
    fast = compile_with(affine, session(), SETTINGS, REMAKE)
    assert isinstance(fast, CompiledFunction) and fast.__wrapped__ is affine
    assert fast.__name__ == "affine" and fast.__doc__ == affine.__doc__
    assert np.array_equal(fast(np.arange(3.0)), affine(np.arange(3.0)))
    assert_compiled(fast, graphs=1, breaks=0)
    again = compile_with(fast, session(), SETTINGS, REMAKE)  # from the user's function
    assert again is not fast and again.__wrapped__ is affine


class Model:
    w = 3.0

    def forward(self, x):
        return x * self.w

    @staticmethod
    def helper(x):
        return x - 1

    @classmethod
    def build(cls, x):
        return x * cls.w


def test_methods_staticmethods_and_classmethods_keep_their_kind():
    s = session()
    static = compile_with(Model.__dict__["helper"], s, SETTINGS, REMAKE)
    klass = compile_with(Model.__dict__["build"], s, SETTINGS, REMAKE)
    assert isinstance(static, staticmethod) and isinstance(klass, classmethod)
    model = Model()
    bound = compile_with(model.forward, s, SETTINGS, REMAKE)
    assert bound.__self__ is model and isinstance(bound.__func__, CompiledFunction)
    x = np.arange(3.0)
    assert np.array_equal(bound(x), x * 3.0)
    assert np.array_equal(static.__func__(x), x - 1)
    assert np.array_equal(klass.__get__(None, Model)(x), x * 3.0)


def shift(x):
    return x + 3


def test_disabled_functions_come_back_as_they_are():
    # (a function of its own: disabling marks its code for the rest of the process, and a test
    # that runs after this one in the worker compiles ``affine``)
    off = disable(shift)
    assert compile_with(off, session(), SETTINGS, REMAKE) is off
    assert compile_with(shift, session(), SETTINGS, REMAKE) is shift


@pytest.mark.parametrize("obj, says", [
    ("numba", "pass the backend by keyword: @npdynamo.compile(backend='numba')"),
    (Model, "cannot compile the class Model: compile one of its methods"),
    (len, "Call len from a Python function and compile that function"),
    (np.add, "'add' (of type ufunc)"),
])
def test_what_has_no_bytecode_is_refused_clearly(obj, says):
    with pytest.raises(NotCompilable) as info:
        compile_with(obj, session(), SETTINGS, REMAKE)
    assert isinstance(info.value, NpdynamoError) and isinstance(info.value, TypeError)
    assert says in str(info.value)


def two_steps(x, w):
    h = np.tanh(x * w)
    return h.sum() / h.size


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_decorated_functions_match_python(backend):
    check_same(two_steps, np.linspace(0, 1, 5), 0.5, backend=backend, graphs=1, breaks=0)
