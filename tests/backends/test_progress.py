"""Progress of long compiles on stderr (``npdynamo.progress``): shown past the threshold (forced
to 0 s here), off with ``NPDYNAMO_PROGRESS=0``, silent for quick compiles."""

from __future__ import annotations

import time

import numpy as np
import pytest

import npdynamo
from npdynamo import progress


@pytest.fixture(autouse=True)
def _unrolled(monkeypatch):
    # a long unrolled loop is the long compile shown here (formed, it would be one small graph)
    monkeypatch.setattr(npdynamo.config, "capture_for_loops", False)


def unrolled(x, y):
    for _ in range(100):
        x = x * 0.5 + y
    return x


def _compile_and_run(backend):
    fn = npdynamo.compile(unrolled, backend=backend)
    x, y = np.linspace(0.0, 1.0, 16), np.linspace(1.0, 2.0, 16)
    np.testing.assert_allclose(fn(x, y), unrolled(x, y))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_progress_is_shown_past_the_threshold(backend, monkeypatch, capsys):
    monkeypatch.setenv("NPDYNAMO_PROGRESS_AFTER", "0")
    monkeypatch.delenv("NPDYNAMO_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)  # every update prints a line
    _compile_and_run(backend)
    err = capsys.readouterr().err
    assert "npdynamo: compiling unrolled (test_progress.py:" in err
    assert "graph 1, 64 ops captured" in err
    if backend == "numba":
        # 200 ops in groups of 64, 64, 64 and 8: two distinct kernels
        assert "kernels 1/2" in err and "kernels 2/2" in err


def test_progress_off_with_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("NPDYNAMO_PROGRESS_AFTER", "0")
    monkeypatch.setenv("NPDYNAMO_PROGRESS", "0")
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)
    _compile_and_run("numba")
    assert "npdynamo" not in capsys.readouterr().err


def test_quick_compiles_print_nothing(monkeypatch, capsys):
    monkeypatch.delenv("NPDYNAMO_PROGRESS_AFTER", raising=False)
    monkeypatch.delenv("NPDYNAMO_PROGRESS", raising=False)
    _compile_and_run("eager")
    assert "npdynamo" not in capsys.readouterr().err


def _stderr_until(capsys, text: str) -> str:
    seen = ""
    for _ in range(1000):  # the timer thread prints within a few ticks
        seen += capsys.readouterr().err
        if text in seen:
            break
        time.sleep(0.01)
    return seen


def test_the_timer_prints_while_a_backend_step_is_busy(monkeypatch, capsys):
    # one long numba compile calls nothing back: the timer thread prints its lines
    monkeypatch.setenv("NPDYNAMO_PROGRESS_AFTER", "0")
    monkeypatch.delenv("NPDYNAMO_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.0)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    monkeypatch.setattr(progress, "_current", None)  # no capture before this backend step
    with progress.busy():
        progress.kernels(0, 3)
        err = _stderr_until(capsys, "kernels 0/3")
    assert "npdynamo: compiling a graph: kernels 0/3" in err
    assert "ops captured" not in err  # nothing was captured: no "graph 0, 0 ops captured"


def test_the_timer_shows_a_background_compile_and_its_switch(monkeypatch, capsys):
    monkeypatch.setenv("NPDYNAMO_PROGRESS_AFTER", "0")
    monkeypatch.delenv("NPDYNAMO_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    handle = progress.background("f (x.py:1)", lambda: "kernels 1/2")
    err = _stderr_until(capsys, "in the background")
    handle.finished("the compiled tier took over at call 3")
    err += capsys.readouterr().err
    assert "npdynamo: compiling f (x.py:1) in the background: kernels 1/2" in err
    assert "npdynamo: f (x.py:1): the compiled tier took over at call 3" in err
