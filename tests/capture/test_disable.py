"""``capture/hooks/disable.py``: ``disable`` marks a wrapper, its function and its code;
``is_disabled`` answers for each without running user code; capture is suspended on this thread
only, inside ``suspend_capture()`` and while a disabled function runs. A disabled call inside a
compiled caller (the graph break at that call) is tested end to end in
``test_disable_calls.py``, the decorator's handling of disabled functions in ``test_hooks.py``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from npdynamo.capture.hooks.disable import (
    capture_suspended,
    disable,
    is_disabled,
    suspend_capture,
)
from tests.differential import check_same


def test_suspension_nests_and_is_per_thread():
    assert not capture_suspended()
    seen = []
    with suspend_capture():
        with suspend_capture():
            assert capture_suspended()
        assert capture_suspended()
        other = threading.Thread(target=lambda: seen.append(capture_suspended()))
        other.start()
        other.join()
    assert not capture_suspended()
    assert seen == [False]  # another thread still captures


def test_a_disabled_call_suspends_capture_while_it_runs_even_when_it_raises():
    def probe():
        return capture_suspended()

    def fails():
        raise KeyError("x")

    assert disable(probe)() is True
    with pytest.raises(KeyError):
        disable(fails)()
    assert not capture_suspended()  # the depth came back down


class Unhashable:
    __hash__ = None

    def __call__(self):
        return 1


class LoudHash:
    def __hash__(self):  # user code: is_disabled must never call it
        raise AssertionError("hashed")


def test_is_disabled_answers_for_methods_code_and_foreign_objects():
    class Model:
        def step(self, x):
            return x

    off = disable(Model.step)
    model = Model()
    assert is_disabled(Model.step) and is_disabled(model.step) and is_disabled(off)
    assert is_disabled(Model.step.__code__)
    assert not is_disabled(Model.__init__) and not is_disabled(len)
    assert not is_disabled(Unhashable()) and not is_disabled(LoudHash())
    # a code object equal to a disabled one but another object is not disabled
    code = Model.step.__code__
    assert not is_disabled(code.replace())
    bound = disable(model.step)
    assert bound(3) == 3
    with pytest.raises(TypeError, match="expects a callable"):
        disable("step")


def helper(x):
    return float(np.sum(x))


OFF_HELPER = disable(helper)


def calls_off_helper(x):
    y = np.sin(x) + 1
    return np.cos(y) * OFF_HELPER(y)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_disabled_call_is_one_break_between_two_graphs(backend):
    check_same(calls_off_helper, np.arange(4.0), backend=backend, graphs=2, breaks=1)
