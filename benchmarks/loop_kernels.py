"""The loop-kernel corpus: loop nests as NumPy users write them, each beside the numba version
an expert writes by hand (issue 25). ``benchmarks/loop_corpus.py`` times them;
``tests/capture/test_loop_corpus.py`` checks each compiled against plain.

Every kernel here is written fresh for this corpus from the textbook recipe (Doolittle LU,
Cholesky by rows, modified Gram-Schmidt, Levinson-Durbin, a Peaceman-Rachford ADI half step,
Floyd-Warshall, Nussinov and Smith-Waterman dynamic programming, CRC-16/CCITT, CSR SpMV, a
first-order recursive filter run forward and backward, Jacobi solves ending by ``break`` and by
an early ``return``, a hysteresis threshold with an ``if``/``elif`` chain). Together they cover
every loop pattern of the issue: inner ranges bounded by the outer index and empty for some of
it, reversed ranges, scalar element reads and writes, ``max``/``min`` on scalars, ``if``/``elif``
on data values inside the body, bit arithmetic, data-dependent slice bounds, recursions along
an axis, ``while`` with ``break`` and ``return`` from inside a loop.

Each entry of ``KERNELS`` is a ``Kernel``: the plain function, the hand-written numba function
(same arguments, same results; where an expert would write the plain loops again, it is
``njit`` of the plain source), and ``make(size, rng)`` giving the arguments for ``"small"``
(the tests), ``"medium"`` (the benchmark) or ``"tiny"``. The kernels do not mutate their
arguments, so one argument tuple serves repeated calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

# --------------------------------------------------------------------------------- factorisations


def lu_doolittle(A):
    """L (unit lower) and U with A = L U, each entry a scalar sum over the index-bounded k."""
    n = A.shape[0]
    L = np.eye(n)
    U = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            s = 0.0
            for k in range(i):
                s += L[i, k] * U[k, j]
            U[i, j] = A[i, j] - s
        for j in range(i + 1, n):
            s = 0.0
            for k in range(i):
                s += L[j, k] * U[k, i]
            L[j, i] = (A[j, i] - s) / U[i, i]
    return L, U


# an expert writes the same scalar nest: numba compiles the plain source
lu_doolittle_nb = njit(cache=True)(lu_doolittle)


def cholesky_rows(A):
    """Lower L with A = L L^T, row by row: each entry a dot of two row prefixes."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
        L[i, i] = np.sqrt(A[i, i] - L[i, :i] @ L[i, :i])
    return L


