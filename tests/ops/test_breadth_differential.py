"""Every public name of the breadth families, plain vs compiled with ``fullgraph=True`` (one
graph, no break): bitwise on the eager backend, at the documented tolerances on numba.

Also: the k-means step of issue 14 is one graph whose ``norm`` the numba backend fuses,
``supported_functions()`` and the table in docs/capture.md agree, and ``empty``/``empty_like``
allocate zeros (no uninitialised memory can make results differ).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npdynamo
from npdynamo.ops import REGISTRY, ArrayMeta, table
from tests.autograd.test_vjp_rules import check_rule
from tests.backends.compare import assert_close, check_one_graph
from tests.differential import check_same

rng = np.random.default_rng(7)
V = rng.standard_normal(6)
V[2] = np.nan
W = rng.standard_normal(6)
M = rng.standard_normal((3, 4))
S = rng.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = S @ S.T
B = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
INTS = np.arange(12).reshape(3, 4) % 5
K = np.array([2, 0, 1, 1])
ROT = B + np.array([[0.0, 5, 0], [-5, 0, 0], [0, 0, 0]])  # complex eigenvalues

# public name -> (function calling it, arguments)
CASES = {
    "np.roll": (lambda x: np.roll(x, -1, axis=1) + np.roll(x, 2), (M,)),
    "np.tril": (lambda x: np.tril(x, -1), (M,)),
    "np.triu": (lambda x: np.triu(x) * 2, (M,)),
    "np.sort": (lambda x: np.sort(x, axis=0), (M,)),
    "np.argsort": (lambda x: np.argsort(x, kind="stable"), (W,)),
    "ndarray.argsort": (lambda x: x.argsort(axis=0), (M,)),
    "np.partition": (lambda x: np.partition(x, 2)[2], (W,)),
    "np.argpartition": (lambda x: x[np.argpartition(x, 1)][1], (W,)),
    "ndarray.argpartition": (lambda x: x.argpartition(3)[3], (W,)),
    "np.nan_to_num": (lambda x: np.nan_to_num(x, nan=-1.0), (V,)),
    "np.take": (lambda x: np.take(x, [0, 2, 2], axis=1), (M,)),
    "ndarray.take": (lambda x, k: x.take(k), (M, K)),
    "np.take_along_axis": (lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
                           (M,)),
    "np.searchsorted": (lambda x, y: np.searchsorted(np.sort(x), y), (W, M)),
    "ndarray.searchsorted": (lambda x: np.sort(x).searchsorted(0.5, side="right"), (W,)),
    "np.repeat": (lambda x: np.repeat(x, 2, axis=0), (M,)),
    "ndarray.repeat": (lambda x: x.repeat([1, 0, 2, 1], axis=1), (M,)),
    "np.tile": (lambda x: np.tile(x, (2, 1)), (M,)),
    "np.pad": (lambda x: np.pad(x, ((1, 0), (2, 1))) + np.pad(x, ((1, 0), (1, 2)), mode="edge")
               + np.pad(x, 1, mode="reflect").sum(), (M,)),
    "np.diagflat": (lambda x: np.diagflat(x, -1), (M,)),
    "np.append": (lambda x, y: np.append(x, y) + 1, (M, W)),
    "np.ediff1d": (lambda x: np.ediff1d(x), (M,)),
    "np.tri": (lambda x: np.tri(3, 4, 1) * x, (M,)),
    "np.diagonal": (lambda x: np.diagonal(x, 1), (M,)),
    "ndarray.diagonal": (lambda x: x.diagonal() * 2, (M,)),
    "np.trace": (lambda x: np.trace(x, -1), (M,)),
    "ndarray.trace": (lambda x: x.trace(), (M,)),
    "np.hstack": (lambda x, y: np.hstack([x, y, x]), (W, W)),
    "np.vstack": (lambda x, y: np.vstack((x, y)), (W, W)),
    "np.dstack": (lambda x, y: np.dstack([x, y]), (M, M)),
    "np.column_stack": (lambda x, y: np.column_stack([x, y]), (W, W)),
    "np.cumsum": (lambda x: np.cumsum(x, axis=1) + np.cumsum(x).sum(), (M,)),
    "ndarray.cumsum": (lambda x: x.cumsum(0), (M,)),
    "np.cumprod": (lambda x: np.cumprod(x, axis=0), (M,)),
    "ndarray.cumprod": (lambda x: x.cumprod(), (W,)),
    "np.nancumsum": (lambda x: np.nancumsum(x), (V,)),
    "np.nancumprod": (lambda x: np.nancumprod(x), (V,)),
    "np.cumulative_sum": (lambda x: np.cumulative_sum(x, axis=1, include_initial=True), (M,)),
    "np.cumulative_prod": (lambda x: np.cumulative_prod(x), (W,)),
    "np.diff": (lambda x: np.diff(x, axis=0) + np.diff(x, 2, prepend=0, append=1)[:2], (M,)),
    "np.nansum": (lambda x: np.nansum(x), (V,)),
    "np.nanprod": (lambda x: np.nanprod(x), (V,)),
    "np.nanmean": (lambda x: np.nanmean(x), (V,)),
    "np.nanmax": (lambda x: np.nanmax(x), (V,)),
    "np.nanmin": (lambda x: np.nanmin(x), (V,)),
    "np.nanvar": (lambda x: np.nanvar(x, ddof=1), (V,)),
    "np.nanstd": (lambda x: np.nanstd(x), (V,)),
    "np.nanargmax": (lambda x: np.nanargmax(x), (V,)),
    "np.nanargmin": (lambda x: np.nanargmin(x), (V,)),
    "np.median": (lambda x: np.median(x, axis=0), (M,)),
    "np.nanmedian": (lambda x: np.nanmedian(x), (V,)),
    "np.percentile": (lambda x: np.percentile(x, [10.0, 90.0], axis=1), (M,)),
    "np.quantile": (lambda x: np.quantile(x, 0.3), (M,)),
    "np.nanpercentile": (lambda x: np.nanpercentile(x, 50.0), (V,)),
    "np.nanquantile": (lambda x: np.nanquantile(x, 0.25), (V,)),
    "np.count_nonzero": (lambda x: np.count_nonzero(x > 0) + np.count_nonzero(x, axis=0),
                         (INTS,)),
    "np.ptp": (lambda x: np.ptp(x, axis=1), (M,)),
    "np.average": (lambda x: np.average(x, axis=0), (M,)),
    "np.cov": (lambda x: np.cov(x), (M,)),
    "np.corrcoef": (lambda x: np.corrcoef(x, rowvar=False), (M,)),
    "np.linalg.norm": (lambda x: np.linalg.norm(x) + np.linalg.norm(x, 1, axis=0).sum(), (M,)),
    "np.linalg.vector_norm": (lambda x: np.linalg.vector_norm(x, axis=1), (M,)),
    "np.linalg.matrix_norm": (lambda x: np.linalg.matrix_norm(x), (B,)),
    "np.linalg.det": (lambda x: np.linalg.det(x), (B,)),
    "np.linalg.inv": (lambda x: np.linalg.inv(x), (B,)),
    "np.linalg.solve": (lambda a, b: np.linalg.solve(a, b[0, :3]) + np.linalg.solve(a, a).sum(),
                        (S, M)),
    "np.linalg.cholesky": (lambda x: np.linalg.cholesky(x), (SPD,)),
    "np.linalg.pinv": (lambda x: np.linalg.pinv(x), (M,)),
    "np.linalg.eigvalsh": (lambda x: np.linalg.eigvalsh(x), (SPD,)),
    "np.linalg.eig": (lambda x: np.linalg.eig(x) + np.linalg.eig(x[0]), (ROT,)),
    "np.linalg.svdvals": (lambda x: np.linalg.svdvals(x), (M,)),
    "np.linalg.matrix_power": (lambda x: np.linalg.matrix_power(x, 3), (S,)),
    "np.linalg.trace": (lambda x: np.linalg.trace(x), (B,)),
    "np.linalg.diagonal": (lambda x: np.linalg.diagonal(x, offset=1), (B,)),
    "np.linalg.cross": (lambda x, y: np.linalg.cross(x, y), (S, SPD)),
    "np.linalg.matmul": (lambda x, y: np.linalg.matmul(x, y), (S, M)),
    "np.kron": (lambda x, y: np.kron(x, y), (S, W)),
    "np.cross": (lambda x, y: np.cross(x, y, axis=0), (S, SPD)),
    "np.inner": (lambda x, y: np.inner(x, y), (M, M)),
    "np.vdot": (lambda x, y: np.vdot(x, y), (M, M)),
    "np.convolve": (lambda x, y: np.convolve(x, y[:3], mode="same"), (W, W)),
    "np.correlate": (lambda x, y: np.correlate(x, y[:2]), (W, W)),
    "np.polyval": (lambda x: np.polyval([1.0, -2.0, 0.5], x), (M,)),
    "np.interp": (lambda x: np.interp(x, [-1.0, 0.0, 2.0], [0.0, 1.0, -1.0]), (M,)),
    "np.isclose": (lambda x, y: np.isclose(x, y + 1e-9), (W, W)),
    "np.round": (lambda x: np.round(x, 2), (M,)),
    "np.around": (lambda x: np.around(x * 100, -1), (M,)),
    "ndarray.round": (lambda x: x.round(1), (M,)),
    "np.sinc": (lambda x: np.sinc(x), (M,)),
    "np.i0": (lambda x: np.i0(x), (M,)),
    "np.heaviside": (lambda x: np.heaviside(x, 0.5), (M,)),
    "np.gcd": (lambda x: np.gcd(x, 6), (INTS,)),
    "np.lcm": (lambda x: np.lcm(x, 4), (INTS,)),
    "np.nextafter": (lambda x: np.nextafter(x, 0.0), (M,)),
    "np.degrees": (lambda x: np.degrees(x), (M,)),
    "np.radians": (lambda x: np.radians(x), (M,)),
    "np.empty": (lambda x: _filled(np.empty((3, 4)), x), (M,)),
    "np.empty_like": (lambda x: _filled(np.empty_like(x), x), (M,)),
}


def _filled(buf, x):
    buf[...] = x * 2  # written before it is read
    return buf + 1


#: the cases whose result is only a view of the argument: no graph (rebuilt from the argument)
VIEWS_ONLY = {"np.diagonal", "np.linalg.diagonal"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_and_compiled_agree(name):
    check_one_graph(*CASES[name], graphs=0 if name in VIEWS_ONLY else 1)


def test_every_case_is_a_supported_name():
    assert set(CASES) <= set(table.supported_functions())


def test_supported_functions_count_and_order():
    names = npdynamo.supported_functions()
    assert names == sorted(set(names)) and len(names) >= 250
    assert {"np.abs", "np.absolute", "np.linalg.norm", "ndarray.cumsum"} <= set(names)


def test_readme_table_is_up_to_date():
    page = Path(__file__).resolve().parents[2] / "docs" / "capture.md"
    text = page.read_text()
    assert table.updated(text) == text, "run: make readme-table"


def test_empty_allocates_zeros_on_every_backend():
    def read_before_write(x):
        return np.empty(3) + np.empty_like(x)

    for backend in ("eager", "numba"):
        out = npdynamo.compile(read_before_write, backend=backend)(np.ones(3))
        assert np.array_equal(out, np.zeros(3))


def kmeans_step(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def test_kmeans_step_is_one_graph_with_norm_fused():
    X = rng.standard_normal((500, 2))
    means = X[:3].copy()
    check_same(kmeans_step, X, means,
               compiled=npdynamo.compile(kmeans_step, backend="eager", fullgraph=True), graphs=1,
               breaks=0)
    report = npdynamo.explain(kmeans_step, backend="numba")(X, means)
    assert report.graph_count == 1 and report.graph_break_count == 0
    (numba,) = report.backend_reports
    assert ("subtract", "norm") in numba.groups, numba
    np.testing.assert_array_equal(report.result, kmeans_step(X, means))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, True), ((0, 1), False), (-1, False)])
def test_fused_norm_matches_numpy(dtype, axis, keepdims):
    def f(x):
        return np.linalg.norm(x * 2, axis=axis, keepdims=keepdims)

    x = (rng.standard_normal((3, 5)) * 4).astype(dtype)
    compiled = npdynamo.compile(f, backend="numba", fullgraph=True)
    assert_close(compiled(x), f(x))


# -- boolean-mask assignment (x[mask] = v: a static shape, whatever the mask selects) --------


def mask_assign(x, m, row):
    x[x < 0] = 0
    y = x * 2
    y[m] = np.float32(7)
    z = np.ones((3, 4))
    z[np.array([True, False, True])] = row
    return y, z


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_boolean_mask_assignment_is_one_graph(backend):
    x = rng.standard_normal((3, 4))
    compiled = npdynamo.compile(mask_assign, backend=backend, fullgraph=True)
    check_same(mask_assign, x, x > 0.5, x[0], compiled=compiled, graphs=1, breaks=0)


def test_mask_assignment_whose_fit_depends_on_the_mask_is_a_break():
    def f(x, m, v):
        x[m] = v
        return x

    x = rng.standard_normal((3, 4))
    report = npdynamo.explain(f)(x.copy(), x > 0, np.ones(int((x > 0).sum())))
    assert report.graph_break_count == 1
    assert "depends on how many elements the mask selects" in str(report)
    check_same(f, x, x > 0, np.ones(int((x > 0).sum())), graphs=0, breaks=1)


@pytest.mark.parametrize("full_mask, value_shape", [
    (True, ()), (True, (1,)), (False, ()), (False, (4,)), (False, (1, 4)), (False, (1,))])
def test_mask_assignment_vjp_matches_finite_differences(full_mask, value_shape):
    x = rng.standard_normal((3, 4))
    mask = x > 0.2 if full_mask else np.array([True, False, True])
    value = rng.standard_normal(value_shape)
    assert REGISTRY["setitem"].infer(ArrayMeta.of(x), (ArrayMeta.of(mask),),
                                     ArrayMeta.of(np.asarray(value))) == ArrayMeta.of(x)
    check_rule("setitem", (x, (mask,), value), {})


def test_mask_assignment_rule_errors_match_numpy():
    x = ArrayMeta((3, 4), np.dtype(np.float64))
    with pytest.raises(TypeError):  # NumPy: a full-dimension mask takes a 0-d or 1-d value
        REGISTRY["setitem"].infer(x, (ArrayMeta((3, 4), np.dtype(bool)),),
                                  ArrayMeta((1, 1), np.dtype(np.float64)))
    with pytest.raises(IndexError):
        REGISTRY["setitem"].infer(x, (ArrayMeta((2,), np.dtype(bool)),), 1.0)
    with pytest.raises(OverflowError):
        REGISTRY["setitem"].infer(ArrayMeta((3,), np.dtype(np.int8)),
                                  (ArrayMeta((3,), np.dtype(bool)),), 1000)


def test_causal_mask_loss_differentiates_through_compile():
    def loss(q, k):
        scores = np.tril(q @ k.T)
        return np.sum(np.cumsum(scores, axis=1) ** 2) + np.linalg.norm(q)

    q, k = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    got = npdynamo.compile(npdynamo.grad(loss, argnums=(0, 1)), backend="eager")(q, k)
    want = npdynamo.grad(loss, argnums=(0, 1))(q, k)
    eps = 1e-6
    d = rng.standard_normal(q.shape)
    fd = (loss(q + eps * d, k) - loss(q - eps * d, k)) / (2 * eps)
    assert abs(np.sum(want[0] * d) - fd) < 1e-5 * max(1.0, abs(fd))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_eig_whose_eigenvalues_are_all_real_reruns_in_python(backend):
    # NumPy returns real arrays then, where the graph assumed complex ones
    def f(x):
        w, v = np.linalg.eig(x)
        return w * 2, v, np.linalg.eig(x.astype(np.float32))

    compiled = npdynamo.compile(f, backend=backend, fullgraph=True)
    for x in (SPD, ROT[0], SPD):  # real, complex, real again
        check_same(f, x, compiled=compiled, graphs=1, breaks=0)
    report = npdynamo.explain(f)(SPD)
    assert (report.graph_count, report.graph_break_count) == (1, 0)


def test_named_tuples_concatenate_into_plain_tuples():
    def f(x):
        r = np.linalg.qr(x)
        return r + (), () + r, r * 1, r + r, 2 * r, (r + ())[0]

    check_same(f, M, compiled=npdynamo.compile(f, fullgraph=True), graphs=1, breaks=0)


def eig_loss(a):
    return np.sum(np.linalg.eig(a).eigenvalues.real)


@pytest.mark.parametrize("matrix", [SPD, ROT[0]])
def test_eig_has_no_gradient(matrix):
    for grad in (npdynamo.grad(eig_loss), npdynamo.compile(npdynamo.grad(eig_loss)),
                 npdynamo.grad(npdynamo.compile(eig_loss))):
        with pytest.raises(npdynamo.GradError, match="np.linalg.eig is not differentiable"):
            grad(matrix)


def qr_loss(tall, wide):
    q, r = np.linalg.qr(tall)
    q2, r2 = np.linalg.qr(wide)
    return np.sum(q[:, 0] * np.arange(4.0)) + np.sum(r**2) + np.sum(q2 @ r2[:, 1:] * r2[:, :-1])


def lstsq_loss(a, b):
    x, residuals, _rank, s = np.linalg.lstsq(a, b)
    return np.sum(x * np.array([1.0, -2.0])) + np.sum(residuals) + s[0]


@pytest.mark.parametrize("loss, args", [
    (qr_loss, (M.T + np.eye(4, 3) * 3, M[:2] + np.eye(2, 4) * 3)),
    (lstsq_loss, (np.vstack([M[:, :2], M[:2, 2:]]) + np.eye(5, 2) * 2, rng.standard_normal(5))),
])
@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_qr_and_lstsq_differentiate_through_compile(loss, args, backend):
    # (the AOT path: a multi-result op is differentiated over the captured graph)
    grads = npdynamo.grad(npdynamo.compile(loss, backend=backend), argnums=(0, 1))(*args)
    eps = 1e-6
    for i, g in enumerate(grads):
        for _ in range(3):
            d = rng.standard_normal(args[i].shape)
            plus = [a + eps * d if j == i else a for j, a in enumerate(args)]
            minus = [a - eps * d if j == i else a for j, a in enumerate(args)]
            fd = (loss(*plus) - loss(*minus)) / (2 * eps)
            assert abs(np.sum(g * d) - fd) < 1e-6 * max(1.0, abs(fd)), (i, fd, np.sum(g * d))


def arrays_of_arrays(a, b):
    return np.array([a, b * 2, a]), np.asarray([a.sum(), 1.5, b.max()]), np.array((a, 1))


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_np_array_of_a_list_of_arrays_is_one_graph(backend):
    a, b = np.arange(3.0), np.ones(3, np.float32)
    compiled = npdynamo.compile(arrays_of_arrays, backend=backend, fullgraph=True)
    check_same(arrays_of_arrays, a[:1].reshape(()), b[:1].reshape(()), compiled=compiled,
               graphs=1, breaks=0)
    compiled = npdynamo.compile(lambda x, y: np.array([x, y]), backend=backend, fullgraph=True)
    check_same(lambda x, y: np.array([x, y]), a, b, compiled=compiled, graphs=1, breaks=0)


def test_np_array_of_mismatched_arrays_raises_numpys_error():
    def f(a, c):
        return np.array([a, c])

    check_same(f, np.arange(3.0), np.ones(4), graphs=0, breaks=0)  # reruns in Python


# -- functions returning views: graph breaks until capture tracks writes through their views ---

VIEWS = {
    "flip": lambda x: np.flip(x, 1),
    "fliplr": np.fliplr,
    "flipud": np.flipud,
    "rot90": lambda x: np.rot90(x, 3),
    "atleast_1d": np.atleast_1d,
    "atleast_2d": np.atleast_2d,
    "atleast_3d": np.atleast_3d,
}
#: (graphs, breaks): a flip's graph breaks at the write through it; atleast_*d is not captured
#: (a break). A resume function given y and x that overlap runs in Python (one more break): the
#: flips' and atleast_3d's (a 3-d view of M); atleast_1d and _2d return M itself: one graph
VIEW_COUNTS = {"flip": (1, 2), "fliplr": (1, 2), "flipud": (1, 2), "rot90": (1, 2),
               "atleast_1d": (1, 1), "atleast_2d": (1, 1), "atleast_3d": (0, 2)}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_returning_functions_stay_exact(name):
    view = VIEWS[name]

    def write_through(x):
        y = view(x)
        y[...] = y * 2
        x[0, 0] = 7.0
        return y + 0

    report = npdynamo.explain(write_through)(M.copy())
    assert any(name in str(r) or "through a view made by" in str(r)
               for r in report.break_reasons)
    graphs, breaks = VIEW_COUNTS[name]
    check_same(write_through, M, graphs=graphs, breaks=breaks)
    # flips and rot90 are captured as view ops (a write through them is the break above);
    # atleast_*d (may return the argument itself) are not
    captured = name in ("flip", "fliplr", "flipud", "rot90")
    assert (f"np.{name}" in table.supported_functions()) == captured


def diag_of_diag(s, M):
    D = np.diag(np.diag(s))  # a vector's matrix, then that matrix's diagonal: a new array
    d = np.diag(M)  # a read-only view of M: sees the write below
    M[0, 0] = 7.0
    return D, d + 0, np.diag(s, 1), np.diag(M, -1) * 2, np.diag(s[:2], -2)


def write_into_diag_view(M):
    d = np.diag(M)
    d[0] = 1.0  # NumPy: assignment destination is read-only
    return M


def diag_of_a_cube(x):
    return np.diag(x)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_diag_is_captured(backend):
    s = np.arange(1.0, 4.0)
    compiled = npdynamo.compile(diag_of_diag, backend=backend, fullgraph=True)
    check_same(diag_of_diag, s, M.copy(), compiled=compiled, graphs=1, breaks=0)
    # the write into the read-only view breaks, and raises as NumPy does
    check_same(write_into_diag_view, M.copy(), backend=backend, graphs=0, breaks=1)
    check_same(diag_of_a_cube, np.ones((2, 2, 2)), backend=backend, graphs=0, breaks=0)
    assert "np.diag" in table.supported_functions()


def percentiles_by_ints(v):
    return (np.percentile(v, 75), np.percentile(v, [0, 50, 100], axis=0),
            np.nanpercentile(v, 33, keepdims=True), np.percentile(v, (25, 75.5)))


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int64"])
def test_percentile_with_int_q_is_captured(backend, dtype):
    v = (np.arange(12) * 5 % 12).reshape(3, 4).astype(dtype)
    compiled = npdynamo.compile(percentiles_by_ints, backend=backend, fullgraph=True)
    check_same(percentiles_by_ints, v, compiled=compiled, graphs=1, breaks=0)


def quantile_by_int(v):
    return np.quantile(v, 1)  # of ints, NumPy interpolates in the array's dtype: a break


def percentile_out_of_range(v):
    return np.percentile(v, 101)


def test_int_q_elsewhere_matches_numpy():
    check_same(quantile_by_int, np.arange(5), graphs=0, breaks=1)
    check_same(percentile_out_of_range, np.arange(5.0), graphs=0, breaks=0)  # reruns in Python


def linalg_of_singular(x):
    return np.linalg.inv(x * 2)


def take_out_of_bounds_after_a_write(x, i):
    x[0] = 3.0
    return np.take(x, i) + 1


def argmax_of_all_nan(x):
    return np.nanargmax(x * 1)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_runtime_errors_inside_a_graph_are_numpys(backend):
    """Data-dependent errors (a singular matrix, an index array out of range, an all-NaN slice)
    are raised by the NumPy call inside the graph: same exception, same message, and writes
    made before the failing call are kept, as in Python."""
    check_same(linalg_of_singular, np.ones((2, 2)), backend=backend, graphs=1, breaks=0)
    check_same(take_out_of_bounds_after_a_write, np.ones(3), np.array([5]), backend=backend,
               graphs=1, breaks=0)
    check_same(argmax_of_all_nan, np.full(3, np.nan), backend=backend, graphs=1, breaks=0)
