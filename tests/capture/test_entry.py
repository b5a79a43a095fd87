"""``capture/entry.py``: the entries a capture produces. The generated runner calls the compiled
graph with its inputs and returns the rebuilt value; a graph that raises at run time has written
nothing and the frame reruns in Python (the argument written in place is written once, the
exception is Python's); a frame whose capture found it would raise is a Python entry; the guards
check and name a miss; the report is the backend's."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.backends.numba.report import NumbaReport
from npdynamo.capture.entry import CompiledEntry
from npdynamo.capture.hooks.cache import compiled_entries
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def affine(x, a):
    return x * a + 1.0


def test_the_runner_calls_the_graph_on_its_inputs_and_falls_back_to_python():
    compiled = check_same(affine, np.ones(3), 2.0, graphs=1, breaks=0)
    (entry,) = compiled_entries(compiled)
    assert type(entry) is CompiledEntry and entry.code is affine.__code__
    lines = entry.run_source.splitlines()
    assert lines[0] == "def run(a0, a1):"
    # a (a constant under a guard) is not a graph input; the graph's failure reruns Python
    assert lines[2].strip().startswith("out = COMPILED") and lines[2].endswith("(a0)")
    assert lines[4].strip().startswith("return PYTHON") and lines[4].endswith("(a0, a1)")
    assert lines[-1] == "    return out[0]"
    assert entry.serve(lambda run: None) is entry.run  # no tier waits: the runner itself


def test_guards_check_and_name_a_miss():
    compiled = check_same(affine, np.ones(3), 2.0, graphs=1, breaks=0)
    (entry,) = compiled_entries(compiled)
    assert entry.check(np.zeros(3), 2.0)
    assert not entry.check(np.ones(3, np.float32), 2.0)
    assert entry.miss_reason(np.ones(3, np.float32), 2.0).startswith(
        "x.dtype: expected float64, got float32")


def bump_then_take(x, idx):
    x += 1.0
    return x[idx] * 2.0


def check_graph_failure_reruns(fn, backend: str, breaks: int) -> None:
    """``fn(x, idx)`` bumps ``x`` in place, then indexes it: with index 5, found out of range
    only when the graph runs, ``x`` is bumped once (by the rerun in Python), not twice, and the
    IndexError is NumPy's."""
    compiled = check_same(fn, np.zeros(3), np.array([0, 2]), backend=backend, graphs=1,
                          breaks=breaks)
    check_same(fn, np.zeros(3), np.array([0, 5]), compiled=compiled, graphs=1, breaks=breaks)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graph_that_raises_reruns_the_frame_in_python(backend):
    check_graph_failure_reruns(bump_then_take, backend, breaks=0)


def raises_at_capture(a, b):
    return a + b


def test_a_frame_that_would_raise_is_a_python_entry():
    compiled = check_same(raises_at_capture, np.ones(2), np.ones(3), graphs=0, breaks=0)
    (entry,) = compiled_entries(compiled)
    assert entry.runs_python.startswith("ValueError")
    assert entry.graph_module is None and entry.report is None
    assert not entry.check(np.ones(2), np.ones(2))  # only these shapes run Python


@pytest.mark.parametrize("backend, report", [("eager", type(None)), ("numba", NumbaReport)])
def test_the_report_is_the_backends(backend, report):
    compiled = check_same(affine, np.ones(3), 2.0, backend=backend, graphs=1, breaks=0)
    (entry,) = compiled_entries(compiled)
    assert type(entry.report) is report
    assert entry.report is entry.compiled.report
