"""VJP rules of the multi-result decompositions (``slogdet``, ``eigh``, ``svd``, ``qr``,
``lstsq``).

Reverse mode gives such an op one cotangent per result (None where no gradient reached that
result; ``reverse_mode._project_back`` gathers them from the ``tuple_item`` projections), and a
rule reads the op's results through ``tuple_item`` on ``out``.

* ``slogdet``: d log|det A| = tr(A^-1 dA), so ``A_bar = g * A^-T``; the sign is piecewise
  constant (no gradient).
* ``svd`` (reduced factors, k = min(m, n)): with F_ij = 1 / (s_j^2 - s_i^2) off the diagonal,
  A_bar = U [diag(s_bar) + (F o (U^T U_bar - U_bar^T U)) S + S (F o (V^T V_bar - V_bar^T V))] V^T
  plus the parts of U_bar and V_bar outside the spans of U and V, (I - U U^T) U_bar S^-1 V^T
  and U S^-1 V_bar^T (I - V V^T). With ``full_matrices`` on a non-square matrix the extra
  singular vectors are not unique: a cotangent on them is a GradError.
* ``eigh``: for a symmetric perturbation dS, dw_i = v_i^T dS v_i and dV = V (F o V^T dS V) with
  F_ij = 1 / (w_j - w_i) off the diagonal, so the gradient on S is
  G = V (diag(w_bar) + F o (V^T V_bar)) V^T, symmetrised. NumPy reads only one triangle of its
  input (``UPLO``), so the gradient on the input puts G_ii on the diagonal, 2 sym(G)_ij in the
  triangle read and 0 in the other. Repeated eigenvalues make F infinite, as everywhere.
* ``qr`` and ``lstsq``: see their rules below (the standard QR formula; lstsq's solution for a
  full-column-rank matrix).
Complex inputs have no rule here (GradError).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npdynamo.autograd.emitting import is_array, meta
from npdynamo.autograd.vjp_helpers import Math
from npdynamo.autograd.vjp_registry import vjp
from npdynamo.errors import GradError


def _real_only(name: str, a: Any) -> None:
    if meta(a).dtype.kind == "c":
        raise GradError(f"np.linalg.{name} of a complex matrix has no gradient rule")


def _result(M: Math, out: Any, index: int) -> Any:
    return M("tuple_item", out, index)


def _t(M: Math, a: Any) -> Any:
    return M("swapaxes", a, axis1=-1, axis2=-2)


@vjp("slogdet")
def _slogdet(emit, g, out, a):
    _real_only("slogdet", a)
    M = Math(emit)
    _g_sign, g_log = g
    if g_log is None:
        return (M.zeros(meta(a).shape, meta(a).dtype),)
    scale = M.reshape(g_log, meta(g_log).shape + (1, 1))
    return (M.mul(scale, _t(M, M("inv", a))),)


@vjp("eigh")
def _eigh(emit, g, out, a, *, UPLO="L"):
    _real_only("eigh", a)
    M = Math(emit)
    g_w, g_v = g
    w, v = _result(M, out, 0), _result(M, out, 1)
    n = meta(a).shape[-1]
    inner = M.zeros(meta(a).shape, meta(a).dtype)
    if g_v is not None:
        # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
        diff = M.sub(M("expand_dims", w, axis=-2), M("expand_dims", w, axis=-1))
        off = ~np.eye(n, dtype=bool)  # a constant of the static size
        f = M.where(off, M.div(1.0, M.where(off, diff, 1.0)), 0.0)
        inner = M.mul(f, M("matmul", _t(M, v), g_v))
    if g_w is not None:
        inner = M.add(inner, M.mul(M("expand_dims", g_w, axis=-2), np.eye(n, dtype=bool)))
    grad = M("matmul", M("matmul", v, inner), _t(M, v))
    sym = M.mul(M.add(grad, _t(M, grad)), 0.5)
    strict = M("tril", sym, k=-1) if UPLO == "L" else M("triu", sym, k=1)
    diagonal = M.sub(sym, M.add(M("tril", sym, k=-1), M("triu", sym, k=1)))
    return (M.add(M.mul(strict, 2.0), diagonal),)





@vjp("svd")
def _svd(emit, g, out, a, *, full_matrices=True, hermitian=False):
    """A = U diag(s) Vh, the reduced factors (k = min(m, n)); with full_matrices the extra
    columns of U or rows of Vh are not unique, so their cotangents must be absent."""
    _real_only("svd", a)
    M = Math(emit)
    *_, m, n = meta(a).shape
    k = min(m, n)
    if hermitian:
        raise GradError("np.linalg.svd with hermitian=True has no gradient rule")
    g_u, g_s, g_vh = g
    u, s, vh = (_result(M, out, i) for i in range(3))
    if full_matrices and m != n:
        if g_u is not None or g_vh is not None:
            raise GradError("np.linalg.svd(full_matrices=True) of a non-square matrix: the "
                            "extra singular vectors are not unique; use full_matrices=False")
    if full_matrices and m != n:  # the reduced factors, which the gradient is made of
        u = M("getitem", u, (Ellipsis, slice(None), slice(None, k)))
        vh = M("getitem", vh, (Ellipsis, slice(None, k), slice(None)))
    v = _t(M, vh)
    s_row = M("expand_dims", s, axis=-2)  # (..., 1, k)
    inner = M.zeros(meta(a).shape[:-2] + (k, k), meta(a).dtype)
    if g_s is not None:
        inner = M.add(inner, M.mul(M("expand_dims", g_s, axis=-2), np.eye(k, dtype=bool)))
    if g_u is not None or g_vh is not None:
        s2 = M.square(s)
        diff = M.sub(M("expand_dims", s2, axis=-2), M("expand_dims", s2, axis=-1))
        off = ~np.eye(k, dtype=bool)
        f = M.where(off, M.div(1.0, M.where(off, diff, 1.0)), 0.0)  # 1 / (s_j^2 - s_i^2)
    extra = None
    if g_u is not None:
        utgu = M("matmul", _t(M, u), g_u)
        inner = M.add(inner, M.mul(M.mul(f, M.sub(utgu, _t(M, utgu))), s_row))
        if m > k:  # the part of g_u outside U's columns
            proj = M.sub(g_u, M("matmul", u, utgu))
            extra = M("matmul", M.div(proj, s_row), vh)
    if g_vh is not None:
        g_v = _t(M, g_vh)
        vtgv = M("matmul", _t(M, v), g_v)
        s_col = M("expand_dims", s, axis=-1)
        inner = M.add(inner, M.mul(s_col, M.mul(f, M.sub(vtgv, _t(M, vtgv)))))
        if n > k:
            proj = M.sub(g_v, M("matmul", v, vtgv))
            term = M("matmul", u, _t(M, M.div(proj, s_row)))
            extra = term if extra is None else M.add(extra, term)
    grad = M("matmul", M("matmul", u, inner), vh)
    return (grad if extra is None else M.add(grad, extra),)





def _copyltu(M: Math, x: Any) -> Any:
    """The symmetric matrix whose lower triangle is ``x``'s: tril(x) + tril(x, -1)^T."""
    return M.add(M("tril", x), _t(M, M("tril", x, k=-1)))


