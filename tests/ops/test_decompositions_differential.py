"""np.linalg's multi-result functions (slogdet, qr, eigh, svd, lstsq) in one graph: plain vs
compiled with ``fullgraph=True`` (bitwise on eager, within tolerance on numba), the named tuples
NumPy returns (types, fields), errors, a rank-deficient ``lstsq`` (the graph reruns in Python)
and the ``GradError`` their missing VJPs give."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.errors import GradError
from tests.backends.compare import check_one_graph
from tests.differential import check_same

rng = np.random.default_rng(3)
A = rng.standard_normal((5, 3))
SPD = A.T @ A + np.eye(3)
STACK = rng.standard_normal((2, 3, 3))
Y = rng.standard_normal(5)

CASES = {
    "slogdet": (lambda s: np.linalg.slogdet(s), (SPD,)),
    "slogdet_fields": (lambda s: np.linalg.slogdet(s).logabsdet * 2, (STACK,)),
    "slogdet_unpacked": (lambda s: (lambda sign, logdet: sign * np.exp(logdet))(
        *np.linalg.slogdet(s)), (STACK,)),
    "eigh": (lambda s: np.linalg.eigh(s), (SPD,)),
    "eigh_upper": (lambda s: np.linalg.eigh(s + 0, UPLO="U").eigenvectors.sum(), (STACK,)),
    "svd": (lambda a: np.linalg.svd(a), (A,)),
    "svd_reduced": (lambda a: np.linalg.svd(a, full_matrices=False).U @ np.eye(3), (A,)),
    "svd_values": (lambda a: np.linalg.svd(a, compute_uv=False), (A,)),
    "svd_hermitian": (lambda s: np.linalg.svd(s, hermitian=True)[1], (SPD,)),
    "qr": (lambda a: np.linalg.qr(a), (A,)),
    "qr_complete": (lambda a: np.linalg.qr(a.T, mode="complete").Q * 1, (A,)),
    "qr_r": (lambda a: np.linalg.qr(a, mode="r"), (A,)),
    "qr_raw": (lambda a: np.linalg.qr(a, mode="raw"), (STACK,)),
    "lstsq": (lambda a, y: np.linalg.lstsq(a, y, rcond=None), (A, Y)),
    "lstsq_wide": (lambda a, y: np.linalg.lstsq(a.T, y[:3])[0] + 1, (A, Y)),
    "lstsq_matrix": (lambda a, y: np.linalg.lstsq(a, np.stack([y, y * 2], 1)), (A, Y)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_and_compiled_agree_in_one_graph(name):
    check_one_graph(*CASES[name])


def rank_deficient(a, y):
    x, residuals, rank, s = np.linalg.lstsq(a, y, rcond=None)
    return x * 2, residuals, rank


def test_a_rank_deficient_lstsq_gives_numpys_results():
    """The rule assumes full rank for a tall matrix; at a lower rank the graph reruns in
    Python, whose residuals are empty."""
    compiled = npdynamo.compile(rank_deficient, fullgraph=True)
    check_same(rank_deficient, A, Y, compiled=compiled, graphs=1, breaks=0)
    low = A.copy()
    low[:, 2] = low[:, 1]
    check_same(rank_deficient, low, Y, compiled=compiled, graphs=1, breaks=0)
    assert compiled(low, Y)[1].shape == (0,)


ERRORS = [
    lambda a: np.linalg.slogdet(a),
    lambda a: np.linalg.eigh(a[0]),
    lambda a: np.linalg.eigh(a, UPLO="X"),
    lambda a: np.linalg.svd(a, hermitian=True),
    lambda a: np.linalg.lstsq(a, a[:3]),
    lambda a: np.linalg.lstsq(a[0], a[0]),
    lambda a: np.linalg.qr(a[0]),
    lambda a: np.linalg.slogdet(a.astype(np.float16)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_are_numpys(i):
    check_same(ERRORS[i], A, graphs=0, breaks=0)  # the frame reruns in Python for the error


def test_a_deprecated_qr_mode_is_a_break():
    def deprecated_mode(a):
        return np.linalg.qr(a, mode="full")

    with pytest.warns(DeprecationWarning):
        check_same(deprecated_mode, A, graphs=0, breaks=1)
        assert npdynamo.explain(deprecated_mode)(A).graph_break_count == 1


def test_an_unknown_qr_mode_raises_numpys_error():
    check_same(lambda a: np.linalg.qr(a, mode="bogus"), A, graphs=0, breaks=1)


@pytest.mark.parametrize("fn", [
    lambda s: np.linalg.svd(s[:2])[0].sum(),  # full_matrices: U's extra columns not unique
    lambda s: np.linalg.qr(s[:, :2], mode="complete").Q.sum(),  # the same for Q's
    lambda s: np.linalg.qr(s, mode="raw")[0].sum(),  # Householder reflectors
    lambda s: np.linalg.lstsq(s[:2], s[0, :2])[0].sum(),  # a wide matrix: minimum norm
])
def test_gradients_through_svd_qr_lstsq_raise_grad_error(fn):
    with pytest.raises(GradError, match="not unique|no gradient rule|only inside compiled"):
        npdynamo.grad(npdynamo.compile(fn))(SPD)


def _finite_differences(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (f(up) - f(down)) / (2 * eps)
    return grad


LOSSES = {
    "slogdet": (lambda s: np.linalg.slogdet(s).logabsdet * 2.0, SPD),
    "slogdet_stack": (lambda b: np.sum(np.linalg.slogdet(b)[1] * np.array([1.0, -2.0])), STACK),
    "eigh_values": (lambda s: np.sum(np.linalg.eigh(s)[0] ** 2), SPD),
    "eigh_vectors": (lambda s: np.sum(np.linalg.eigh(s).eigenvectors[:, -1] ** 2
                                      * np.arange(3.0)), SPD + np.diag(np.arange(3.0))),
    "eigh_upper": (lambda s: np.sum(np.linalg.eigh(s, UPLO="U")[0] * np.arange(3.0)), SPD),
    "svd_values": (lambda a: np.sum(np.linalg.svd(a)[1] ** 2 * np.arange(1.0, 4.0)), A),
    "svd_reduced": (lambda a: np.sum(np.linalg.svd(a, full_matrices=False).U[:, :2] ** 3)
                    + np.sum(np.linalg.svd(a, full_matrices=False).Vh ** 3), A),
    "svd_wide": (lambda a: np.sum(np.linalg.svd(a.T, full_matrices=False)[2][:2] ** 3), A),
    "svd_square": (lambda s: np.sum(np.linalg.svd(s).U ** 3 * np.arange(3.0)), SPD + A[:3]),
}


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_slogdet_eigh_svd_gradients_match_finite_differences(name, backend):
    f, x = LOSSES[name]
    expected = _finite_differences(f, x)
    np.testing.assert_allclose(npdynamo.grad(npdynamo.compile(f, backend=backend))(x),
                               expected, rtol=1e-4, atol=1e-6)

    @npdynamo.compile(backend=backend, fullgraph=True)
    def step(x):
        return npdynamo.value_and_grad(f)(x)

    value, grad = step(x)
    np.testing.assert_allclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-6)


def test_eager_gradients_of_decompositions_say_to_compile():
    with pytest.raises(GradError, match="only inside compiled code"):
        npdynamo.grad(lambda s: np.linalg.slogdet(s).logabsdet)(SPD)
