"""Warnings a compiled function emits on the user's behalf name the user's file and line, as the
plain program's do: NumPy's own warnings from a graph (``overflow encountered in exp``), from
scalar math on constants (int8 overflow), and the numba backend's fallback warning; on both
backends. Filters by module and the ``"default"`` action's once-per-line behave as for the plain
program (the user module's ``__warningregistry__``)."""

import inspect
import warnings

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import NumbaFallbackWarning, ufunc_table

BACKENDS = ["eager", "numba"]


def exp_overflow(a):
    b = a * 2
    c = np.exp(b)
    return c + 1


def int8_overflow(x):
    y = x + np.int8(100)
    return y


def divide_in_a_helper(a, b):
    return np.sqrt(_ratio(a, b))


def _ratio(a, b):
    return a / b


PROGRAMS = [
    (exp_overflow, (np.array([1000.0, 1.0]),)),
    (int8_overflow, (np.int8(100),)),
    (divide_in_a_helper, (np.array([1.0, 0.0]), np.array([0.0, 0.0]))),
]


def where(caught) -> list[tuple]:
    return [(w.filename, w.lineno, w.category, str(w.message)) for w in caught]


def record(fn, args, calls: int = 1) -> list[tuple]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            fn(*args)
    return where(caught)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_warnings_name_the_users_line(fn, args, backend):
    plain = record(fn, args)
    assert plain and all(w[0] == __file__ for w in plain)
    compiled = npdynamo.compile(fn, backend=backend)
    got = record(compiled, args)
    if backend == "eager":
        assert got == plain
    # numba's kernels do not repeat NumPy's warnings once they run (its default filter shows a
    # line's warning once); a call run by NumPy warns as the plain program does
    got += record(compiled, args, calls=3)
    assert got and set(got) <= set(plain), (got, plain)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_filter_by_module_applies_as_to_the_plain_program(backend):
    compiled = npdynamo.compile(exp_overflow, backend=backend)
    arg = np.array([1000.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
        exp_overflow(arg)
        compiled(arg)
    assert caught == []


def test_the_default_action_shows_a_line_once_across_plain_and_compiled():
    compiled = npdynamo.compile(exp_overflow)
    arg = np.array([1000.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        exp_overflow(arg)
        compiled(arg)
        compiled(arg)
    assert len(caught) == 1


def test_the_numba_fallback_warning_names_the_users_line(monkeypatch):
    # a deliberately broken table entry: numba cannot type the generated expression
    monkeypatch.setitem(ufunc_table.UFUNC_EMITTERS, "negative",
                        lambda ins, out, e: f"no_such_helper({e[0]})")

    def f(x):
        y = x + 1
        return -y * 3

    compiled = npdynamo.compile(f, backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(np.ones(4))
    fallback = [w for w in caught if w.category is NumbaFallbackWarning]
    assert len(fallback) == 1
    lines, first = inspect.getsourcelines(f)
    assert fallback[0].filename == __file__
    assert fallback[0].lineno in (first + 1, first + 2)  # a line of the graph's ops