def _qr_square(M: Math, q: Any, r: Any, g_q: Any, g_r: Any) -> Any:
    """A = QR with R square (m >= n): M = R R_bar^T - Q_bar^T Q and
    A_bar = (Q_bar + Q copyltu(M)) R^-T, the last product a triangular solve."""
    inner = M.sub(M("matmul", r, _t(M, g_r)), M("matmul", _t(M, g_q), q))
    b = M.add(g_q, M("matmul", q, _copyltu(M, inner)))
    return _t(M, M("solve", r, _t(M, b)))


@vjp("qr")
def _qr(emit, g, out, a, *, mode="reduced"):
    """Reduced factors; for a wide A = [X | Y] (m < n), R = [U | V] with X = QU and V = Q^T Y:
    Y_bar = Q V_bar and X's rule takes Q_bar + Y V_bar^T. ``complete`` on a tall matrix has
    extra columns of Q that are not unique: a cotangent on Q is then a GradError."""
    _real_only("qr", a)
    if mode == "raw":
        raise GradError("np.linalg.qr(mode='raw') (Householder reflectors) has no gradient rule")
    M = Math(emit)
    am = meta(a)
    *_, m, n = am.shape
    k = min(m, n)
    if mode == "r":
        g_q, g_r = None, g
        q, r = _result(M, M("qr", a), 0), out
    else:
        g_q, g_r = g
        q, r = _result(M, out, 0), _result(M, out, 1)
    if mode == "complete" and m > n:
        if g_q is not None:
            raise GradError("np.linalg.qr(mode='complete') of a tall matrix: the extra columns "
                            "of Q are not unique; use mode='reduced'")
        q = M("getitem", q, (Ellipsis, slice(None), slice(None, k)))
        r = M("getitem", r, (Ellipsis, slice(None, k), slice(None)))
        g_r = M("getitem", g_r, (Ellipsis, slice(None, k), slice(None)))
    batch = am.shape[:-2]
    g_q = M.zeros(batch + (m, k), am.dtype) if g_q is None else g_q
    g_r = M.zeros(batch + (k, n), am.dtype) if g_r is None else g_r
    if m >= n:
        return (_qr_square(M, q, r, g_q, g_r),)
    left, right = (Ellipsis, slice(None), slice(None, m)), (Ellipsis, slice(None), slice(m, None))
    g_v = M("getitem", g_r, right)
    y = M("getitem", a, right)
    g_x = _qr_square(M, q, M("getitem", r, left), M.add(g_q, M("matmul", y, _t(M, g_v))),
                     M("getitem", g_r, left))
    return (M("concatenate", [g_x, M("matmul", q, g_v)], axis=-1),)


