"""ep.to_onnx: models that pass onnx.checker and run in ONNX Runtime with NumPy's results
(float32 rtol 1e-5, float64 1e-10) on new sizes along the dynamic dims; If/Loop for formed
control flow; a clear error for an op without an ONNX form; every written op is tested."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.export import ExportError
from npdynamo.export.onnx_export import NOT_EXPORTED, onnx_supported_ops
from npdynamo.export.program import ExportedProgram, InputSpec
from npdynamo.fx import Graph
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY
from tests.export.onnx_cases import CASES
from tests.export.onnx_edge_cases import EDGE_CASES, OP_GRAPHS, scaled_by_peak
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


@pytest.mark.parametrize("name,op", [("halve", "Loop"), ("branch", "If"), ("rolled", "Loop"),
                                     ("newton", "Loop")])
def test_control_flow_becomes_if_and_loop(name, op):
    """A plain Python while/for/if stays one ONNX Loop/If (not unrolled: a few nodes), and its
    results are NumPy's (test_workload_runs_in_onnx_runtime runs these on several sizes)."""
    model = BY_NAME[name].export().to_onnx()
    ops = [n.op_type for n in model.graph.node]
    assert ops.count(op) == 1 and len(ops) < 40, ops


def test_loop_trip_count_follows_the_data():
    """halve's while loop runs as many times as each input needs, inside ONNX Runtime."""
    work = BY_NAME["halve"]
    ep = work.export()
    session = _session(ep.to_onnx())
    for scale in (0.5, 3.0, 1e3, 1e9):
        x = np.full((4, 3), scale)
        (got,) = _run(session, ep, [x])
        np.testing.assert_array_equal(got, work.fn(x.copy()))


ALL_CASES = {**CASES, **EDGE_CASES}


@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_ops_match_numpy(case):
    fn, args = ALL_CASES[case]
    ep = npdynamo.export(fn, *[a.copy() for a in args])
    got = _run(_session(ep.to_onnx()), ep, args)
    with np.errstate(all="ignore"):  # the inf, nan and zero-divisor cases are on purpose
        expected = fn(*[a.copy() for a in args])
    _compare(case, expected, got)


def _op_chain_program(names, value):
    """A program applying the canonical ops ``names`` in turn to an input like ``value``."""
    graph = Graph()
    meta = ArrayMeta(np.shape(value), np.asarray(value).dtype)
    node = x = graph.placeholder("x", meta)
    for name in names:
        previous = node
        node = graph.call_function(REGISTRY[name], (previous,))
        node.meta["val"] = REGISTRY[name].infer(previous.meta["val"])
    graph.output((node,))
    return ExportedProgram(graph, [InputSpec(x.name, "input", meta, ("x",))], [], ["x"],
                           {"tuple": [{"out": 0}]}, {}, {}, name="ops")


@pytest.mark.parametrize("names,value,reference", OP_GRAPHS,
                         ids=["-".join(c[0]) for c in OP_GRAPHS])
def test_ops_no_call_captures_match_numpy(names, value, reference):
    ep = _op_chain_program(names, value)
    value = np.asarray(value)
    (eager,) = ep(value)  # the graph is right: the eager backend gives Python's value
    assert type(eager) is type(reference(value)) and np.array_equal(eager, reference(value))
    got = _run(_session(ep.to_onnx()), ep, [value])
    _compare(names, (np.asarray(reference(value)),), got)


def _compare(case, expected, got):
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
    seen = {name for names, _, _ in OP_GRAPHS for name in names}
    for fn, args in ALL_CASES.values():
        for graph in _graphs(npdynamo.export(fn, *[a.copy() for a in args]).graph):
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


def _signs(x):
    return np.signbit(x)


def test_op_without_onnx_form_is_named():
    ep = npdynamo.export(_signs, np.ones(3))
    with pytest.raises(ExportError, match=r"the op signbit has no ONNX form yet .*"
                       r"test_onnx.py:\d+"):
        ep.to_onnx()
    assert isinstance(ExportError("m"), npdynamo.NpdynamoError)


def test_coverage_is_at_least_90_percent():
    covered = set(onnx_supported_ops()) & set(REGISTRY)  # and index_add, a backward op
    print(f"ONNX coverage: {len(covered)}/{len(REGISTRY)} canonical ops "
          f"({100 * len(covered) / len(REGISTRY):.0f}%)")
    assert len(covered) >= 0.9 * len(REGISTRY)
    missing = set(REGISTRY) - covered
    assert missing == set(NOT_EXPORTED), missing ^ set(NOT_EXPORTED)  # each with its reason


@pytest.mark.parametrize("scale", [3.0, 0.01, 0.0, np.nan, np.inf])
def test_speculated_choice_gives_pythons_choice_on_any_data(scale):
    # npdynamo reruns in Python when max(1.0, peak) is the float; the model computes both
    ep = npdynamo.export(scaled_by_peak, np.ones((4, 3)), dynamic_shapes=[{0: npdynamo.Dim("n")}])
    x = np.random.default_rng(3).standard_normal((7, 3)) * scale
    with np.errstate(all="ignore"):
        expected = scaled_by_peak(x.copy())
    _compare(scale, expected, _run(_session(ep.to_onnx()), ep, [x]))


def _peak_divides_a_number(x):
    return x * (1.0 / max(1.0, x.max()))  # Python's 1.0 / 0.0 would raise


