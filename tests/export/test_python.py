"""ep.to_python: one readable module (+ .npz of constants) that needs only NumPy, run in a fresh
process where npdynamo and numba cannot be imported, bitwise equal to plain NumPy (it is the
eager backend's code) on new sizes along the dynamic dims, arguments written back."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import npdynamo
from npdynamo.export import ExportError
from tests.differential import assert_same_value
from tests.export.workloads import WORKLOADS, copies

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_workload_runs_with_numpy_only(tmp_path):
    paths, expected = [], {}
    for work in WORKLOADS:
        module = str(tmp_path / f"exported_{work.name}.py")
        ep = work.export()
        ep.to_python(module)
        args = work.args(6, seed=21)
        plain = copies(args)
        inputs = {f"a{i}": a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        np.savez(module[:-3] + ".inputs.npz", fn_name=np.asarray(ep.name), **inputs)
        expected[module] = (work.fn(*plain), list(plain))
        paths.append(module)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "export",
                                                        "run_numpy_only.py"), *paths],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "numpy-only ok" in done.stdout
    for module, plain in expected.items():
        with open(module[:-3] + ".outputs.pkl", "rb") as f:
            got = pickle.load(f)  # noqa: S301 (written by the test's own subprocess)
        assert_same_value(plain, got, module)  # the result, then the arguments after the call


def test_module_is_readable(tmp_path):
    from tests.export.workloads import BY_NAME
    BY_NAME["mlp_predict"].export().to_python(tmp_path / "mlp.py")
    text = (tmp_path / "mlp.py").read_text()
    assert "needs only NumPy" in text
    assert "def mlp_predict(x):" in text
    assert "import npdynamo" not in text and "numba" not in text
    assert "h = np.tanh(x @ W1 + B1)" in text  # the user's lines, as comments
    assert sorted(np.load(tmp_path / "mlp.npz").files) == ["B1", "W1", "W2"]


def test_op_needing_npdynamo_is_refused():
    def f(x):
        return np.linalg.lstsq(x, x[:, 0])[0]
    ep = npdynamo.export(f, np.random.default_rng(0).standard_normal((5, 3)))
    with pytest.raises(ExportError, match="no NumPy-only form"):
        ep.to_python("/tmp/unused-export-module.py")


def test_speculated_choice_is_pythons_choice_in_the_module(tmp_path):
    import importlib.util

    from tests.differential import assert_same_value
    from tests.export.onnx_edge_cases import scaled_by_peak
    ep = npdynamo.export(scaled_by_peak, np.ones((4, 3)), dynamic_shapes=[{0: npdynamo.Dim("n")}])
    ep.to_python(tmp_path / "peak.py")
    spec = importlib.util.spec_from_file_location("peak", tmp_path / "peak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for scale in (3.0, 0.01, 0.0, np.nan):  # the NumPy scalar, then Python's float 1.0
        x = np.random.default_rng(5).standard_normal((6, 3)) * scale
        assert_same_value(scaled_by_peak(x.copy()), module.scaled_by_peak(x))


def test_speculated_choice_refused_where_the_python_float_may_differ():
    def f(x):
        return x * (1.0 / max(1.0, x.max()))  # Python's 1.0 / 0.0 would raise
    with pytest.raises(ExportError, match="a Python float and a NumPy scalar may differ"):
        npdynamo.export(f, np.ones(3)).to_python("/tmp/unused-export-module.py")
