"""Graph breaks, plain vs compiled: results, argument state, printed output and exceptions match;
strict mode checks the exact graphs and breaks ``explain`` reports; the same programs also pass
with every capture forced to fall back to Python."""

import contextlib
import io
import sys

import numpy as np
import pytest

import npdynamo
from tests.capture.break_programs import (
    BREAK_PROGRAMS,
    break_two_calls_deep,
    comprehension_with_break,
    print_in_loop,
)
from tests.differential import CountingBackend, check_same

IDS = [p[0] for p in BREAK_PROGRAMS]
STRICT = [p for p in BREAK_PROGRAMS if p[3] is not None]


def quiet_explain(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return npdynamo.explain(fn)(*args)


#: check_same's counts (the function's own entries and resume functions', over three calls) where
#: they are not the program's explain counts: explain also counts the frames of the helpers
#: called (their own code) and each break as it happens (a loop's, once per iteration)
MADE = {
    "branch_on_sum-1": (1, 0), "branch_any-1": (1, 0), "elif_chain-1": (1, 0),
    "elif_chain-2": (1, 0), "branch_with_print-1": (2, 1), "early_return_on_data-1": (1, 1),
    "print_in_loop-0": (3, 3), "loop_enumerate_zip-0": (2, 2), "nested_loops-0": (3, 3),
    "break_in_helper-0": (2, 1), "break_two_calls_deep-0": (2, 1), "helper_in_loop-0": (0, 2),
    "method_with_break-0": (1, 1), "call_object_with_breaks-0": (0, 1),
    "recursion_with_break-0": (0, 1), "exception_escapes_after_break-0": (1, 1),
    "try_except_on_data-1": (1, 1), "local_bound_on_some_paths-1": (0, 1),
    # the closure made before the break is guarded on its code and cells, not its identity
    # (each call makes it anew): one resume entry serves every call (3 and 4 graphs before)
    "closure_cell_changes_after_break-0": (1, 1), "nonlocal_counter-0": (2, 1),
    # 3.12+ inline the comprehension (PEP 709): its loop over an iterator breaks in the caller
    "comprehension_with_break-0": (1, 3) if sys.version_info >= (3, 12) else (1, 1),
}


@pytest.mark.parametrize("name,fn,factory,counts", BREAK_PROGRAMS, ids=IDS)
def test_break_program_matches_python(name, fn, factory, counts):
    graphs, breaks = MADE.get(name, counts)
    check_same(fn, *factory(), calls=3, graphs=graphs, breaks=breaks)


@pytest.mark.parametrize("name,fn,factory,counts", STRICT, ids=[p[0] for p in STRICT])
def test_strict_graph_and_break_counts(name, fn, factory, counts):
    out = quiet_explain(fn, *factory())
    assert (out.graph_count, out.graph_break_count) == counts, str(out)


@pytest.mark.parametrize("name,fn,factory,counts", BREAK_PROGRAMS, ids=IDS)
def test_forced_fallback_matches_python(name, fn, factory, counts, monkeypatch):
    monkeypatch.setattr(npdynamo.config, "force_python", True)
    backend = CountingBackend()
    check_same(fn, *factory(), graphs=0, breaks=0, calls=2,
               compiled=npdynamo.compile(fn, backend=backend))
    assert backend.count == 0


def test_enough_break_programs():
    assert len({id(fn) for _n, fn, _f, _c in BREAK_PROGRAMS}) >= 50


def test_loop_body_stays_compiled_around_the_break():
    backend = CountingBackend()
    compiled = npdynamo.compile(print_in_loop, backend=backend)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(np.ones(3))
        compiled(np.ones(3))
        graphs_two_calls = backend.count
        compiled(np.ones(3))
    # the counter ``i`` is used in arithmetic: from its second value on it is a graph input (a
    # dynamic scalar), so the resume point keeps one entry; a third call compiles nothing
    assert backend.count == graphs_two_calls
    names = {tuple(backend.op_names(i)) for i in range(backend.count)}
    assert names == {("multiply",), ("add",), ("add", "multiply")}


def test_branch_taken_both_ways_over_two_calls(monkeypatch):
    from tests.capture.break_programs import branch_on_sum

    backend = CountingBackend()
    compiled = npdynamo.compile(branch_on_sum, backend=backend)
    pos, neg = np.ones(3), -np.ones(3)
    for x in (pos, neg, pos):
        np.testing.assert_array_equal(compiled(x), branch_on_sum(x))
    assert backend.count == 1  # by default the if is one cond node: both sides, one graph
    # the break machinery for a branch on an array, as with the if formation switched off
    monkeypatch.setattr(npdynamo.config, "capture_if_branches", False)
    npdynamo.reset()
    backend = CountingBackend()
    compiled = npdynamo.compile(branch_on_sum, backend=backend)
    pos, neg = np.ones(3), -np.ones(3)
    np.testing.assert_array_equal(compiled(pos), branch_on_sum(pos))
    np.testing.assert_array_equal(compiled(neg), branch_on_sum(neg))
    np.testing.assert_array_equal(compiled(pos), branch_on_sum(pos))
    assert backend.count == 3  # the condition's graph, then one graph per side


def test_explain_report_names_lines_reasons_and_hints():
    out = quiet_explain(break_two_calls_deep, np.ones(3))
    assert (out.graph_count, out.graph_break_count) == (5, 3)
    reason = out.break_reasons[0]
    assert reason.filename.endswith("break_programs.py")
    assert reason.source_line == 'print("helper called")'
    assert "print() does input/output" in reason.reason
    assert reason.hint
    chain = [loc.function for loc in reason.user_stack]
    assert chain == ["break_two_calls_deep", "_outer_helper", "_log_and_scale"]
    assert reason.kind == "io"
    text = str(out)
    assert text.startswith("Graph count: 5\nGraph break count: 3")
    assert "print() does input/output" in text and 'print("helper called")' in text
    assert "hint:" in text and "Ops per graph:" in text and "Guards:" in text
    assert out.ops_per_graph and all(n > 0 for n in out.ops_per_graph)
    assert out.compile_time_s > 0


@pytest.mark.parametrize(
    "fn,kind",
    [
        ("tolist_call", "graph_value_to_python"),
        ("branch_with_print", "data_dependent_branch"),
        ("linalg_inverse", "unknown_function"),
        ("explicit_breaks", "explicit"),
        ("print_middle", "io"),
    ],
)
def test_break_kinds(fn, kind):
    from tests.capture import break_programs

    program = getattr(break_programs, fn)
    factory = next(f for _n, p, f, _c in BREAK_PROGRAMS if p is program)
    out = quiet_explain(program, *factory())
    assert out.break_reasons[0].kind == kind
    assert out.break_reasons[0].lineno > 0


def test_explain_does_not_touch_the_cache():
    from npdynamo.capture.hooks import compiled_entries

    compiled = npdynamo.compile(break_two_calls_deep)
    quiet_explain(compiled, np.ones(3))
    assert compiled_entries(compiled) == []


def test_break_inside_a_comprehension_keeps_the_frame_compiled():
    # 3.11: the comprehension is its own function, run natively at the break; 3.12+ (PEP 709,
    # inlined): the resume function continues the comprehension's loop
    out = quiet_explain(comprehension_with_break, np.ones(3))
    assert out.python_frames == [], str(out)
    assert out.graph_break_count >= 1
    assert out.result == comprehension_with_break(np.ones(3))


def test_fullgraph_raises_at_the_first_break():
    with pytest.raises(npdynamo.Unsupported, match="print"):
        npdynamo.compile(break_two_calls_deep, fullgraph=True)(np.ones(3))


def test_graph_break_logging(caplog):
    import logging

    from tests.capture.break_programs import print_middle

    npdynamo.set_logs("graph_breaks", "guards", "graph_code", "bytecode")
    try:
        with caplog.at_level(logging.INFO, logger="npdynamo"):
            with contextlib.redirect_stdout(io.StringIO()):
                npdynamo.compile(print_middle)(np.ones(2))
    finally:
        npdynamo.set_logs()
    text = caplog.text
    assert "Graph break in print_middle" in text
    assert "def check(" in text  # the guard function's source
    assert "def forward(" in text  # the graph's code
    assert "Transformed:" in text  # original and transformed bytecode


def _sum_then_print(x):
    s = x.sum()
    print("sum computed")
    return x * s


def test_numpy_scalar_crossing_a_break_is_data_not_a_guard():
    backend = CountingBackend()
    compiled = npdynamo.compile(_sum_then_print, backend=backend)
    with contextlib.redirect_stdout(io.StringIO()):
        for seed in range(4):
            x = np.random.default_rng(seed).standard_normal(3)
            np.testing.assert_array_equal(compiled(x), x * x.sum())
    assert backend.count == 2  # captured once on each side of the break, never again


def _long_loop(x):
    for _ in range(3000):
        x = x * 0.999 + 0.001
    return x


def _long_while(x):
    i = 0
    while i < 3000:  # no trip count known before it runs: nothing predicts its length
        x = x * 0.999 + 0.001
        i += 1
    return x


def test_a_very_long_unrolled_loop_is_split_into_graphs(monkeypatch):
    from npdynamo.capture.session import GRAPH_NODE_LIMIT

    # the split is what this test measures: an in-graph loop would hold the whole loop
    monkeypatch.setattr(npdynamo.config, "capture_for_loops", False)
    out = quiet_explain(_long_while, np.ones(3))
    assert out.graph_count == 2 and max(out.ops_per_graph) == GRAPH_NODE_LIMIT
    check_same(_long_while, np.ones(3), calls=2, graphs=2, breaks=1)


def test_a_for_loop_predicted_past_the_op_limit_breaks_before_unrolling(monkeypatch):
    # 3,000 iterations of 2 ops: measured after one iteration, it would fill the graph and
    # leave the rest to a resume function; Python runs it from its first step instead
    monkeypatch.setattr(npdynamo.config, "capture_for_loops", False)
    out = quiet_explain(_long_loop, np.ones(3))
    assert out.graph_count == 0
    (reason,) = out.break_reasons
    assert "3,000 iterations of about 2 ops each" in reason.reason
    assert "past its 4,000-op limit" in reason.reason
    check_same(_long_loop, np.ones(3), calls=2, graphs=0, breaks=1)


@pytest.mark.parametrize("name,fn,factory,counts", BREAK_PROGRAMS, ids=IDS)
def test_break_reasons_speak_the_users_python(name, fn, factory, counts):
    try:
        out = quiet_explain(fn, *factory())
    except Exception:  # the program raises in plain Python too: explain passes that on
        return
    for reason in out.break_reasons:  # no internal value-kind names ("UserObjectValue", "Const")
        assert "Value" not in reason.reason and "Const" not in reason.reason, reason.reason
