"""Which transcendentals a numba kernel should compute itself (the measurement behind the table
in ``npdynamo/backends/numba/lowering.py``).

For each op and dtype on 1e6 elements: NumPy's ufunc (SIMD, one thread), a numba loop calling
the op (``np.<op>`` in a loop: a scalar libm call, numba has no SVML here), and, where
``approx`` has one, a numba loop calling the vectorisable approximation (with the kernels'
vector width). An op whose best numba
loop is slower than NumPy stays a NumPy call between kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from benchmarks.common import fmt_time, measure
from npdynamo.backends.numba import approx
from npdynamo.backends.numba.runtime import prefer_wide_vectors

OPS = ["exp", "tanh", "log", "sin", "expm1", "log1p"]


def _loop(fn):
    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return run


def wide_loop(fn):
    """The approximation's loop as the kernels get it: 512-bit vectors where the CPU has them
    (``runtime.prefer_wide_vectors``; elsewhere the attribute changes nothing)."""

    @njit(error_model="numpy")
    def run(x, out):
        prefer_wide_vectors()
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return run


_LIBM = {name: _loop(getattr(np, name)) for name in OPS}


def main() -> None:
    x64 = np.random.default_rng(0).uniform(0.1, 4, 1_000_000)
    print("\ntranscendentals on 1e6 elements, one thread: NumPy ufunc vs numba loops")
    print(f"{'op':7} {'dtype':8} {'NumPy':>11} {'numba libm':>11} {'numba approx':>13}  choice")
    for dtype in (np.float32, np.float64):
        x = x64.astype(dtype)
        out = np.empty_like(x)
        for name in OPS:
            ufunc = getattr(np, name)
            t_np = measure(ufunc, x, out, samples=5)["median"]
            t_libm = measure(_LIBM[name], x, out, samples=5)["median"]
            helper = approx.APPROXIMATIONS.get((name, np.dtype(dtype)))
            t_approx = None
            if helper:
                t_approx = measure(wide_loop(getattr(approx, helper)), x, out,
                                   samples=5)["median"]
            best = min(t for t in (t_libm, t_approx) if t is not None)
            choice = ("in kernel (approximation)" if t_approx is not None and best <= t_np * 1.1
                      else "NumPy call")
            shown = fmt_time(t_approx) if t_approx is not None else f"{'-':>11}"
            print(f"{name:7} {np.dtype(dtype).name:8} {fmt_time(t_np)} {fmt_time(t_libm)} "
                  f"{shown:>13}  {choice}")


if __name__ == "__main__":
    main()
