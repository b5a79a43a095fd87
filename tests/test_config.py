"""``npdynamo/config.py``: the one reader of npdynamo's environment variables."""

from __future__ import annotations

import os
import subprocess
import sys

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


@pytest.mark.parametrize("name", ["NPDYNAMO_FORCE_PYTHON", "NPDYNAMO_FORCE_FALLBACK"])
def test_force_python_reads_its_old_name_too_with_a_warning(name):
    # a fresh interpreter: the knob is read once, at import
    code = ("import warnings; warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    import npdynamo\n"
            "print(npdynamo.config.force_python, [str(w.message) for w in seen])")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPDYNAMO_FORCE")}
    env[name] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("True")
    assert ("renamed NPDYNAMO_FORCE_PYTHON" in out) == (name == "NPDYNAMO_FORCE_FALLBACK")
