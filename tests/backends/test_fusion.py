"""Fusion groups of captured workloads: GELU, softmax and layernorm are ONE kernel each; BLAS and
shape ops stay NumPy calls; joins never create cycles; leading-axis reductions are not fused."""

from __future__ import annotations

import numpy as np

import npdynamo
from benchmarks import workloads
from npdynamo import ops
from npdynamo.backends.numba.backend import prepare_graph
from npdynamo.backends.numba.codegen import generate_kernel
from npdynamo.backends.numba.fusion import FusionGroup, partition
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta
from tests.differential import CountingBackend


def _capture(fn, *args):
    backend = CountingBackend()
    npdynamo.compile(fn, backend=backend)(*args)
    assert backend.count == 1
    return backend.graphs[0].graph


def _groups(fn, *args):
    return partition(prepare_graph(_capture(fn, *args)))


X = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)


def test_gelu_is_one_kernel_without_power():
    part = _groups(workloads.gelu, X[0])
    assert len(part.groups) == 1 and not part.not_fused
    ops_ = part.groups[0].op_names
    assert "power" not in ops_ and "tanh" in ops_  # x**3 became products
    assert len(part.steps) == 1


def test_softmax_is_one_row_kernel():
    part = _groups(workloads.softmax, X)
    (group,) = part.groups
    assert group.op_names == ("max", "subtract", "exp", "sum", "divide")
    assert group.reduce_axes == (1,) and group.domain == (8, 16)
    source = generate_kernel(group, parallel=True).source
    assert source.count("def kernel(") == 1 and "prange" in source
    assert "exp_f32(" in source and "np.exp(" not in source  # no scalar libm call
    # the exponentials are kept in the output buffer, not recomputed
    assert source.count("exp_f32(") == 1


def test_layernorm_is_one_kernel():
    part = _groups(workloads.layernorm, X, X[0], X[0])
    (group,) = part.groups
    assert {"mean", "sqrt", "divide", "multiply", "add"} <= set(group.op_names)
    assert [type(s) for s in part.steps] == [FusionGroup]


def test_adam_over_a_dict_is_one_kernel_per_shape():
    params = {"w": np.abs(X), "b": np.abs(X[0])}
    like = lambda: {k: v.copy() for k, v in params.items()}  # noqa: E731
    part = _groups(workloads.adam, params, like(), like(), like(), 3)
    assert len(part.groups) == 2  # one per parameter shape, each with all six outputs' work
    assert sorted(len(g.outputs) for g in part.groups) == [3, 3]


def test_matmul_splits_kernels_and_is_not_fused():
    w1, b1 = np.ones((16, 4), np.float32), np.zeros(4, np.float32)
    w2, b2 = np.ones((4, 3), np.float32), np.zeros(3, np.float32)
    part = _groups(workloads.mlp_forward, X, w1, b1, w2, b2)
    names = [s.op_names if isinstance(s, FusionGroup) else s.target.name for s in part.steps]
    assert names[0] == "matmul" and names[2] == "matmul"
    assert names[1] == ("add", "maximum")
    assert names[3][:2] == ("add", "max") and names[3][-1] == "divide"  # bias + softmax


def _graph(*shapes):
    g = Graph()
    return g, [g.placeholder(f"x{i}", ArrayMeta(s, np.float64)) for i, s in enumerate(shapes)]


def _call(g, name, *args, **kwargs):
    op = ops.lookup(name)
    node = g.call_function(op, args, kwargs)
    node.meta["val"] = op.infer(*(a.meta["val"] if hasattr(a, "meta") else a for a in args),
                                **kwargs)
    return node


def test_no_cycle_through_a_numpy_call():
    g, (x,) = _graph((4, 4))
    a = _call(g, "exp", x)
    t = _call(g, "transpose", a)  # a NumPy call reading the group...
    b = _call(g, "add", t, x)  # ...so this cannot join a's group
    g.output((b,))
    part = partition(g)
    assert len(part.groups) == 2
    order = [s.op_names if isinstance(s, FusionGroup) else s.target.name for s in part.steps]
    assert order == [("exp",), "transpose", ("add",)]


def test_leading_axis_reduction_stays_numpy():
    g, (x,) = _graph((4, 5))
    s = _call(g, "sum", x, axis=0)
    r = _call(g, "multiply", s, 2.0)
    g.output((r,))
    part = partition(g)
    assert [n.name for n in part.not_fused] == ["sum"]
    assert "trailing" in part.not_fused[s]


def test_unrelated_elementwise_values_share_a_kernel():
    g, (x, y) = _graph((6,), (6,))
    a = _call(g, "multiply", x, 2.0)
    b = _call(g, "add", y, 1.0)
    g.output((a, b))
    assert len(partition(g).groups) == 1


def test_float16_and_unknown_ops_run_in_numpy():
    g = Graph()
    x = g.placeholder("x", ArrayMeta((3,), np.float16))
    y = g.placeholder("y", ArrayMeta((3,), np.float32))
    a = _call(g, "add", x, 1.0)
    rem = _call(g, "cumsum", y)  # a scan: no kernel code
    g.output((a, rem))
    part = partition(g)
    assert not part.groups
    assert "float16" in part.not_fused[a] and "NumPy" in part.not_fused[rem]


def test_a_training_step_graph_fuses_without_a_cycle():
    """A joint forward/backward graph once produced a kernel cycle (frozen dependency sets
    missed edges added by later joins); it must now compile into kernels."""
    import warnings

    import numpy as np

    import npdynamo

    def loss_fn(p, x):
        h = np.maximum(x @ p["w1"] + p["b1"], 0.0)
        z = h @ p["w2"]
        z = z - z.max(axis=1, keepdims=True)
        return -(z - np.log(np.exp(z).sum(axis=1, keepdims=True))).mean()

    def step(p, x):
        loss, g = npdynamo.value_and_grad(loss_fn)(p, x)
        for k in p:
            p[k] -= 0.1 * g[k]
        return loss

    rng = np.random.default_rng(0)
    p = {"w1": rng.standard_normal((6, 8)), "b1": np.zeros(8), "w2": rng.standard_normal((8, 3))}
    x = rng.standard_normal((5, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn
        out = npdynamo.explain(step, backend="numba")({k: v.copy() for k, v in p.items()}, x)
    assert out.graph_count == 1 and not out.backend_reports[0].fell_back


def _norm_rows(x, y):
    return np.linalg.norm(x - y[:, None], axis=2), (x * x).sum()


def test_a_reduction_over_at_most_a_block_has_no_block_loop():
    """A norm over each point's two coordinates folds them in place; a sum over a long axis
    still folds blocks (float32 blocks are added in float64), and the results match NumPy's
    within the sums' tolerance."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3000, 2)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    part = _groups(_norm_rows, x, y)
    sources = {g.op_names: generate_kernel(g, parallel=False).source for g in part.groups}
    (norm,) = [s for ops_, s in sources.items() if "norm" in ops_]
    (total,) = [s for ops_, s in sources.items() if "sum" in ops_]
    assert "for b2 in range(" not in norm and "radd(" in norm
    assert "for b1 in range(" in total and "np.float64(part" in total
    want = _norm_rows(x, y)
    got = npdynamo.compile(_norm_rows, backend="numba")(x, y)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
