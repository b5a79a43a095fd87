"""Triangular loops: bodies whose slices are bounded by the loop index (``A[i, :i]``), as in
LU, Cholesky, triangular solves and Gauss-Seidel written with NumPy slices. Test inputs."""

from __future__ import annotations

import numpy as np

import npdynamo


def lu_doolittle(A):
    """In place: L (unit diagonal, below) and U (on and above the diagonal)."""
    n = A.shape[0]
    for i in range(n):
        A[i + 1:, i] /= A[i, i]
        A[i + 1:, i + 1:] -= np.outer(A[i + 1:, i], A[i, i + 1:])
    return A


def lu_rows(A):
    """Doolittle by rows, with a matmul of index-bounded blocks: ``A[i, i:] -= A[i, :i] @
    A[:i, i:]``, then the column below the diagonal."""
    n = A.shape[0]
    for i in range(n):
        A[i, i:] -= A[i, :i] @ A[:i, i:]
        A[i + 1:, i] = (A[i + 1:, i] - A[i + 1:, :i] @ A[:i, i]) / A[i, i]
    return A


def cholesky_rows(A):
    """Upper Cholesky factor, row by row, in place (the strict lower part is left as it was)."""
    n = A.shape[0]
    for i in range(n):
        A[i, i:] -= A[:i, i] @ A[:i, i:]
        A[i, i:] /= np.sqrt(A[i, i])
    return A


def cholesky_columns(A):
    """Lower Cholesky factor, column by column, into a new array."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def forward_substitution(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        k = n - 1 - i
        x[k] = (b[k] - U[k, k + 1:] @ x[k + 1:]) / U[k, k]
    return x


def gauss_seidel(A, b, x, sweeps):
    """Gauss-Seidel over rows: each row uses the rows above it from this sweep."""
    n = b.shape[0]
    for _ in range(sweeps):
        for i in range(n):
            x[i] = (b[i] - A[i, :i] @ x[:i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def partial_sums(A):
    """Empty slices at i = 0 (and at the last i): sums, a dot, a mean of an empty block."""
    n = A.shape[0]
    out = np.zeros_like(A[:, :3])  # (np.zeros((n, 3)) would specialise n)
    for i in range(n):
        out[i, 0] = A[i, :i].sum() + A[i + 1:, i].sum()
        out[i, 1] = np.dot(A[i, i:], A[i:, i])
        out[i, 2] = (A[:i, :i] * 2.0).sum() - A[i:, :i].T.sum()
    return out


def shifted(x):
    """A range starting at 1 and a bound from the size: ``x[:n - i]``."""
    n = x.shape[0]
    for i in range(1, n):
        x[i:] += 0.5 * x[:n - i] + x[i - 1]
    return x


def inner_range(A):
    """``range(i)`` inside: needs the index's value, so the loop stays unrolled."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[j, i]
    return A


def index_parity(A):
    """``if i % 2 == 0``: Python needs the index's value, so the loop stays unrolled."""
    for i in range(A.shape[0]):
        if i % 2 == 0:
            A[i] += 1.0
    return A


def mismatched(x):
    """``x[i:] + x[:i]`` broadcasts for some i only: NumPy raises at i = 2 (n = 20)."""
    for i in range(x.shape[0]):
        x[i:] += x[:i]
    return x


def spd(n: int, rng) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def diagonally_dominant(n: int, rng) -> np.ndarray:
    return rng.standard_normal((n, n)) + 2 * n * np.eye(n)


def lu_polybench(n, A):
    """PolyBench's argument order: the size is an int argument, the loop bound."""
    for i in range(n):
        A[i, i:] -= A[i, :i] @ A[:i, i:]
        A[i + 1:, i] = (A[i + 1:, i] - A[i + 1:, :i] @ A[:i, i]) / A[i, i]
    return A


