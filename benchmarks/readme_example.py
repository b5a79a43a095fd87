"""The README's first example, timed: ``layernorm`` plain NumPy vs compiled on numba.

    python -m benchmarks.readme_example

Prints the median time per call of each (after the compiled function's first calls, which
compile its kernels and choose between its candidates) and the speed-up the README quotes.
``tests/test_readme.py`` checks that the README's example is this very function.
"""

from __future__ import annotations

import numpy as np

import npdynamo
from benchmarks.common import interleaved

ROWS, COLUMNS = 4096, 1024


# -- the README's example (kept identical: tests/test_readme.py compares them) --------------
def layernorm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
# ---------------------------------------------------------------------------------------------


def main() -> dict:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLUMNS)).astype(np.float32)
    gamma, beta = np.ones(COLUMNS, np.float32), np.zeros(COLUMNS, np.float32)
    fast = npdynamo.compile(layernorm, backend="numba")
    np.testing.assert_allclose(fast(x, gamma, beta), layernorm(x, gamma, beta), rtol=1e-4,
                               atol=1e-5)
    times = interleaved({"numpy": layernorm, "numba": fast}, (x, gamma, beta))
    numpy_ms, numba_ms = times["numpy"]["median"] * 1e3, times["numba"]["median"] * 1e3
    print(f"layernorm {ROWS}x{COLUMNS} float32: NumPy {numpy_ms:.2f} ms, npdynamo numba "
          f"{numba_ms:.2f} ms per call: {numpy_ms / numba_ms:.1f}x")
    return {"numpy_ms": numpy_ms, "numba_ms": numba_ms}


if __name__ == "__main__":
    main()
