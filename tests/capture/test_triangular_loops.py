"""Triangular loops rolled with the index as a symbolic size: ``for i in range(n)`` whose body
slices by ``i`` (``A[i, :i] @ A[:i, i:]``) is one ``fori_loop``, with shapes that are
expressions of the index, decided only when the answer is the same for every iteration.
Differential: bitwise on eager, within tolerance on numba, arguments' state, exceptions."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import npdynamo as nd
from npdynamo.ops.indexing import slice_length
from npdynamo.ops.loop_index import index_symbol
from npdynamo.ops.symbol_table import SymbolTable
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision
from tests.backends.compare import assert_close
from tests.capture import triangular_programs as P
from tests.capture.test_for_formation import in_one_graph, quiet_explain, unrolled_as_before
from tests.differential import CountingBackend, check_same

RNG = np.random.default_rng(29)


def _args(fn, n: int) -> tuple:
    if fn in (P.forward_substitution, P.back_substitution):
        m = P.spd(n, RNG)
        return (np.tril(m) if fn is P.forward_substitution else np.triu(m), RNG.random(n))
    if fn is P.gauss_seidel:
        return (P.diagonally_dominant(n, RNG), RNG.random(n), np.zeros(n), 20)
    if fn is P.shifted:
        return (RNG.random(n + 1),)  # range(1, n + 1): n iterations
    return (P.spd(n, RNG),)


KERNELS = [P.lu_doolittle, P.lu_rows, P.cholesky_rows, P.cholesky_columns,
           P.forward_substitution, P.back_substitution, P.gauss_seidel, P.partial_sums,
           P.shifted]
IDS = [f.__name__ for f in KERNELS]


@pytest.mark.parametrize("n", [16, 200])
@pytest.mark.parametrize("fn", KERNELS, ids=IDS)
def test_one_graph_one_loop_bitwise_on_eager(fn, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of nothing: in both runs
        report = in_one_graph(fn, *_args(fn, n), loops=2 if fn is P.gauss_seidel else 1)
    assert any("in the graph as one fori_loop" in line for line in report.loops)
    assert not any("unrolled" in line for line in report.loops), report.loops


@pytest.mark.parametrize("fn", KERNELS, ids=IDS)
def test_sizes_16_and_200_share_one_capture(fn):
    backend = CountingBackend()
    compiled = nd.compile(fn, backend=backend, dynamic=True)
    for n in (16, 200, 37):
        check_same(fn, *_args(fn, n), compiled=compiled, calls=1, graphs=1, breaks=0)
    assert backend.count == 1
    assert "fori_loop" in backend.op_names(0)


def test_the_trip_count_is_a_symbolic_size_in_the_explain():
    a = P.spd(20, RNG)
    nd.mark_dynamic(a, (0, 1))
    report = quiet_explain(P.cholesky_rows, a)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert any("the bounds are symbolic sizes" in line for line in report.loops), report.loops


def test_the_first_iteration_has_empty_slices():
    # n = 16 is the loop threshold: i = 0 reads A[i, :0], A[:0, :0], A[0:, :0]; the last i
    # reads A[n:, i]; every one an empty array with NumPy's results (0.0 sums, an empty dot)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_same(P.partial_sums, P.spd(16, RNG), graphs=1, breaks=0)
        check_same(P.forward_substitution, np.tril(P.spd(16, RNG)), RNG.random(16), graphs=1,
                   breaks=0)


def test_a_body_that_needs_the_index_value_still_unrolls(monkeypatch):
    unrolled_as_before(monkeypatch, P.index_parity, RNG.random((16, 16)),
                       why="the loop variable i is used where Python needs its value", graphs=1,
                       breaks=0)


def test_shapes_that_match_for_some_iterations_only_refuse_and_raise_as_numpy():
    # rolling refuses (x[i:] + x[:i] broadcasts only where n - i or i is 1, or they are
    # equal); the unrolled capture raises NumPy's ValueError at i = 2, as the plain loop does
    check_same(P.mismatched, RNG.random(20), graphs=0, breaks=0)


def numba_matches(compiled, fn, args: tuple) -> None:
    """``compiled`` (numba) gives ``fn``'s results and argument states within tolerance, with
    no fallback to the eager backend."""
    plain_args, comp_args = copy.deepcopy(args), copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the eager backend
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        got = compiled(*comp_args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(*plain_args)
    assert_close(got, want, rtol=1e-9)
    assert_close(comp_args, plain_args, "arguments after the call", rtol=1e-9)


@pytest.mark.parametrize("fn", KERNELS, ids=IDS)
def test_numba_within_tolerance(fn):
    compiled = nd.compile(fn, backend="numba", dynamic=True)
    for n in (16, 120):
        numba_matches(compiled, fn, _args(fn, n))


def test_numba_compiles_the_body_with_index_sized_kernels():
    text = nd.explain(P.cholesky_rows, backend="numba")(P.spd(16, RNG)).verbose()
    assert "subgraph fori_loop_body_0: numba backend" in text, text
    assert "kernel (serial): subtract" in text, text


def test_shape_propagation_gives_the_body_the_same_shapes():
    from npdynamo.fx.passes import propagate_shapes
    from npdynamo.fx.subgraphs import nodes_with_subgraphs, subgraphs_of

    report = quiet_explain(P.lu_rows, P.spd(16, RNG))
    (loop,) = nodes_with_subgraphs(report.graphs[0].graph)
    (body,) = subgraphs_of(loop)
    before = {n.name: str(n.meta.get("val")) for n in body.graph.nodes if n.op != "output"}
    assert any("i0" in text for text in before.values()), before
    propagate_shapes(body.graph, [p.meta["val"] for p in body.graph.placeholders])
    assert {n.name: str(n.meta.get("val")) for n in body.graph.nodes if n.op != "output"} == before


# -- the decisions themselves ------------------------------------------------------------------
def test_the_index_decides_only_what_holds_for_every_iteration():
    n = SymbolTable().new(16)
    i = index_symbol("i0", 0, n - 1)
    with FactRecorder() as facts:
        assert slice_length(slice(None, i), n) == i
        assert slice_length(slice(i + 1, None), n) == n - i - 1
        assert slice_length(slice(i, n), n) == n - i
        assert i + 1 > 0 and i != -1 and n - i >= 1
    assert facts.facts == []   # nothing about the index becomes a guard
    for question in (lambda: i == 0, lambda: i + 1 == 1, lambda: n - i > 1,
                     lambda: i * i >= 4, lambda: i // 2 >= 1):
        with FactRecorder(), pytest.raises(SymbolicDecision, match="depends on the loop index"):
            question()


def test_ends_of_the_range_may_record_guards_on_sizes():
    table = SymbolTable()
    n, m = table.new(16), table.new(16)
    i = index_symbol("i0", 0, n - 1)
    with FactRecorder() as facts:
        assert slice_length(slice(i, None), m) == m - i   # needs m >= n - 1: a size guard
    assert [f.render() for f in facts.facts] == ["s1 >= s0 - 1"]
    unknown = index_symbol("i1", 0, None)   # a bound that is no size: nothing is decided
    with FactRecorder(), pytest.raises(SymbolicDecision):
        slice_length(slice(unknown, None), m)


# -- an int argument as the trip count (PolyBench style) ---------------------------------------
def _with_n(fn, size: int, n: int) -> tuple:
    m = P.spd(size, RNG)
    return (n, m) if fn is P.lu_polybench else (np.triu(m), RNG.random(size), n)


@pytest.mark.parametrize("fn", [P.lu_polybench, P.back_substitution_n],
                         ids=["lu_polybench", "back_substitution_n"])
def test_an_int_trip_count_is_a_size_symbol_guarded_against_the_arrays(fn):
    backend = CountingBackend()
    compiled = nd.compile(fn, backend=backend, dynamic=True)
    # n below the arrays' size: A[i + 1:, i] still runs to the array's end, as in NumPy
    for size, n in ((16, 16), (200, 200), (40, 17), (30, 1)):
        check_same(fn, *_with_n(fn, size, n), compiled=compiled, calls=1, graphs=1, breaks=0)
    assert backend.count == 1
    assert "fori_loop" in backend.op_names(0)
    report = quiet_explain(fn, *_with_n(fn, 20, 20))
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert any("the bounds are graph inputs" in line for line in report.loops), report.loops
    guards = "\n".join(report.guards)
    assert ">= n" in guards, guards   # the arrays are at least n long: a size guard


def test_an_int_trip_count_past_the_arrays_raises_as_numpy():
    compiled = nd.compile(P.lu_polybench, dynamic=True)
    check_same(P.lu_polybench, *_with_n(P.lu_polybench, 20, 20), compiled=compiled, calls=1,
               graphs=1, breaks=0)
    check_same(P.lu_polybench, *_with_n(P.lu_polybench, 20, 24), compiled=compiled, calls=1,
               graphs=1, breaks=0)


@pytest.mark.parametrize("fn", [P.lu_polybench, P.back_substitution_n],
                         ids=["lu_polybench", "back_substitution_n"])
def test_an_int_trip_count_on_numba(fn):
    compiled = nd.compile(fn, backend="numba", dynamic=True)
    for size, n in ((16, 16), (90, 90), (40, 17)):
        numba_matches(compiled, fn, _with_n(fn, size, n))


# -- what still refuses, and nested loops ------------------------------------------------------
@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("fn, make, why", [
    (P.length_read, lambda: (RNG.random(20),), "Python needs the value of a size"),
    (P.size_from_elsewhere, lambda: (RNG.random(30), RNG.random(40)), None),
])
def test_refusals_unroll_with_the_same_results(fn, make, why, dynamic):
    args = make()
    check_same(fn, *args, compiled=nd.compile(fn, dynamic=dynamic), graphs=1, breaks=0)
    marked = copy.deepcopy(args)
    if dynamic:
        for a in marked:
            nd.mark_dynamic(a, 0)
    report = quiet_explain(fn, *marked)
    reason = why or ("which none of the arrays it reads gives" if dynamic else "fori_loop")
    assert any(reason in line for line in report.loops), report.loops


def test_an_inner_trip_count_may_be_a_size_of_the_outer_index():
    report = in_one_graph(P.inner_bound_from_index, RNG.random(20), loops=2)
    assert all("in the graph" in line for line in report.loops), report.loops
    compiled = nd.compile(P.inner_bound_from_index, dynamic=True)
    for n in (20, 45):
        check_same(P.inner_bound_from_index, RNG.random(n), compiled=compiled, calls=1, graphs=1,
                   breaks=0)


# -- one body statement at a time: rolled or not, always NumPy's results or errors --------------
BODIES = {  # statement -> whether the loop rolls (None: NumPy raises in some iteration)
    "out[i] = A[i, i:].argmax()": True,
    "out[i] = np.linalg.norm(A[i, :i])": True,
    "out[:i] = A[i, :i] / A[i, :i].sum()": True,
    "out[:] = np.concatenate([A[i, :i], A[i:, i]])": True,
    "out[:i] = np.cumsum(A[i, :i])": True,
    "out[i:] = np.sort(A[i, i:])": True,
    "out[i] = A[:i, i:].T.reshape(-1, 1).sum()": True,
    "out[i:] = A[i, i:] + A[i:i + 1, 0]": True,
    "out[i] = (A[i, :i][:, None] * A[:i, i][None, :]).sum()": True,
    "out[i:] = A[i:, :i] @ A[:i, i]": True,
    "out[:i] = A[:i, :i].var(axis=1)": True,
    "out[i] = A[i, i::2].sum() + A[i, i::-1].sum()": True,
    "out[:i] = A[i, :i][::-1]": True,
    "out[i] = A[i, i - 16:].sum()": True,
    "out[i] = A[i, i - 3:].sum()": False,   # negative for i < 3 only: NumPy wraps there
    "out[i] = A[i:i + 1, :i].squeeze().sum()": False,  # squeezes only where i == 1
    "out[i] = np.median(A[i, :i])": False,  # empty at i = 0
    "out[i] = A[:i, i].max()": None,   # no identity for the empty i = 0
    "out[i] = A[i, :i].argmax()": None,
    "out[i] = A[i, :i] @ A[i:, i]": None,
}
#: (graphs, breaks) where not one graph: where NumPy raises the frame reruns in Python (none);
#: the median of the empty row at i = 0 breaks, the resume function is the second graph
COUNTS = {"out[i] = np.median(A[i, :i])": (2, 1)}


@pytest.mark.parametrize("statement", sorted(BODIES))
def test_one_statement_bodies(statement):
    source = ("def body(A):\n    out = np.zeros(16)\n    rows = np.zeros((16, 16))\n"
              f"    for i in range(16):\n        {statement}\n        rows[i] = out\n"
              "    return rows\n")
    space = {"np": np}
    exec(compile(source, f"<{statement}>", "exec"), space)  # noqa: S102 - our own test source
    fn, a = space["body"], RNG.random((16, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty means: in both runs
        graphs, breaks = COUNTS.get(statement, (1, 0) if BODIES[statement] is not None else (0, 0))
        check_same(fn, a, graphs=graphs, breaks=breaks)
        if BODIES[statement] is not None:
            report = quiet_explain(fn, a)
            assert ("in the graph" in report.loops[0]) is BODIES[statement], report.loops


@pytest.mark.parametrize("fn", [P.upper_pairs, P.lower_pairs], ids=["range(i, n)", "range(i)"])
def test_inner_loops_bounded_by_the_index_are_nested_loops(fn):
    report = in_one_graph(fn, RNG.random((20, 20)), RNG.random((20, 20)), loops=2)
    assert any("a bound is computed from an outer loop's index" in line
               for line in report.loops), report.loops
    backend = CountingBackend()
    compiled = nd.compile(fn, backend=backend, dynamic=True)
    for n in (20, 41):
        check_same(fn, RNG.random((n, n)), RNG.random((n, n)), compiled=compiled, calls=1,
                   graphs=1, breaks=0)
    assert backend.count == 1
    numba = nd.compile(fn, backend="numba", dynamic=True)
    args = (RNG.random((30, 30)), RNG.random((30, 30)))
    plain_args, comp_args = copy.deepcopy(args), copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(numba(*comp_args), fn(*plain_args), rtol=1e-9)


def test_the_explicit_fori_loop_index_is_a_size_too():
    args = (np.tril(P.spd(20, RNG)), RNG.random(20))
    report = quiet_explain(P.explicit_api, *args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    check_same(P.explicit_api, *args, graphs=1, breaks=0)
    numba = nd.compile(P.explicit_api, backend="numba")
    assert_close(numba(*copy.deepcopy(args)), P.explicit_api(*args), rtol=1e-9)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_gradients_through_an_index_sliced_explicit_loop(backend):
    def loss(L, b):
        return P.explicit_api(L, b).sum()

    args = (RNG.random((20, 20)), RNG.random(20))
    want = nd.grad(loss, argnums=(0, 1))(*args)   # the tape, outside compile
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nd.grad(nd.compile(loss, backend=backend), argnums=(0, 1))(*args)
    assert_close(list(got), list(want), rtol=1e-9)
