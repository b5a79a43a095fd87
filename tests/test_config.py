"""``npdynamo/config.py``: the one reader of npdynamo's environment variables."""

from __future__ import annotations

import os

import pytest

from npdynamo import config


def test_environment_reads_only_the_variables_it_lists(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "never")
    assert config.environment("NPDYNAMO_SCHEDULE") == "never"
    assert config.switch("NPDYNAMO_SCHEDULE") == "never"
    with pytest.raises(KeyError):
        config.environment("NPDYNAMO_NOT_A_KNOB")


def test_a_worker_takes_the_parents_variables_and_drops_its_own(monkeypatch):
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "always")
    monkeypatch.setenv("XDG_CACHE_HOME", "/tmp/parent-cache")
    monkeypatch.delenv("NPDYNAMO_NUMBA_TUNE", raising=False)
    parent = config.worker_environment()
    assert parent["NPDYNAMO_SCHEDULE"] == "always"
    assert parent["XDG_CACHE_HOME"] == "/tmp/parent-cache"
    assert "PATH" not in parent
    # the worker was started under other variables
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    monkeypatch.setenv("NPDYNAMO_SCHEDULE", "never")
    saved = dict(os.environ)
    try:
        config.adopt_worker_environment(parent, NPDYNAMO_TIERED="0")
        assert os.environ["NPDYNAMO_SCHEDULE"] == "always"
        assert os.environ["NPDYNAMO_TIERED"] == "0"
        assert "NPDYNAMO_NUMBA_TUNE" not in os.environ
    finally:  # this process is not a worker: its own variables back
        os.environ.clear()
        os.environ.update(saved)
