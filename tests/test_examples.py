"""The examples the README points to run, and say what the README says they say."""

import contextlib
import importlib.util
import io
import os

import numpy as np

import npdynamo
from tests.public_names import is_public, npdynamo_names

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_baseline_by_hand_matches_the_tape_and_the_compiled_step():
    mlp = _load("train_mlp")
    x, y = mlp.make_data()
    by_hand = mlp.train(mlp.step_by_hand, x, y)
    np.testing.assert_allclose(mlp.train(mlp.step, x, y), by_hand, rtol=1e-9)
    compiled = npdynamo.compile(mlp.step)
    np.testing.assert_allclose(mlp.train(compiled, x, y), by_hand, rtol=1e-9)
    # the README: the losses agree on both backends (numba within its float tolerance)
    on_numba = npdynamo.compile(mlp.step, backend="numba")
    np.testing.assert_allclose(mlp.train(on_numba, x, y), by_hand, rtol=1e-7)
    assert by_hand[-1] < by_hand[0] / 2  # it trains


def test_demo_tour_runs():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _load("demo").main()
    assert "bitwise equal to plain NumPy: True" in out.getvalue()


def test_a_plain_while_loop_on_an_array_is_captured_whole_too():
    solver = _load("solver_loop")
    A, b = solver.make_system(50)
    report = npdynamo.explain(solver.jacobi_plain)(A, b, 1e-12)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    assert any(n.target.name == "while_loop" for n in report.graphs[0].graph.nodes
               if n.op == "call_function")
    np.testing.assert_array_equal(npdynamo.compile(solver.jacobi_plain)(A, b, 1e-12),
                                  solver.jacobi_plain(A, b, 1e-12))


def test_solver_loop_is_one_graph():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _load("solver_loop").main()
    text = out.getvalue()
    assert "bitwise equal to plain NumPy: True" in text
    assert "Graph count: 1" in text and "Graph break count: 0" in text
    assert "while_loop(while_loop_cond_0, while_loop_body_1" in text
    assert "numba within 1e-12 of plain NumPy: True" in text
    assert "loop while_loop (while_loop): one compiled program" in text


def test_grain_example_trains_from_a_prefetching_pipeline():
    """One epoch, synchronous and with Grain's prefetch threads: same losses, it trains."""
    example = _load("train_grain")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = example.main(["--quick", "--load-passes", "1"])
    text = out.getvalue()
    assert "losses match the synchronous loop" in text and "threads" in text
    sync_losses, _ = result["results"]["sync"]
    assert sync_losses == result["results"]["threads"][0]
    assert 0.0 <= result["gil_held"] <= 1.0
    x, y = example.train_mlp.make_data()
    ds = example.dataset(x, y, 1, 1)
    assert len(ds) == len(x) // example.BATCH
    images, labels = ds[0]
    assert images.shape == (example.BATCH, x.shape[1]) and labels.shape == (example.BATCH,)
    # the batch-level form of the pipeline gives the same batches
    same, _ = example.dataset(x, y, 1, 1, per_sample=False)[0]
    np.testing.assert_array_equal(same, images)


def test_grain_readers_hand_the_batches_over_in_order():
    """Two reader threads load batches side by side: the step still sees them in the
    synchronous loop's order (the same losses, bit for bit), on the batch-level pipeline the
    benchmark uses and on the per-sample one."""
    example = _load("train_grain")
    x, y = example.train_mlp.make_data()
    x, y = x[: 6 * example.BATCH], y[: 6 * example.BATCH]
    step = npdynamo.compile(example.train_mlp.step)
    for per_sample in (False, True):
        sync, _ = example.train(step, x, y, 2, 1, "sync", per_sample=per_sample)
        for readers in (1, 2, 3):
            losses, seconds = example.train(step, x, y, 2, 1, "threads", per_sample=per_sample,
                                            readers=readers)
            assert losses == sync and len(seconds) == 2, (per_sample, readers)
    assert sync[1] != sync[0]  # the second epoch trains on (and from) something else


def test_the_checker_tells_public_from_private_names():
    assert is_public("npdynamo.fx.passes.propagate_shapes") and is_public("npdynamo.inspect")
    assert not is_public("npdynamo.capture.hooks.compiled_entries")
    assert not is_public("npdynamo.fx.passes._helper") and is_public("npdynamo.config.tiered")
    assert npdynamo_names("import npdynamo.capture.hooks\nnpdynamo.backends.numba.x") >= {
        "npdynamo.capture.hooks", "npdynamo.backends.numba.x"}


def test_the_examples_use_only_public_names():
    for name in sorted(os.listdir(EXAMPLES)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
            used = npdynamo_names(f.read())
        private = {u for u in used if not is_public(u)}
        assert not private, f"examples/{name} uses private names: {sorted(private)}"
