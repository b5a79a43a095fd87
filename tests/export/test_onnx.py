"""ep.to_onnx: models that pass onnx.checker and run in ONNX Runtime with NumPy's results
(float32 rtol 1e-5, float64 1e-10) on new sizes along the dynamic dims; If/Loop for formed
control flow; a clear error for an op without an ONNX form; every written op is tested."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.export import ExportError
from npdynamo.export.onnx_export import onnx_supported_ops
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.registry import REGISTRY
from tests.export.onnx_cases import CASES
from tests.export.workloads import BY_NAME, WORKLOADS, as_tuple, assert_close

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _run(session, ep, args):
    arrays = [a for spec, a in zip([s for s in ep.inputs if s.kind == "input"], args)]
    feeds = {i.name: a for i, a in zip(session.get_inputs(), arrays)}
    return session.run(None, feeds)


@pytest.mark.parametrize("work", [w for w in WORKLOADS if w.onnx], ids=lambda w: w.name)
def test_workload_runs_in_onnx_runtime(work, tmp_path):
    ep = work.export()
    model = ep.to_onnx(tmp_path / f"{work.name}.onnx")
    onnx.checker.check_model(onnx.load(tmp_path / f"{work.name}.onnx"), full_check=True)
    session = _session(model)
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in model.graph.input]
    assert any("n" in d for d in dims), dims  # the dynamic dimension is a dim param
    for n in work.sizes:
        args = work.args(n, seed=n + 100)
        expected = work.fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        got = _run(session, ep, [a for a in args if isinstance(a, np.ndarray)])
        outs = as_tuple(expected)
        if work.mutates:  # the new values of the written arrays follow the returned ones
            plain = [a.copy() for a in args]
            work.fn(*plain)
            outs = (*outs, *(plain[i] for i, s in enumerate(ep.inputs)
                             if s.name in ep.mutations.values()))
        assert len(got) == len(outs)
        for e, g in zip(outs, got):
            assert_close(np.asarray(e), g)


@pytest.mark.parametrize("name,op", [("halve", "Loop"), ("branch", "If"), ("rolled", "Loop")])
def test_control_flow_becomes_if_and_loop(name, op):
    model = BY_NAME[name].export().to_onnx()
    assert op in [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("case", sorted(CASES))
def test_ops_match_numpy(case):
    fn, args = CASES[case]
    ep = npdynamo.export(fn, *args)
    got = _run(_session(ep.to_onnx()), ep, args)
    with np.errstate(divide="ignore", invalid="ignore"):  # the inf and nan cases are on purpose
        expected = fn(*args)
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got)):
        e = np.asarray(e)
        assert g.dtype == e.dtype, (case, i, g.dtype, e.dtype)
        assert g.shape == e.shape, (case, i, g.shape, e.shape)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-5 if e.dtype.itemsize == 4 else 1e-10,
                                       atol=1e-12, err_msg=f"{case} output {i}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"{case} output {i}")


def test_every_written_op_is_tested():
    seen = set()
    for fn, args in CASES.values():
        for graph in _graphs(npdynamo.export(fn, *args).graph):
            seen |= {n.target.name for n in graph.nodes if n.op == "call_function"}
    for work in WORKLOADS:
        if work.onnx:
            for graph in _graphs(work.export().graph):
                seen |= {n.target.name for n in graph.nodes if n.op == "call_function"}
    untested = sorted(set(onnx_supported_ops()) - seen)
    assert untested == [], untested


def _graphs(graph):
    yield graph
    for node in graph.nodes:
        for a in node.args:
            if is_subgraph(a):
                yield from _graphs(a.graph)


def test_op_without_onnx_form_is_named():
    ep = BY_NAME["integers"].export()
    with pytest.raises(ExportError, match=r"the op floor_divide has no ONNX form yet .*"
                       r"workloads.py:\d+"):
        ep.to_onnx()
    assert isinstance(ExportError("m"), npdynamo.NpdynamoError)


def test_coverage_figure():
    covered = set(onnx_supported_ops()) & set(REGISTRY)  # and index_add, a backward op
    print(f"ONNX coverage: {len(covered)}/{len(REGISTRY)} canonical ops "
          f"({100 * len(covered) / len(REGISTRY):.0f}%)")
