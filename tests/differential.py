"""Differential testing: run a function plain and compiled on copies of the same inputs and compare
return values (type, dtype, shape, values), every argument's state afterwards, and exceptions."""

from __future__ import annotations

import contextlib
import copy
import io
import types
import warnings
from dataclasses import dataclass

import numpy as np

import npdynamo


def assert_same_value(expected, got, path: str = "result") -> None:
    """Bitwise comparison of nested results: same Python types, dtypes, shapes and values."""
    assert type(got) is type(expected), f"{path}: type {type(got)} != {type(expected)}"
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype, f"{path}: dtype {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, f"{path}: shape {got.shape} != {expected.shape}"
        assert np.array_equal(got, expected, equal_nan=expected.dtype.kind in "fc"), (
            f"{path}: values differ\n{got}\n{expected}"
        )
    elif isinstance(expected, np.generic):
        assert got.dtype == expected.dtype, f"{path}: dtype {got.dtype} != {expected.dtype}"
        assert (got == expected) or (got != got and expected != expected), (
            f"{path}: {got!r} != {expected!r}"
        )
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), f"{path}: length {len(got)} != {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same_value(e, g, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert list(got) == list(expected), f"{path}: keys {list(got)} != {list(expected)}"
        for k in expected:
            assert_same_value(expected[k], got[k], f"{path}[{k!r}]")
    elif isinstance(expected, types.FunctionType):
        assert got.__code__ is expected.__code__, f"{path}: a different function"
        cells = [c.cell_contents for c in expected.__closure__ or ()]
        got_cells = [c.cell_contents for c in got.__closure__ or ()]
        assert_same_value(cells, got_cells, f"{path}.__closure__")
    elif getattr(type(expected), "__slots__", None) and not hasattr(expected, "__dict__"):
        slots = type(expected).__slots__
        slots = (slots,) if isinstance(slots, str) else slots
        state = [getattr(expected, s, None) for s in slots]
        assert_same_value(state, [getattr(got, s, None) for s in slots], f"{path}.<slots>")
    elif isinstance(expected, float) and expected != expected:
        assert got != got, f"{path}: {got!r} is not nan"
    elif hasattr(expected, "__dict__") and not isinstance(
        expected, (type, types.FunctionType, types.ModuleType)
    ):
        assert_same_value(vars(expected), vars(got), f"{path}.__dict__")
    else:
        assert got == expected, f"{path}: {got!r} != {expected!r}"


def run_plain(fn, args, kwargs):
    try:
        return fn(*args, **kwargs), None
    except Exception as exc:  # the compiled call must raise the same
        return None, exc


def run_capturing_stdout(fn, args, kwargs):
    """(result, exception, printed text) of one call."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result, exc = run_plain(fn, args, kwargs)
    return result, exc, out.getvalue()


def check_same(fn, *args, backend="eager", calls: int = 2, compiled=None, **kwargs):
    """Compare ``fn`` plain and compiled, ``calls`` times (the later calls hit the cache).

    Returns the compiled wrapper so callers can inspect it."""
    compiled = compiled or npdynamo.compile(fn, backend=backend)
    for _ in range(calls):
        run = run_both(fn, compiled, args, kwargs)
        if run.exc is None:
            assert_same_value(run.expected, run.got)
        assert_same_value(run.plain_args, run.comp_args, "args after the call")
        assert_same_value(run.plain_kwargs, run.comp_kwargs, "kwargs after the call")
    return compiled


def check_same_warnings(fn, *args, backend="eager", calls: int = 2, **kwargs):
    """``check_same``, and the ``RuntimeWarning``s each call gives (NumPy's floating-point
    reports: category and text, in order) are the plain call's."""
    compiled = npdynamo.compile(fn, backend=backend)
    for _ in range(calls):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = run_both(fn, compiled, args, kwargs, warned=caught)
        if run.exc is None:
            assert_same_value(run.expected, run.got)
        assert_same_value(run.plain_args, run.comp_args, "args after the call")
        assert run.warned[1] == run.warned[0], f"warned {run.warned[1]}, not {run.warned[0]}"
    return compiled


@dataclass
class BothRuns:
    """One call of ``fn`` and of its compiled form, each on its own deep copy of the inputs."""

    expected: object
    got: object
    exc: BaseException | None
    plain_args: tuple
    plain_kwargs: dict
    comp_args: tuple
    comp_kwargs: dict
    #: the RuntimeWarnings of the plain and of the compiled call (when recorded)
    warned: tuple = ((), ())


def run_both(fn, compiled, args: tuple, kwargs: dict, warned: list | None = None) -> BothRuns:
    """Run ``fn`` and ``compiled`` on copies of the same inputs; the same exception (type and
    message) and the same printed output are asserted here, the rest is the caller's.
    ``warned``: the list a ``catch_warnings(record=True)`` around the call fills."""
    plain_args, plain_kwargs = copy.deepcopy((args, kwargs))
    comp_args, comp_kwargs = copy.deepcopy((args, kwargs))
    expected, exc, printed = run_capturing_stdout(fn, plain_args, plain_kwargs)
    split = len(warned) if warned is not None else 0
    got, got_exc, got_printed = run_capturing_stdout(compiled, comp_args, comp_kwargs)
    if exc is not None:
        assert got_exc is not None, f"compiled call did not raise {exc!r}"
        assert type(got_exc) is type(exc), f"raised {type(got_exc)} not {type(exc)}: {got_exc}"
        assert str(got_exc) == str(exc)
    elif got_exc is not None:
        raise got_exc
    assert got_printed == printed, f"printed {got_printed!r}, expected {printed!r}"
    runtime = [(w.category.__name__, str(w.message)) if w.category is RuntimeWarning else None
               for w in warned or ()]
    return BothRuns(expected, got, exc, plain_args, plain_kwargs, comp_args, comp_kwargs,
                    (tuple(filter(None, runtime[:split])), tuple(filter(None, runtime[split:]))))


class CountingBackend:
    """A backend that records every graph it is given and runs it eagerly."""

    def __init__(self) -> None:
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def count(self) -> int:
        return len(self.graphs)

    def op_names(self, index: int = -1) -> list[str]:
        gm = self.graphs[index]
        return [
            getattr(n.target, "name", str(n.target))
            for n in gm.graph.nodes
            if n.op == "call_function"
        ]
