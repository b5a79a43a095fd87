"""Start-up cost of the numba backend in a fresh process: cold compile vs the disk cache.

Runs the same child process twice against a new, empty ``NPDYNAMO_CACHE_DIR``: the first
compiles the GELU graph's kernel with LLVM, the second finds it on disk. Each child reports the
time from its first call of the compiled function to the result (capture, kernel generation,
numba's import and initialisation, compile or cache load, run), numba's import time within it,
and the whole process time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time

CHILD = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import numpy as np
    import npdynamo
    from benchmarks.workloads import gelu
    x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
    fn = npdynamo.compile(gelu, backend="numba")
    t1 = time.perf_counter()
    fn(x)
    t2 = time.perf_counter()
    import numba  # already imported by the backend: measure its import separately below
    print(t2 - t1, t1 - t0)
""")
IMPORT_NUMBA = "import time; t = time.perf_counter(); import numba; print(time.perf_counter() - t)"


def _child(code: str, env: dict) -> tuple[list[float], float]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, check=True)
    return [float(v) for v in out.stdout.split()], time.perf_counter() - start


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as cache:
        # the blocking compile's start-up (tiers: benchmarks/first_call.py)
        env = dict(os.environ, NPDYNAMO_CACHE_DIR=cache, NPDYNAMO_TIERED="0")
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        (numba_import,), _ = _child(IMPORT_NUMBA, env)
        (cold, cold_imports), cold_total = _child(CHILD, env)
        (warm, warm_imports), warm_total = _child(CHILD, env)
    print("\nnumba backend start-up in a fresh process (GELU graph, float32 1e6)")
    print(f"  first call, empty disk cache (LLVM compile): {cold:6.3f} s   "
          f"(process {cold_total:.2f} s)")
    print(f"  first call, warm disk cache (no compile):    {warm:6.3f} s   "
          f"(process {warm_total:.2f} s)")
    print(f"  of which 'import numba' (measured alone):    {numba_import:6.3f} s; "
          f"import numpy+npdynamo: {warm_imports:.3f} s")


if __name__ == "__main__":
    main()