@vjp("lstsq")
def _lstsq(emit, g, out, a, b, *, rcond=None):
    """x = (A^T A)^-1 A^T b for a full-column-rank A (m >= n). With r = b - A x,
    z = (A^T A)^-1 x_bar and each residual's d(r_j^T r_j) = 2 r_j^T (db_j - dA x_j):
    b_bar = A z + 2 r diag(res_bar), A_bar = r z^T - b_bar x^T; the singular values add
    U diag(s_bar) V^T. The rank is an integer (no gradient)."""
    _real_only("lstsq", a)
    M = Math(emit)
    g_x, g_res, _g_rank, g_s = g
    am, bm = meta(a), meta(b)
    m, n = am.shape
    x = _result(M, out, 0)
    vector = bm.ndim == 1
    cols = 1 if vector else bm.shape[1]
    column = (lambda v, rows: M.reshape(v, (rows, 1))) if vector else (lambda v, rows: v)
    ct_a = ct_b = None
    if g_x is not None or (g_res is not None and m > n):
        if m < n:
            raise GradError("np.linalg.lstsq of a wide matrix (a minimum-norm solution) has no "
                            "gradient rule; the rule assumes full column rank")
        xc, bc = column(x, n), column(b, m)
        r = M.sub(bc, M("matmul", a, xc))
        z = (M.zeros((n, cols), am.dtype) if g_x is None else
             M("solve", M("matmul", _t(M, a), a), column(g_x, n)))
        ct_b = M("matmul", a, z)
        if g_res is not None and m > n:  # tall and of full rank: one residual per column
            ct_b = M.add(ct_b, M.mul(M.mul(r, 2.0), M.reshape(g_res, (1, cols))))
        ct_a = M.sub(M("matmul", r, _t(M, z)), M("matmul", ct_b, _t(M, xc)))
        ct_b = M.reshape(ct_b, (m,)) if vector else ct_b
    if g_s is not None:
        factors = M("svd", a, full_matrices=False)
        u, vh = _result(M, factors, 0), _result(M, factors, 2)
        by_s = M("matmul", M.mul(u, M("expand_dims", g_s, axis=-2)), vh)
        ct_a = by_s if ct_a is None else M.add(ct_a, by_s)
    if ct_a is None:
        ct_a = M.zeros(am.shape, am.dtype)
    return (ct_a if is_array(a) else None, ct_b if is_array(b) else None)