@njit(cache=True)
def cholesky_rows_nb(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
        s = A[i, i]
        for k in range(i):
            s -= L[i, k] * L[i, k]
        L[i, i] = np.sqrt(s)
    return L


def gram_schmidt(A):
    """Q R by modified Gram-Schmidt over the columns."""
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        v = A[:, k].copy()
        for j in range(k):
            R[j, k] = Q[:, j] @ v
            v = v - R[j, k] * Q[:, j]
        R[k, k] = np.linalg.norm(v)
        Q[:, k] = v / R[k, k]
    return Q, R


@njit(cache=True)
def gram_schmidt_nb(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    v = np.empty(m)
    for k in range(n):
        for r in range(m):
            v[r] = A[r, k]
        for j in range(k):
            d = 0.0
            for r in range(m):
                d += Q[r, j] * v[r]
            R[j, k] = d
            for r in range(m):
                v[r] -= d * Q[r, j]
        s = 0.0
        for r in range(m):
            s += v[r] * v[r]
        nrm = np.sqrt(s)
        R[k, k] = nrm
        for r in range(m):
            Q[r, k] = v[r] / nrm
    return Q, R


def levinson_durbin(r, order):
    """Prediction coefficients a (a[0] = 1) and the final error of an autocorrelation ``r``."""
    a = np.zeros(order + 1)
    a[0] = 1.0
    err = r[0]
    for k in range(1, order + 1):
        acc = r[k]
        for j in range(1, k):
            acc += a[j] * r[k - j]
        lam = -acc / err
        prev = a.copy()
        for j in range(1, k):
            a[j] = prev[j] + lam * prev[k - j]
        a[k] = lam
        err = err * (1.0 - lam * lam)
    return a, err


@njit(cache=True)
def levinson_durbin_nb(r, order):
    a = np.zeros(order + 1)
    prev = np.zeros(order + 1)
    a[0] = 1.0
    err = r[0]
    for k in range(1, order + 1):
        acc = r[k]
        for j in range(1, k):
            acc += a[j] * r[k - j]
        lam = -acc / err
        for j in range(k):
            prev[j] = a[j]
        for j in range(1, k):
            a[j] = prev[j] + lam * prev[k - j]
        a[k] = lam
        err = err * (1.0 - lam * lam)
    return a, err


# ------------------------------------------------------------------------ sweeps and recursions


def adi_sweep(u, mu):
    """One ADI half step: a tridiagonal system (-mu, 1 + 2 mu, -mu) along every row, solved by
    the Thomas algorithm for all rows at once (a forward then a reversed column recursion)."""
    n = u.shape[1]
    diag = np.full(u.shape, 1.0 + 2.0 * mu)
    rhs = u.copy()
    for j in range(1, n):
        w = -mu / diag[:, j - 1]
        diag[:, j] = diag[:, j] + w * mu
        rhs[:, j] = rhs[:, j] - w * rhs[:, j - 1]
    x = np.empty_like(u)
    x[:, n - 1] = rhs[:, n - 1] / diag[:, n - 1]
    for j in range(n - 2, -1, -1):
        x[:, j] = (rhs[:, j] + mu * x[:, j + 1]) / diag[:, j]
    return x


@njit(cache=True)
def adi_sweep_nb(u, mu):
    m, n = u.shape
    x = np.empty_like(u)
    diag = np.empty(n)
    rhs = np.empty(n)
    for i in range(m):
        diag[0] = 1.0 + 2.0 * mu
        rhs[0] = u[i, 0]
        for j in range(1, n):
            w = -mu / diag[j - 1]
            diag[j] = 1.0 + 2.0 * mu + w * mu
            rhs[j] = u[i, j] - w * rhs[j - 1]
        x[i, n - 1] = rhs[n - 1] / diag[n - 1]
        for j in range(n - 2, -1, -1):
            x[i, j] = (rhs[j] + mu * x[i, j + 1]) / diag[j]
    return x


def iir_forward_backward(x, a, b):
    """A first-order recursive filter y[:, j] = a x[:, j] + b y[:, j - 1] along the columns,
    forward then backward (zero phase)."""
    W = x.shape[1]
    y = np.empty_like(x)
    y[:, 0] = a * x[:, 0]
    for j in range(1, W):
        y[:, j] = a * x[:, j] + b * y[:, j - 1]
    z = np.empty_like(y)
    z[:, W - 1] = a * y[:, W - 1]
    for j in range(W - 2, -1, -1):
        z[:, j] = a * y[:, j] + b * z[:, j + 1]
    return z


@njit(cache=True)
def iir_forward_backward_nb(x, a, b):
    H, W = x.shape
    y = np.empty_like(x)
    z = np.empty_like(x)
    for i in range(H):
        y[i, 0] = a * x[i, 0]
        for j in range(1, W):
            y[i, j] = a * x[i, j] + b * y[i, j - 1]
        z[i, W - 1] = a * y[i, W - 1]
        for j in range(W - 2, -1, -1):
            z[i, j] = a * y[i, j] + b * z[i, j + 1]
    return z


def hysteresis(x, low, high):
    """A two-level threshold with memory: on above ``high``, off below ``low``, else as before
    (an ``if``/``elif`` on each data value carrying a scalar state)."""
    out = np.zeros(x.shape[0], dtype=np.int8)
    state = 0
    for i in range(x.shape[0]):
        v = x[i]
        if v > high:
            state = 1
        elif v < low:
            state = 0
        out[i] = state
    return out


hysteresis_nb = njit(cache=True)(hysteresis)  # the same loop by hand


# ---------------------------------------------------------------------------- graphs and strings


def floyd_warshall(dist):
    """All-pairs shortest paths, relaxing one entry at a time with an ``if`` on the data."""
    D = dist.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                through = D[i, k] + D[k, j]
                if through < D[i, j]:
                    D[i, j] = through
    return D


@njit(cache=True)
def floyd_warshall_nb(dist):
    D = dist.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            dik = D[i, k]
            for j in range(n):
                through = dik + D[k, j]
                if through < D[i, j]:
                    D[i, j] = through
    return D


def nussinov(seq):
    """The most base pairs of an RNA-like sequence (0..3, pairs summing to 3), scalar DP over a
    reversed outer range and an inner range starting past the outer index."""
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            table[i, j] = max(table[i, j], table[i, j - 1])
            table[i, j] = max(table[i, j], table[i + 1, j])
            table[i, j] = max(table[i, j], table[i + 1, j - 1] + (seq[i] + seq[j] == 3))
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return table


@njit(cache=True)
def nussinov_nb(seq):
    n = seq.shape[0]
    table = np.zeros((n, n), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = max(table[i, j - 1], table[i + 1, j])
            best = max(best, table[i + 1, j - 1] + (1 if seq[i] + seq[j] == 3 else 0))
            for k in range(i + 1, j):
                best = max(best, table[i, k] + table[k + 1, j])
            table[i, j] = best
    return table


def smith_waterman(s, t, match, mismatch, gap):
    """The best local alignment score of two integer sequences (linear gap penalty)."""
    n, m = s.shape[0], t.shape[0]
    H = np.zeros((n + 1, m + 1))
    best = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if s[i - 1] == t[j - 1]:
                diag = H[i - 1, j - 1] + match
            else:
                diag = H[i - 1, j - 1] + mismatch
            h = max(0.0, diag, H[i - 1, j] - gap, H[i, j - 1] - gap)
            H[i, j] = h
            best = max(best, h)
    return H, best


@njit(cache=True)
def smith_waterman_nb(s, t, match, mismatch, gap):
    n, m = s.shape[0], t.shape[0]
    H = np.zeros((n + 1, m + 1))
    best = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            diag = H[i - 1, j - 1] + (match if s[i - 1] == t[j - 1] else mismatch)
            h = max(0.0, diag, H[i - 1, j] - gap, H[i, j - 1] - gap)
            H[i, j] = h
            if h > best:
                best = h
    return H, best


def crc16(data):
    """CRC-16/CCITT (polynomial 0x1021, initial 0xFFFF) of a byte sequence held as int64s."""
    crc = 0xFFFF
    for i in range(data.shape[0]):
        crc ^= data[i] << 8
        for _ in range(8):
            crc = (crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


@njit(cache=True)
def crc16_nb(data):
    crc = 0xFFFF
    for i in range(data.shape[0]):
        crc ^= data[i] << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def csr_spmv(ptr, col, val, x):
    """y = A x for A in compressed sparse rows: each row a dot over a data-bounded slice."""
    n = ptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        y[i] = val[ptr[i]:ptr[i + 1]] @ x[col[ptr[i]:ptr[i + 1]]]
    return y


@njit(cache=True)
def csr_spmv_nb(ptr, col, val, x):
    n = ptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for k in range(ptr[i], ptr[i + 1]):
            s += val[k] * x[col[k]]
        y[i] = s
    return y


# -------------------------------------------------------------------------- iterative solvers


def jacobi_break(A, b, tol, max_iter):
    """Jacobi iterations until the update is below ``tol`` (a ``while True`` ended by ``break``);
    the solution and the sweeps taken."""
    D = np.diag(A)
    R = A - np.diag(D)
    x = np.zeros_like(b)
    it = 0
    while True:
        x_new = (b - R @ x) / D
        it += 1
        if np.abs(x_new - x).max() < tol or it >= max_iter:
            break
        x = x_new
    return x_new, it


@njit(cache=True)
def _jacobi_sweep_nb(A, b, x, x_new):
    """One Jacobi sweep into ``x_new``; the largest change and the sum of squared changes."""
    n = b.shape[0]
    delta = 0.0
    sq = 0.0
    for i in range(n):
        s = b[i]
        for j in range(n):
            if j != i:
                s -= A[i, j] * x[j]
        x_new[i] = s / A[i, i]
        d = x_new[i] - x[i]
        delta = max(delta, abs(d))
        sq += d * d
    return delta, sq


@njit(cache=True)
def jacobi_break_nb(A, b, tol, max_iter):
    x = np.zeros(b.shape[0])
    x_new = np.zeros(b.shape[0])
    it = 0
    while True:
        delta, _ = _jacobi_sweep_nb(A, b, x, x_new)
        it += 1
        if delta < tol or it >= max_iter:
            break
        x, x_new = x_new, x
    return x_new, it


def jacobi_return(A, b, tol, max_iter):
    """Jacobi iterations returning from inside the loop once the residual is below ``tol``."""
    D = np.diag(A)
    R = A - np.diag(D)
    x = np.zeros_like(b)
    for k in range(max_iter):
        x_new = (b - R @ x) / D
        if np.linalg.norm(x_new - x) < tol:
            return x_new, k + 1
        x = x_new
    return x, max_iter


@njit(cache=True)
def jacobi_return_nb(A, b, tol, max_iter):
    x = np.zeros(b.shape[0])
    x_new = np.zeros(b.shape[0])
    for k in range(max_iter):
        _, sq = _jacobi_sweep_nb(A, b, x, x_new)
        if np.sqrt(sq) < tol:
            return x_new, k + 1
        x, x_new = x_new, x
    return x, max_iter


# ------------------------------------------------------------------------------------- inputs


def _spd(n, rng):
    M = rng.random((n, n))
    return M @ M.T + n * np.eye(n)


def _dominant(n, rng):
    A = rng.random((n, n))
    return A + np.diag(A.sum(axis=1) + 1.0)


def _csr(n, rng):
    counts = rng.integers(0, 9, n)  # some rows empty
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    col = rng.integers(0, n, ptr[-1]).astype(np.int64)
    return ptr, col, rng.random(ptr[-1]), rng.random(n)


def _autocorrelation(n, order, rng):
    sig = rng.standard_normal(n)
    return np.array([sig[: n - k] @ sig[k:] for k in range(order + 1)]) / n


@dataclass(frozen=True)
class Kernel:
    """One corpus entry: plain, hand-written numba, and argument makers per size."""

    plain: Callable
    numba: Callable
    make: Callable  # (size: "small" | "medium", rng) -> args
    pattern: str

    @property
    def name(self) -> str:
        return self.plain.__name__


def _sized(small, medium, build):
    """Arguments at ``size``: "small" (tests), "medium" (the benchmark), or "tiny" (n = 6, for
    the kernels whose loops still unroll: a short unrolled graph compiles in seconds)."""
    return lambda size, rng: build({"tiny": 6, "small": small, "medium": medium}[size], rng)


KERNELS = [
    Kernel(lu_doolittle, lu_doolittle_nb, _sized(16, 60, lambda n, r: (_dominant(n, r),)),
           "triangular scalar nest (range(i), range(i + 1, n))"),
    Kernel(cholesky_rows, cholesky_rows_nb, _sized(16, 80, lambda n, r: (_spd(n, r),)),
           "triangular nest with index-bounded dots"),
    Kernel(gram_schmidt, gram_schmidt_nb, _sized(16, 40, lambda n, r: (r.random((n + 4, n)),)),
           "triangular nest rebinding a vector"),
    Kernel(levinson_durbin, levinson_durbin_nb,
           _sized(16, 40, lambda n, r: (_autocorrelation(4 * n, n, r), n)),
           "scalar recursion, inner range(1, k)"),
    Kernel(adi_sweep, adi_sweep_nb, _sized(17, 100, lambda n, r: (r.random((n, n)), 0.5)),
           "column recursion forward then reversed"),
    Kernel(iir_forward_backward, iir_forward_backward_nb,
           _sized(16, 200, lambda n, r: (r.random((n, 2 * n)), 0.3, 0.7)),
           "recursive filter along an axis"),
    Kernel(hysteresis, hysteresis_nb, _sized(40, 5000, lambda n, r: (r.random(n), 0.3, 0.7)),
           "if/elif on data values, scalar state"),
    Kernel(floyd_warshall, floyd_warshall_nb,
           _sized(16, 60, lambda n, r: (r.random((n, n)) * 10,)),
           "scalar triple nest with an if on data"),
    Kernel(nussinov, nussinov_nb, _sized(16, 60, lambda n, r: (r.integers(0, 4, n),)),
           "scalar DP, reversed range, max"),
    Kernel(smith_waterman, smith_waterman_nb,
           _sized(16, 120, lambda n, r: (r.integers(0, 4, n), r.integers(0, 4, n + 3),
                                        2.0, -1.0, 1.0)),
           "scalar DP, if on data, max of four"),
    Kernel(crc16, crc16_nb,
           _sized(16, 2000, lambda n, r: (r.integers(0, 256, n).astype(np.int64),)),
           "bit-level loop, conditional expression on data"),
    Kernel(csr_spmv, csr_spmv_nb, _sized(20, 2000, lambda n, r: _csr(n, r)),
           "data-dependent slice bounds"),
    Kernel(jacobi_break, jacobi_break_nb,
           _sized(16, 100, lambda n, r: (_dominant(n, r), r.random(n), 1e-10, 500)),
           "while True with break"),
    Kernel(jacobi_return, jacobi_return_nb,
           _sized(16, 100, lambda n, r: (_dominant(n, r), r.random(n), 1e-10, 500)),
           "early return from a for loop"),
]
