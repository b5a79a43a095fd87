"""``capture/compile_frame.py``: one frame becomes a whole graph, else a graph break, else plain
Python; sessions are made here with ``build_entry`` bound."""

from __future__ import annotations

import numpy as np

from npdynamo import config, graph_break
from npdynamo.capture.compile_frame import build_entry, new_session
from tests.differential import CountingBackend


def whole(x):
    return np.sin(x) + 1


def broken(x):
    y = x * 2
    graph_break()
    record(y)
    return y + 1


seen = []


def record(y):
    seen.append(float(y.sum()))


def test_a_session_carries_what_it_was_made_with():
    backend, recorded = CountingBackend(), []
    session = new_session(backend, True, False, recorder=lambda entry, fn: recorded.append(fn))
    assert (session.backend, session.fullgraph, session.dynamic) == (backend, True, False)
    assert session.build_entry is build_entry and session.compile_callee is None
    build_entry(whole, (np.ones(3),), backend=backend, context=session)
    assert recorded == [whole]


def test_a_whole_frame_is_one_graph():
    backend = CountingBackend()
    entry = build_entry(whole, (np.ones(3),), backend=backend)
    assert entry.graph_break is None and entry.runs_python is None
    assert backend.count == 1 and backend.op_names() == ["sin", "add"]
    np.testing.assert_array_equal(entry.run(np.zeros(3)), whole(np.zeros(3)))


def test_a_frame_that_breaks_runs_its_graph_then_resumes_in_its_session():
    backend = CountingBackend()
    session = new_session(backend)
    entry = build_entry(broken, (np.ones(2),), backend=backend, context=session)
    assert entry.graph_break is not None and entry.graph_break.kind == "explicit"
    assert backend.op_names() == ["multiply"]
    seen.clear()
    np.testing.assert_array_equal(entry.run(np.ones(2)), np.full(2, 3.0))
    assert seen == [4.0]
    # the code after the break was captured in the same session, on its first call
    (resume,) = session.resume_calls.values()
    assert len(resume.entries) == 1 and backend.count == 2


def test_force_python_runs_the_frame_in_python(monkeypatch):
    monkeypatch.setattr(config, "force_python", True)
    backend = CountingBackend()
    entry = build_entry(whole, (np.ones(3),), backend=backend)
    assert entry.runs_python == "npdynamo.config.force_python is set"
    assert backend.count == 0
