"""Thread policy of the numba backend: which kernels run with ``parallel=True``.

numba's OpenMP threads and OpenBLAS's threads must never compete for the cores: with both pools
busy in one step, an MLP step measured 15-40 ms instead of 0.3 ms on a 2-core machine. The policy
is per graph: a graph that calls BLAS (matmul, dot, einsum, ...) gets serial kernels, so its
BLAS calls keep every core; any other graph runs a kernel in parallel when its domain has at
least ``PARALLEL_MIN_ELEMENTS`` elements (below that, the fork/join costs more than it saves;
``benchmarks/threads.py`` measures the crossover).

A graph with symbolic sizes does not know its kernels' sizes when it compiles: such a kernel is
generated twice (serial and ``prange``) and the program picks one per call from the concrete size
(``parallel_choice`` returns None), so the rule above holds for every size without a recompile.

The user controls: ``NUMBA_NUM_THREADS`` (numba's pool size; 1 means always serial),
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` (BLAS's pool), and ``NPDYNAMO_NUMBA_PARALLEL``:
``auto`` (the default, the policy above), ``never``, or ``always`` (large kernels run in parallel
even in graphs that call BLAS: for users who set ``OPENBLAS_NUM_THREADS=1``).
"""

from __future__ import annotations

import numba

from npdynamo import config
from npdynamo.fx.graph import Graph
from npdynamo.ops.symbolic import Dim

#: Smallest domain run in parallel (elements); measured on a 2-core machine, where a parallel
#: elementwise kernel first beats the serial one between 2**16 and 2**17 elements.
PARALLEL_MIN_ELEMENTS = 1 << 17


def graph_allows_parallel(graph: Graph) -> tuple[bool, str]:
    """Whether kernels of ``graph`` may run in parallel, and why (for the report)."""
    mode = config.switch("NPDYNAMO_NUMBA_PARALLEL")
    if mode == "never":
        return False, "NPDYNAMO_NUMBA_PARALLEL=never"
    if numba.config.NUMBA_NUM_THREADS <= 1:
        return False, "NUMBA_NUM_THREADS=1"
    if mode == "always":
        return True, "NPDYNAMO_NUMBA_PARALLEL=always"
    # (BLAS is multi-threaded OpenBLAS under NumPy)
    blas = sorted({n.target.name for n in graph.nodes if getattr(n.target, "blas", False)})
    if blas:
        return False, f"the graph calls BLAS ({', '.join(blas)}): serial kernels"
    return True, "no BLAS in the graph"


def use_parallel(allowed: bool, elements: int) -> bool:
    """Whether one kernel over ``elements`` elements runs with ``prange``."""
    return allowed and elements >= PARALLEL_MIN_ELEMENTS


def parallel_choice(allowed: bool, elements: Dim) -> bool | None:
    """``use_parallel`` when ``elements`` is an int; None when it is symbolic and parallel is
    allowed: the program then compares the concrete size with ``PARALLEL_MIN_ELEMENTS``."""
    if type(elements) is int:
        return use_parallel(allowed, elements)
    return None if allowed else False