def _peak_meets_float32(x, y):
    return y * max(1.0, x.max())  # float32 with a Python float, float64 with a NumPy scalar


@pytest.mark.parametrize("fn", [_peak_divides_a_number, _peak_meets_float32])
def test_speculated_choice_refused_where_the_python_float_may_differ(fn):
    args = [np.ones(3), np.ones(3, np.float32)][:fn.__code__.co_argcount]
    with pytest.raises(ExportError, match="a Python float and a NumPy scalar may differ"):
        npdynamo.export(fn, *args).to_onnx()


_EDGES = np.array([0.0, -0.0, 1.0, -2.5, 1e300, 1e-310, np.inf, -np.inf, np.nan])


def _complex_edges(dtype):
    re, im = np.meshgrid(_EDGES, _EDGES)
    return (re + 1j * im).ravel().astype(dtype)


def _complex_arithmetic(z, w, x):
    return (z + w, z - x, z * w, z / w, w / x, -z, np.conj(w), z.real, w.imag, np.abs(z),
            2.5j * z - 1, (z - z.real.min() - 1j * z.imag.min()) / np.abs(w).max())


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_arithmetic_is_numpys_on_real_and_imaginary_parts(dtype):
    from npdynamo.export.onnx_pairs import from_model, to_model
    z = _complex_edges(dtype)
    w = np.roll(z, 7)
    x = np.resize(_EDGES, z.shape).astype(np.float32 if dtype == np.complex64 else np.float64)
    ep = npdynamo.export(_complex_arithmetic, z, w, x, dynamic_shapes=[{0: npdynamo.Dim("n")}] * 3)
    session = _session(ep.to_onnx())
    assert session.get_inputs()[0].shape == ["n", 2]  # (real, imag) along a trailing axis
    for k in (len(z), 17):
        args = [z[:k], w[:k], x[:k]]
        with np.errstate(all="ignore"):
            expected = _complex_arithmetic(*args)
        got = session.run(None, {i.name: to_model(a) for i, a in zip(session.get_inputs(), args)})
        for i, (e, g) in enumerate(zip(expected, got)):
            g = from_model(g, e.dtype)
            assert g.dtype == e.dtype and g.shape == e.shape, i
            rtol = 1e-5 if e.real.dtype == np.float32 else 1e-10
            for part in (np.real, np.imag):
                np.testing.assert_allclose(part(g), part(e), rtol=rtol, atol=0, equal_nan=True,
                                           err_msg=f"output {i}")


def test_complex_op_without_onnx_form_is_named():
    with pytest.raises(ExportError, match="the op exp has no ONNX form for complex numbers"):
        npdynamo.export(lambda z: np.exp(z), np.ones(3, complex)).to_onnx()
    with pytest.raises(ExportError, match="the op where has no ONNX form for complex numbers"):
        npdynamo.export(lambda z: np.where(z.real > 0, z, 0), np.ones(3, complex)).to_onnx()


def _complex_loop_and_writes(z, w):
    out = np.zeros(z.shape, dtype=z.dtype)
    for i in range(30):  # a plain Python loop: rolled into the graph, an ONNX Loop
        k = np.argmin(np.abs(z[i] - w))
        out[i] = w[k] * np.conj(z[i])
        z[i + 1] = z[i + 1] + 0.01j * np.sum(out)
    out[30] = 2.0
    out[31] = 1.5j
    return out, z


def test_complex_values_through_loops_indexing_and_writes():
    from npdynamo.export.onnx_pairs import from_model, to_model
    rng = np.random.default_rng(8)
    z = rng.standard_normal(32) + 1j * rng.standard_normal(32)
    w = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    ep = npdynamo.export(_complex_loop_and_writes, z.copy(), w)
    assert any(n.op_type == "Loop" for n in ep.to_onnx().graph.node)
    session = _session(ep.to_onnx())
    expected = _complex_loop_and_writes(z.copy(), w)
    got = session.run(None, {i.name: to_model(a) for i, a in zip(session.get_inputs(), (z, w))})
    for e, g in zip((*expected, expected[1]), got):  # the results, then z written in place
        np.testing.assert_allclose(from_model(g, e.dtype), e, rtol=1e-10)


def _escape(z, c):
    for _ in range(25):  # a masked complex update in a rolled loop
        keep = np.abs(z) < 4.0
        z[keep] = z[keep] ** 2 + c[keep]
    return z, np.abs(z) < 4.0


def test_complex_masked_update_in_a_loop():
    from npdynamo.export.onnx_pairs import from_model, to_model
    rng = np.random.default_rng(2)
    c = (rng.standard_normal((6, 7)) + 1j * rng.standard_normal((6, 7))) * 0.8
    ep = npdynamo.export(_escape, np.zeros_like(c), c)
    session = _session(ep.to_onnx())
    expected = _escape(np.zeros_like(c), c)
    got = session.run(None, {i.name: to_model(a) for i, a in
                             zip(session.get_inputs(), (np.zeros_like(c), c))})
    np.testing.assert_allclose(from_model(got[0], np.complex128), expected[0], rtol=1e-10)
    np.testing.assert_array_equal(got[1], expected[1])
    with pytest.raises(ExportError, match=r"complex \*\* 5"):
        npdynamo.export(lambda z, m: _power_five(z, m), c, np.abs(c) < 1).to_onnx()


def _power_five(z, m):
    z[m] = z[m] ** 5
    return z
