"""``capture/hooks/compiled_function.py``: the object ``compile`` returns calls its dispatcher
directly, shows the dispatcher's signature and code, binds as a method, copies as itself and
pickles as a reference or as "compile again". Pickling across processes and with cloudpickle is
tested end to end in ``test_pickle.py``, signatures and binding through ``compile`` in
``test_hooks.py``."""

from __future__ import annotations

import copy
import functools
import inspect
import pickle

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.hooks.compiled_function import (
    CompiledFunction,
    Remake,
    dispatcher_of,
    make_compiled_function,
)
from tests.differential import check_same


def user(x, scale=2.0, *, shift=1):
    return x * scale + shift


def again(fn, *settings):
    return ("again", fn, settings)


def pickled(payload, *settings):
    return ("pickled", payload, settings)


REMAKE = Remake(again, pickled)


def dispatcher(x, scale=2.0, *, shift=1):
    return ("dispatched", x, scale, shift)


def test_a_call_is_the_dispatchers_and_it_looks_like_the_function():
    fast = make_compiled_function(dispatcher, user, ("eager", False, None), REMAKE)
    functools.update_wrapper(fast, user)  # as the decorator does: name, docstring, module
    assert isinstance(fast, CompiledFunction) and type(fast) is not CompiledFunction
    assert fast(3, shift=5) == ("dispatched", 3, 2.0, 5)
    assert type(fast).__call__ is dispatcher  # no Python frame of our own between
    assert str(inspect.signature(fast)) == "(x, scale=2.0, *, shift=1)"
    assert fast.__code__ is dispatcher.__code__
    assert fast.__defaults__ == (2.0,) and fast.__kwdefaults__ == {"shift": 1}
    assert fast.__wrapped__ is user
    assert dispatcher_of(fast) is dispatcher and dispatcher_of(user) is None
    assert copy.copy(fast) is fast and copy.deepcopy([fast])[0] is fast
    assert repr(fast).startswith("<npdynamo compiled function user at 0x")


def test_it_binds_as_a_method():
    fast = make_compiled_function(dispatcher, user, ("eager", False, None), REMAKE)

    class Model:
        step = fast

    model = Model()
    assert Model.step is fast
    assert model.step(1.5) == ("dispatched", model, 1.5, 1)
    assert dispatcher_of(model.step) is dispatcher


def test_it_pickles_as_compile_again_with_its_settings():
    fast = make_compiled_function(dispatcher, user, ("numba", True, None), REMAKE)
    fast.__module__, fast.__qualname__ = user.__module__, "not_a_module_name"
    remake, args = fast.__reduce__()
    assert remake is again and args == (user, "numba", True, None)


MODULE_LEVEL = npdynamo.compile(user)


def test_one_found_at_its_module_name_pickles_as_that_reference():
    MODULE_LEVEL.__qualname__ = "MODULE_LEVEL"
    try:
        assert MODULE_LEVEL.__reduce__() == "MODULE_LEVEL"
        assert pickle.loads(pickle.dumps(MODULE_LEVEL)) is MODULE_LEVEL
    finally:
        MODULE_LEVEL.__qualname__ = "user"
    back = pickle.loads(pickle.dumps(npdynamo.compile(user, backend="numba")))
    assert isinstance(back, CompiledFunction) and back.__wrapped__ is user
    assert back._npdynamo_settings == ("numba", False, None)


class Affine:
    def __init__(self):
        self.w = np.arange(3.0)

    @npdynamo.compile
    def forward(self, x):
        return self.w * x + 1


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_compiled_functions_and_methods_match_python(backend):
    check_same(user, np.arange(3.0), 0.5, backend=backend, graphs=1, breaks=0, shift=2)
    model = Affine()
    assert np.array_equal(model.forward(np.ones(3)), model.w + 1)
    found = npdynamo.inspect(Affine.forward)
    assert len(found.graphs) == 1
