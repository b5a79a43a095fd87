"""Loops in the graph: capture + compile time against the trip count, and a solver loop's speed.

* ``stencil T=20`` vs ``T=2000``: a 1-D heat stencil written with ``npdynamo.fori_loop``;
  first call (capture + compile + run) and warm call, eager and numba. The graph is the same
  for both trip counts, so the first-call difference is the run time of the extra steps only.
* ``stencil, plain for``: the same steps written as an ordinary ``for t in range(T):`` loop with
  a slice update, formed into a ``fori_loop`` automatically, and with
  ``config.capture_for_loops = False`` (unrolled: capture grows with ``T``, the graph is split
  every 4000 ops). Formed, the first call at ``T=2000`` costs about what ``T=20`` costs plus
  the extra steps' run time; unrolled it grows with ``T``. Formed, the numba backend runs the
  whole loop as one compiled function (``backends/numba/loop_program.py``).
* ``cholesky``: a triangular loop (``A[i, i:] -= A[:i, i] @ A[:i, i:]``) rolled with the
  index as a symbolic size: first call (capture + compile + run) and warm call on both
  backends, against plain NumPy, at two sizes; one capture serves both (``dynamic=True``).
* ``gauss_seidel``: a Seidel sweep by rows (``x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1:] @
  x[i + 1:]) / A[i, i]``), the index-bounded slices inside ``for i in range(n)`` inside a loop
  over sweeps: first call and warm call on both backends against plain NumPy.
* ``jacobi``: the solver of ``examples/solver_loop.py`` (``npdynamo.while_loop``), plain NumPy
  against the compiled function on both backends, per solve.

Run ``python -m benchmarks.control_flow``. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import npdynamo  # noqa: E402
from benchmarks.common import fmt_time, measure  # noqa: E402
from examples.solver_loop import heat_stencil as stencil  # noqa: E402
from examples.solver_loop import jacobi, make_system  # noqa: E402
from tests.capture.triangular_programs import gauss_seidel  # noqa: E402


def plain_stencil(u, T):
    """The stencil as users write it: a ``for`` loop over ``range(T)`` updating a slice."""
    u = u.copy()
    for _t in range(T):
        u[1:-1] = u[1:-1] + 0.1 * (u[:-2] - 2 * u[1:-1] + u[2:])
    return u


def cholesky(A):
    """Upper Cholesky factor by rows (a copy): slices bounded by the loop index."""
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        A[i, i:] -= A[:i, i] @ A[:i, i:]
        A[i, i:] /= np.sqrt(A[i, i])
    return A


def seidel(n: int = 100, sweeps: int = 10) -> None:
    print(f"gauss-seidel n={n}, {sweeps} sweeps  first call     warm call")
    rng = np.random.default_rng(0)
    A = rng.random((n, n)) + n * np.eye(n)
    b = rng.random(n)
    print(f"  numpy                              "
          f"{fmt_time(measure(lambda: gauss_seidel(A, b, np.zeros(n), sweeps))['median'])}")
    for backend in ("eager", "numba"):
        npdynamo.reset()
        compiled = npdynamo.compile(gauss_seidel, backend=backend, dynamic=True)
        start = time.perf_counter()
        compiled(A, b, np.zeros(n), sweeps)
        first = time.perf_counter() - start
        warm = measure(lambda f=compiled: f(A, b, np.zeros(n), sweeps))["median"]
        print(f"  {backend:6s}                   {fmt_time(first)}   {fmt_time(warm)}")


def triangular(sizes=(200, 400)) -> None:
    print("cholesky (triangular for)  first call     warm call")
    rng = np.random.default_rng(0)
    systems = []
    for n in sizes:
        m = rng.standard_normal((n, n))
        systems.append(m @ m.T + n * np.eye(n))
    for A in systems:
        print(f"  numpy    n={A.shape[0]:<5d}                     "
              f"{fmt_time(measure(cholesky, A, samples=5)['median'])}")
    for backend in ("eager", "numba"):
        npdynamo.reset()
        compiled = npdynamo.compile(cholesky, backend=backend, dynamic=True)
        for A in systems:  # the second size reuses the first one's capture
            start = time.perf_counter()
            compiled(A)
            first = time.perf_counter() - start
            warm = measure(compiled, A, samples=5)["median"]
            print(f"  {backend:6s} n={A.shape[0]:<5d}         {fmt_time(first)}   {fmt_time(warm)}")


def _jacobi():
    return jacobi, make_system(400)


def first_and_warm(fn, *args, backend: str) -> tuple[float, float]:
    npdynamo.reset()
    compiled = npdynamo.compile(fn, backend=backend)
    start = time.perf_counter()
    compiled(*args)
    first = time.perf_counter() - start
    return first, measure(compiled, *args, samples=5)["median"]


def main() -> None:
    u = np.sin(np.linspace(0.0, 3.0, 4096))
    print("stencil (fori_loop)        first call     warm call")
    for T in (20, 2000):
        print(f"  numpy  T={T:<5d}                       "
              f"{fmt_time(measure(stencil, u, T, samples=5)['median'])}")
    for backend in ("eager", "numba"):
        for T in (20, 2000):
            first, warm = first_and_warm(stencil, u, T, backend=backend)
            print(f"  {backend:6s} T={T:<5d}        {fmt_time(first)}   {fmt_time(warm)}")
    print("stencil (plain for)        first call     warm call")
    for T in (20, 2000):
        print(f"  numpy    T={T:<5d}                     "
              f"{fmt_time(measure(plain_stencil, u, T, samples=5)['median'])}")
    for formed, backend in ((True, "eager"), (True, "numba"), (False, "eager")):
        npdynamo.config.capture_for_loops = formed
        try:
            for T in (20, 2000):
                first, warm = first_and_warm(plain_stencil, u, T, backend=backend)
                label = f"{'formed' if formed else 'unrolled'} {backend}"
                print(f"  {label:14s} T={T:<5d}{fmt_time(first)}   {fmt_time(warm)}")
        finally:
            npdynamo.config.capture_for_loops = True
    triangular()
    seidel()
    jacobi, (A, b) = _jacobi()
    print("jacobi n=400 (while_loop)  per solve")
    print(f"  numpy                    {fmt_time(measure(jacobi, A, b, 1e-10)['median'])}")
    for backend in ("eager", "numba"):
        _first, warm = first_and_warm(jacobi, A, b, 1e-10, backend=backend)
        print(f"  {backend:24s} {fmt_time(warm)}")


if __name__ == "__main__":
    main()
