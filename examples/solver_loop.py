"""A solver loop captured as ONE graph: Jacobi iteration with ``npdynamo.while_loop``.

Written with ``npdynamo.while_loop`` (as in ``jax.lax``), the condition and the sweep become two
subgraphs of one ``while_loop`` node: the whole solve is one graph, compiled once, whatever the
number of iterations. Outside ``npdynamo.compile`` the same function runs as the plain Python
loop. A plain ``while step > tol:`` loop (``jacobi_plain``) is captured into the same one node
when its body follows the rules of docs/control-flow.md; a ``print`` or a ``break`` in it would
make each iteration a graph break.

On the numba backend the loop, its condition and its sweep are one compiled function
(``backends/numba/loop_program.py``): a solve is one call into compiled code.

Run ``python examples/solver_loop.py``.
"""

from __future__ import annotations

import numpy as np

import npdynamo


def jacobi(A, b, tol):
    """Solve ``A x = b`` (diagonally dominant ``A``) to a step size below ``tol``."""
    D = A.diagonal()
    R = A - D * np.eye(A.shape[0])

    def not_converged(state):
        _x, step = state
        return step > tol

    def sweep(state):
        x, _step = state
        new = (b - R @ x) / D
        return new, np.abs(new - x).max()

    x, _ = npdynamo.while_loop(not_converged, sweep, (np.zeros_like(b), np.float64(np.inf)))
    return x


def jacobi_plain(A, b, tol):
    """``jacobi`` with a plain ``while`` loop on the step size (an array value)."""
    D = A.diagonal()
    R = A - D * np.eye(A.shape[0])
    x, step = np.zeros_like(b), np.float64(np.inf)
    while step > tol:
        new = (b - R @ x) / D
        x, step = new, np.abs(new - x).max()
    return x


def heat_stencil(u, T):
    """``T`` explicit steps of the 1-D heat equation (ends fixed), with ``npdynamo.fori_loop``:
    the graph is the same for any ``T``."""

    def step(t, u):
        new = u.copy()
        new[1:-1] = u[1:-1] + 0.1 * (u[:-2] - 2 * u[1:-1] + u[2:])
        return new

    return npdynamo.fori_loop(0, T, step, u)


def make_system(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((n, n)) + n * np.eye(n)
    return A, rng.random(n)


def main() -> None:
    A, b = make_system()
    plain = jacobi(A, b, 1e-12)
    solve = npdynamo.compile(jacobi)
    x = solve(A, b, 1e-12)
    print("bitwise equal to plain NumPy:", np.array_equal(x, plain))
    print("residual:", float(np.abs(A @ x - b).max()))
    report = npdynamo.explain(jacobi)(A, b, 1e-12)
    print(report)
    print(report.graphs[0].graph)
    # on the numba backend the whole while_loop is one compiled function: no Python per sweep
    fast = npdynamo.compile(jacobi, backend="numba")
    print("numba within 1e-12 of plain NumPy:",
          bool(np.allclose(fast(A, b, 1e-12), plain, rtol=0, atol=1e-12)))
    (numba_report,) = npdynamo.explain(jacobi, backend="numba")(A, b, 1e-12).backend_reports
    print("\n".join(str(loop) for loop in numba_report.loops))


if __name__ == "__main__":
    main()
