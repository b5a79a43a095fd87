"""Loop programs in the kernel disk cache: a new process loads the whole-loop njit function's
machine code instead of compiling it again, and only for the very objects its source names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from npdynamo.backends.numba.loop_program import _described

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import numpy as np
import npdynamo

@npdynamo.compile(backend="numba")
def heat(u, n):
    for t in range(n):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u

u = np.linspace(0.0, 1.0, 64) ** 2
want = u.copy()
for t in range(40):
    want[1:-1] = want[1:-1] + 0.1 * (want[2:] - 2 * want[1:-1] + want[:-2])
got = heat(u.copy(), 40)
report = npdynamo.explain(heat, backend="numba")(u.copy(), 40).backend_reports[0]
(record,) = report.loops
from npdynamo.backends.numba.diskcache import _registries_loaded
# numba loads its typing registries for a compile, never for a load from the disk cache
print(record.compiled, record.runs > 0, np.allclose(got, want, rtol=1e-12),
      _registries_loaded(record.dispatcher.targetctx))
"""


def _run(cache: Path) -> list[str]:
    env = dict(os.environ, NPDYNAMO_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT),
               NPDYNAMO_TIERED="0", NPDYNAMO_NUMBA_TUNE="0")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_new_process_loads_the_loop_program(tmp_path):
    first = _run(tmp_path)
    assert first == ["True", "True", "True", "True"]  # compiled here, then stored
    assert list((tmp_path / "kernels").glob("l_*.py"))
    assert _run(tmp_path) == ["True", "True", "True", "False"]  # loaded: nothing compiled


def test_the_key_covers_the_objects_the_source_names():
    a, b = np.arange(4.0), np.arange(4.0) + 1
    assert _described({"_const0": a, "np": np}) == _described({"_const0": a.copy(), "np": np})
    assert _described({"_const0": a}) != _described({"_const0": b})
    assert _described({"_float0": float("nan")}) != _described({"_float0": float("inf")})
    assert _described({"_impl0": lambda x: x}) is None  # no stable identity: not cached
    assert _described({"_sum": np.add}) == "_sum=ufunc numpy.add"
