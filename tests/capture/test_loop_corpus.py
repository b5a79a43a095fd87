"""The loop-kernel corpus (``benchmarks/loop_kernels.py``, issue 25) compiled against plain:
each kernel bitwise on the eager backend (results with their types, arguments after the call,
twice so the second call runs the cached entry), within tolerance on numba, and the graphs and
breaks ``explain`` reports, which the capture work on loop formation tightens kernel by kernel
(``GRAPHS_BREAKS`` says today's figures; a change that forms more loops lowers them here)."""

from __future__ import annotations

import contextlib
import copy
import io
import warnings

import numpy as np
import pytest

import npdynamo as nd
from benchmarks.loop_kernels import KERNELS
from npdynamo.capture.hooks.cache import NpdynamoWarning
from tests.backends.compare import assert_close
from tests.differential import check_same

BY_NAME = {k.name: k for k in KERNELS}

#: kernel -> (graphs, graph breaks) at the small size. One graph and no break is the goal of
#: every row, asserted exactly where it holds; a higher row is a ceiling (the counts of a kernel
#: that breaks per iteration depend on its data, through the recompile limit), with the loop
#: pattern that still unrolls or breaks (docs/control-flow.md says which patterns form).
GRAPHS_BREAKS = {
    "lu_doolittle": (1, 0),
    "cholesky_rows": (1, 0),
    "gram_schmidt": (1, 0),
    "levinson_durbin": (1, 0),
    "adi_sweep": (1, 0),
    "iir_forward_backward": (1, 0),
    "hysteresis": (1, 0),
    "floyd_warshall": (1, 0),
    "nussinov": (1, 0),
    "smith_waterman": (1, 0),
    "crc16": (1, 0),
    "csr_spmv": (1, 0),
    "jacobi_break": (1, 0),
    "jacobi_return": (1, 0),
}
ONE_GRAPH = [name for name, counts in GRAPHS_BREAKS.items() if counts == (1, 0)]

#: check_same's exact (graphs, breaks) after the first input and after the second, where not
#: one graph both times: csr_spmv's second input has another number of non-zeros (a second
#: entry)
CHECKED = {"csr_spmv": ((1, 0), (2, 0))}


def _args(name: str, seed: int = 3, size: str = "small") -> tuple:
    return BY_NAME[name].make(size, np.random.default_rng(seed))


def test_the_corpus_covers_every_kernel_once():
    assert set(GRAPHS_BREAKS) == set(BY_NAME)
    assert len(KERNELS) >= 12


@pytest.mark.parametrize("name", GRAPHS_BREAKS)
def test_eager_bitwise_and_graph_count(name):
    kernel = BY_NAME[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NpdynamoWarning)
        first, second = CHECKED.get(name, ((1, 0), (1, 0)))
        check_same(kernel.plain, *_args(name), graphs=first[0], breaks=first[1])
        # a second input of the same shapes: the cached entry (or its guards) gives its result
        check_same(kernel.plain, *_args(name, seed=4), graphs=second[0], breaks=second[1])
        nd.reset()
        with contextlib.redirect_stdout(io.StringIO()):
            report = nd.explain(kernel.plain)(*_args(name))
    counts = (report.graph_count, report.graph_break_count)
    if name in ONE_GRAPH:
        assert counts == (1, 0), str(report)
        assert not any("unrolled" in line and "fewer than config.for_loop_min_trips" not in line
                       for line in report.loops), report.loops
    else:
        graphs, breaks = GRAPHS_BREAKS[name]
        assert counts != (1, 0), "formed now: tighten GRAPHS_BREAKS"
        assert counts[0] <= graphs and counts[1] <= breaks, str(report)


@pytest.mark.parametrize("name", GRAPHS_BREAKS)
def test_numba_within_tolerance(name):
    """(The kernels still unrolled run at n = 6: their unrolled graph compiles in seconds.)"""
    kernel = BY_NAME[name]
    size = "small" if name in ONE_GRAPH else "tiny"
    compiled = nd.compile(kernel.plain, backend="numba")
    for seed in (3, 4):
        args = _args(name, seed, size)
        plain_args, comp_args = copy.deepcopy(args), copy.deepcopy(args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NpdynamoWarning)
            got = compiled(*comp_args)
        want = kernel.plain(*plain_args)
        assert_close(got, want, rtol=1e-9)
        assert_close(comp_args, plain_args, "arguments after the call", rtol=1e-9)


@pytest.mark.parametrize("name", GRAPHS_BREAKS)
def test_hand_written_numba_agrees_with_plain(name):
    """The benchmark's ceiling computes the same thing as the kernel it stands beside."""
    kernel = BY_NAME[name]
    args = _args(name)
    want, got = kernel.plain(*args), kernel.numba(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9)
