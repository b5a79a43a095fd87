"""``np.errstate`` under the numba backend: NumPy's raises and warnings, never silently inf.

Kernels never report floating-point errors, so under a non-default error state a program runs
its graph on the eager backend (NumPy raises or warns itself); under the default state and under
``all='ignore'`` the kernels run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import errstate, numba_backend
from tests.differential import check_same


def scaled_ratio(x, y):
    return (x / y) * 2.0 + 1.0


@pytest.fixture(autouse=True)
def program_only(monkeypatch):
    """These tests are about the numba program's error handling: no tuner in front of it (it
    could pick the eager graph, which warns as NumPy does under the default state)."""
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")


def _inputs():
    return np.array([1.0, -2.0, 3.0, 0.0]), np.array([2.0, 0.0, 0.5, 0.0])


def _compiled():
    """The compiled function and the numba program of its graph."""
    programs = []

    def backend(gm, example_inputs):
        programs.append(numba_backend(gm, example_inputs))
        return programs[-1]

    fn = npdynamo.compile(scaled_ratio, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fn(*_inputs())  # compiled under the default state: the kernels exist
    (program,) = programs
    assert program.report.kernels == 1 and not program.report.fell_back
    return fn, program


def test_raise_raises_floating_point_error_like_numpy():
    fn, program = _compiled()
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            scaled_ratio(*_inputs())
        check_same(scaled_ratio, *_inputs(), compiled=fn, graphs=1, breaks=0)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            fn(*_inputs())


def test_warn_warns_the_same_as_numpy():
    fn, program = _compiled()
    caught = []
    for f in (scaled_ratio, fn):
        with np.errstate(all="warn"), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            result = f(*_inputs())
        caught.append((result, [(type(m.message), str(m.message)) for m in w]))
    (want, want_w), (got, got_w) = caught
    assert want_w and got_w == want_w
    np.testing.assert_array_equal(got, want)


def test_default_and_ignore_give_inf_silently_from_the_kernels():
    fn, program = _compiled()

    def no_eager(*args):
        raise AssertionError("the graph ran on the eager backend")

    program.run.__globals__["_eager"] = no_eager
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the kernels report nothing
        got = fn(*_inputs())
    with np.errstate(all="ignore"):
        want = scaled_ratio(*_inputs())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.array_equal(fn(*_inputs()), want, equal_nan=True)
    assert np.isinf(got[1]) and np.isnan(got[3])
    np.testing.assert_array_equal(got, want)


def test_kernels_may_run_only_under_default_or_all_ignore():
    assert errstate.current() is errstate.DEFAULT and errstate.kernels_may_run()
    with np.errstate(all="ignore"):
        assert errstate.current() is not errstate.DEFAULT and errstate.kernels_may_run()
    for state in ({"all": "raise"}, {"all": "warn"}, {"over": "raise"}, {"under": "warn"},
                  {"invalid": "ignore"}):
        with np.errstate(**state):
            assert not errstate.kernels_may_run(), state
    assert errstate.kernels_may_run()


def test_a_state_equal_to_the_default_runs_the_kernels():
    """``with np.errstate():`` makes a new state object with the default values: the kernels
    still run (no eager fallback), and the answer is recomputed for every new state object."""
    fn, program = _compiled()
    with np.errstate():
        assert errstate.current() is not errstate.DEFAULT and errstate.kernels_may_run()
        with np.errstate(divide="raise"):
            assert not errstate.kernels_may_run()
            with pytest.raises(FloatingPointError):
                fn(*_inputs())
        assert errstate.kernels_may_run()

        def no_eager(*args):
            raise AssertionError("the graph ran on the eager backend")

        program.run.__globals__["_eager"] = no_eager
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = fn(*_inputs())
    assert np.isinf(got[1]) and np.isnan(got[3])


def test_a_state_set_by_seterr_is_seen_at_once():
    """``np.seterr`` replaces the state object, so the remembered answer never goes stale."""
    old = np.seterr(all="ignore")
    try:
        assert errstate.kernels_may_run()
        np.seterr(over="raise")
        assert not errstate.kernels_may_run()
        np.seterr(all="ignore")
        assert errstate.kernels_may_run()
    finally:
        np.seterr(**old)
    assert errstate.kernels_may_run()
