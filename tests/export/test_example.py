"""examples/export_mlp.py runs: both programs reloaded in a fresh process without the capture
stage, the four runtimes agreeing on the probabilities and the step's loss."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_export_mlp_example():
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "export_mlp.py")],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "npdynamo.capture imported: False" in out
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("npdynamo.load", "ONNX Runtime", "NumPy-only"))]
    assert len(rows) == 4
    losses = {float(r[-3]) for r in rows}
    errors = [float(r[-5]) for r in rows]
    assert len(losses) == 1 and max(errors) < 1e-12, out