def back_substitution_n(U, b, n):
    x = np.zeros_like(b)
    for i in range(n):
        k = n - 1 - i
        x[k] = (b[k] - U[k, k + 1:n] @ x[k + 1:n]) / U[k, k]
    return x


def length_read(x):
    """``len(x[:i])`` read by Python (``if k > 3``): its value changes per iteration."""
    for i in range(x.shape[0]):
        k = len(x[:i])
        if k > 3:
            x[i] += 1.0
    return x


def size_from_elsewhere(x, y):
    """``y[i:n]`` with ``n = x.shape[0]``: under dynamic shapes the body reads no array of
    that size, so it cannot compute ``n`` from its own inputs."""
    n = x.shape[0]
    for i in range(16):
        y[i:n] += 1.0
    return y


def inner_bound_from_index(x):
    """An inner loop over ``range(len(x[i:]))``: its trip count is a size of the index."""
    for i in range(x.shape[0]):
        for j in range(len(x[i:])):
            x[j] += 0.5 * x[i]
    return x


def upper_pairs(A, C):
    """``for j in range(i, n)`` inside ``for i in range(n)``: never empty, a nested loop."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i, n):
            C[i, j] += A[i, :] @ A[j, :]
    return C


def lower_pairs(A, C):
    """``for j in range(i)`` from ``i = 1``: never empty either."""
    n = A.shape[0]
    for i in range(1, n):
        for j in range(i):
            C[i, j] += A[i, j:] @ A[j, j:]
    return C


def explicit_api(L, b):
    """``npdynamo.fori_loop`` with slices bounded by its index (constant bounds)."""

    def body(i, x):
        return x + L[i, :i].sum() * b[:i].sum() - L[i:, i] @ b[i:]

    return npdynamo.fori_loop(0, 20, body, np.zeros_like(b))


# -- inner ranges bounded by the outer index, empty for some of it: nested loops of 0+ trips -------
def forward_substitution_loops(L, b):
    """Element by element: ``range(i)`` runs no iteration at i = 0."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def lu_doolittle_loops(A):
    """Doolittle with scalar loops into new L (unit diagonal) and U; ``range(i + 1, n)`` is
    empty at the last i, ``range(i)`` at the first."""
    n = A.shape[0]
    L = np.zeros_like(A)
    U = np.zeros_like(A)
    for i in range(n):
        for k in range(i, n):
            s = A[i, k]
            for j in range(i):
                s -= L[i, j] * U[j, k]
            U[i, k] = s
        L[i, i] = 1.0
        for k in range(i + 1, n):
            s = A[k, i]
            for j in range(i):
                s -= L[k, j] * U[j, i]
            L[k, i] = s / U[i, i]
    return L, U


def lu_in_place(A):
    """Doolittle in place, element updates of L and slice products for U."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def gram_schmidt(A):
    """Modified Gram-Schmidt: ``v`` is updated in place against the columns before it."""
    n = A.shape[1]
    Q = np.zeros_like(A)
    R = np.zeros_like(A[:n])
    for j in range(n):
        v = A[:, j].copy()
        for i in range(j):
            R[i, j] = Q[:, i] @ v
            v -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def gram_schmidt_classical(A):
    """Classical Gram-Schmidt: ``v`` is rebound, so at j = 0 it stays ``A[:, 0]`` itself."""
    n = A.shape[1]
    Q = np.zeros_like(A)
    for j in range(n):
        v = A[:, j]
        for i in range(j):
            v = v - (Q[:, i] @ A[:, j]) * Q[:, i]
        Q[:, j] = v / np.linalg.norm(v)
    return Q


def rebound_then_written(A):
    """As above, then ``v /= ...``: at j = 0 that writes into ``A`` (v is still a view of it),
    which a graph cannot tell from a loop result: the outer loop stays unrolled."""
    n = A.shape[1]
    for j in range(n):
        v = A[:, j]
        for i in range(j):
            v = v - (A[:, i] @ v) * A[:, i]
        v /= np.linalg.norm(v)
    return A
