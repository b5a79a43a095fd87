"""The compile step: passes, the backend call and what a broken backend gets."""

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.compile import BackendFallbackWarning


def scaled(x):
    y = x * 2.0
    z = x * 2.0  # CSE merges it with y; the outputs must stay two arrays
    return y, z


def test_merged_outputs_stay_distinct_arrays():
    y, z = npdynamo.compile(scaled)(np.arange(3.0))
    np.testing.assert_array_equal(y, z)
    assert y is not z and not np.shares_memory(y, z)


def returns_a_number(gm, example_inputs):
    return 42


def test_a_backend_returning_a_non_callable_is_an_error_at_compile_time():
    compiled = npdynamo.compile(scaled, backend=returns_a_number)
    with pytest.raises(npdynamo.BackendCompilerFailed, match="returns_a_number returned int"):
        compiled(np.arange(3.0))


def raises_inside(gm, example_inputs):
    raise RuntimeError("no compiler here")


def test_a_failing_backend_falls_back_but_not_under_fullgraph():
    with pytest.warns(BackendFallbackWarning, match="raises_inside failed"):
        y, z = npdynamo.compile(scaled, backend=raises_inside)(np.arange(3.0))
    np.testing.assert_array_equal(y, np.arange(3.0) * 2.0)
    strict = npdynamo.compile(scaled, backend=raises_inside, fullgraph=True)
    with pytest.raises(npdynamo.BackendCompilerFailed, match="no compiler here") as info:
        strict(np.arange(3.0))
    assert isinstance(info.value.__cause__, RuntimeError)


def test_unused_inputs_do_not_reach_the_backend():
    seen = []

    def recording(gm, example_inputs):
        seen.append(len(example_inputs))
        return gm.forward

    def f(x, unused):
        return x + 1.0

    npdynamo.compile(f, backend=recording)(np.ones(2), np.ones(2))
    assert seen == [1]
