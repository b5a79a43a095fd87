"""VJP rules of ``np.linalg`` solvers and products: norm, det, inv, solve, inner, vdot, kron,
cross, and of sinc and round (zero gradient).

``det``/``inv``/``solve`` use the matrix identities (d det = det tr(A^-1 dA), d A^-1 =
-A^-1 dA A^-1); they hold where the matrix is invertible, where NumPy's result is defined.
``norm`` without ``ord`` is the 2-norm (Frobenius for two axes): its cotangent is g x / norm,
zero where the norm is zero (the subgradient JAX picks). Other orders raise ``GradError``.
"""

from __future__ import annotations

import numpy as np

from npdynamo.autograd.backward_ops import eigenvectors
from npdynamo.autograd.emitting import is_array, meta
from npdynamo.autograd.vjp_helpers import Math, expand_reduced, reduced_axes, unbroadcast
from npdynamo.autograd.vjp_linalg import _tensordot_cts
from npdynamo.autograd.vjp_registry import vjp
from npdynamo.errors import GradError
from npdynamo.ops import ArrayMeta


def _t(M: Math, a):
    return M("swapaxes", a, axis1=-1, axis2=-2)


@vjp("norm")
def _norm(emit, g, out, x, *, ord=None, axis=None, keepdims=False):
    if ord is not None:
        raise GradError(f"np.linalg.norm with ord={ord!r} has no gradient rule; use ord=None")
    M = Math(emit)
    xm = meta(x)
    axes = reduced_axes(xm, axis)
    gk = expand_reduced(emit, g, xm, axes)
    nk = expand_reduced(emit, out, xm, axes)
    zero = M("equal", nk, 0.0)
    share = M.div(gk, M.where(zero, 1.0, nk))
    return (M.where(zero, 0.0, M.mul(M.broadcast_to(share, xm.shape), x)),)


@vjp("det")
def _det(emit, g, out, a):
    M = Math(emit)
    scale = M.reshape(M.mul(g, out), meta(out).shape + (1, 1))
    return (M.mul(scale, _t(M, M("inv", a))),)


@vjp("inv")
def _inv(emit, g, out, a):
    M = Math(emit)
    inv_t = _t(M, out)
    return (M.neg(M("matmul", M("matmul", inv_t, g), inv_t)),)


@vjp("solve")
def _solve(emit, g, out, a, b):
    M = Math(emit)
    am, bm = meta(a), meta(b)
    vector = bm.ndim == 1
    if vector:  # solve the cotangent as a one-column matrix: g may carry a's batch axes
        gm = meta(g)
        column = M("solve", _t(M, a), M.reshape(g, gm.shape + (1,)))
        gb = M.reshape(column, gm.shape)
    else:
        gb = M("solve", _t(M, a), g)
    if vector:
        ct_a = M.neg(M("multiply", M.reshape(gb, meta(gb).shape + (1,)),
                       M.reshape(out, meta(out).shape[:-1] + (1, meta(out).shape[-1]))))
    else:
        ct_a = M.neg(M("matmul", gb, _t(M, out)))
    return (unbroadcast(emit, ct_a, am) if is_array(a) else None,
            unbroadcast(emit, gb, bm) if is_array(b) else None)


@vjp("inner")
def _inner(emit, g, out, a, b):
    am, bm = meta(a), meta(b)
    M = Math(emit)
    if am.ndim == 0 or bm.ndim == 0:
        return (unbroadcast(emit, M.mul(g, b), am) if is_array(a) else None,
                unbroadcast(emit, M.mul(g, a), bm) if is_array(b) else None)
    return _tensordot_cts(emit, g, a, b, [am.ndim - 1], [bm.ndim - 1])


@vjp("vdot")
def _vdot(emit, g, out, a, b):
    M = Math(emit)
    am, bm = meta(a), meta(b)
    if am.dtype.kind == "c" or bm.dtype.kind == "c":
        raise GradError("np.vdot of complex arrays has no gradient rule")
    return (M.reshape(M.mul(g, M.reshape(b, am.shape)), am.shape) if is_array(a) else None,
            M.reshape(M.mul(g, M.reshape(a, bm.shape)), bm.shape) if is_array(b) else None)


@vjp("sinc")
def _sinc(emit, g, out, x):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0
    M = Math(emit)
    zero = M("equal", x, 0.0)
    safe = M.where(zero, 1.0, x)
    slope = M.div(M.sub(M("cos", M.mul(safe, np.pi)), out), safe)
    return (M.mul(g, M.where(zero, 0.0, slope)),)


@vjp("kron")
def _kron(emit, g, out, a, b):
    # kron(a, b) reshaped to (a0, b0, a1, b1, ...) is the outer product of the padded operands
    M = Math(emit)
    am, bm = meta(a), meta(b)
    nd = max(am.ndim, bm.ndim)
    sa = (1,) * (nd - am.ndim) + am.shape
    sb = (1,) * (nd - bm.ndim) + bm.shape
    inter = tuple(d for pair in zip(sa, sb) for d in pair)
    g4 = M.reshape(g, inter)
    a_axes = tuple(range(0, 2 * nd, 2))
    b_axes = tuple(range(1, 2 * nd, 2))
    a_spread = M.reshape(a, tuple(d for s in sa for d in (s, 1)))
    b_spread = M.reshape(b, tuple(d for s in sb for d in (1, s)))
    ct_a = M.reshape(M("sum", M.mul(g4, b_spread), axis=b_axes), am.shape)
    ct_b = M.reshape(M("sum", M.mul(g4, a_spread), axis=a_axes), bm.shape)
    return (ct_a if is_array(a) else None, ct_b if is_array(b) else None)


@vjp("cross")
def _cross(emit, g, out, a, b, *, axisa=-1, axisb=-1, axisc=-1):
    # d(a x b) = da x b + a x db; <g, da x b> = <b x g, da>
    M = Math(emit)
    gl = M("moveaxis", g, source=axisc, destination=-1)
    al = M("moveaxis", a, source=axisa, destination=-1)
    bl = M("moveaxis", b, source=axisb, destination=-1)
    ct_a = M("moveaxis", M("cross", bl, gl), source=-1, destination=axisa)
    ct_b = M("moveaxis", M("cross", gl, al), source=-1, destination=axisb)
    am, bm = meta(a), meta(b)
    return (_unmoved(emit, ct_a, am, axisa) if is_array(a) else None,
            _unmoved(emit, ct_b, bm, axisb) if is_array(b) else None)


def _unmoved(emit, ct, target, axis):
    """``ct`` (broadcast batch axes, vector axis at ``axis``) summed back to ``target``."""
    M = Math(emit)
    last = M("moveaxis", ct, source=axis, destination=-1)
    tm = ArrayMeta(_moved_shape(target.shape, axis), target.dtype)
    summed = unbroadcast(emit, last, tm)
    return M("moveaxis", summed, source=-1, destination=axis)


def _moved_shape(shape, axis):
    axis %= len(shape)
    return shape[:axis] + shape[axis + 1:] + (shape[axis],)


def _full_offset(name: str, n: int, m: int, mode: str) -> int:
    """Where ``mode``'s output starts inside the 'full' one (found on position ids)."""
    fn = getattr(np, name)
    a, v = np.arange(1.0, n + 1), 2.0 ** np.arange(m)  # distinct sums at every lag
    full, part = fn(a, v, "full"), fn(a, v, mode)
    for off in range(len(full) - len(part) + 1):
        if np.array_equal(full[off:off + len(part)], part):
            return off
    raise GradError(f"np.{name}: no gradient rule for mode={mode!r} with these lengths")


def _convolution(name: str):
    # convolve(a, v)[k] = sum_i a[i] v[k - i]; correlate(a, v) is convolve(a, v[::-1]).
    def rule(emit, g, out, a, v, *, mode="full"):
        M = Math(emit)
        am, vm = meta(a), meta(v)
        if am.ndim != 1 or vm.ndim != 1:
            raise GradError(f"np.{name} of 0-d operands has no gradient rule")
        n, m = am.shape[0], vm.shape[0]
        off = _full_offset(name, n, m, mode)
        length = meta(g).shape[0]
        g_full = M("pad", g, pad_width=((off, n + m - 1 - off - length),))
        kernel = v if name == "convolve" else M("flip", v, axis=0)
        ct_a = M("correlate", g_full, kernel, mode="valid")
        ct_k = M("correlate", g_full, a, mode="valid")
        ct_v = ct_k if name == "convolve" else M("flip", ct_k, axis=0)
        return (ct_a if is_array(a) else None, ct_v if is_array(v) else None)

    return rule


@vjp("polyval")
def _polyval(emit, g, out, p, x):
    # out = sum_i p[i] x^(n-1-i): d/dp[i] = x^(n-1-i), d/dx = sum_i (n-1-i) p[i] x^(n-2-i)
    M = Math(emit)
    n = meta(p).shape[0] if is_array(p) else len(p)
    coef = [M("getitem", p, (i,)) if is_array(p) else p[i] for i in range(n)]
    ct_p = ct_x = None
    if is_array(p):
        parts = [M("sum", M.mul(g, M("power", x, float(n - 1 - i)))) for i in range(n)]
        ct_p = M("stack", tuple(parts)) if parts else M.zeros((0,), meta(g).dtype)
    if is_array(x):
        slope = M.mul(x, 0.0)
        for i in range(n - 1):
            term = M.mul(M.mul(coef[i], float(n - 1 - i)), M("power", x, float(n - 2 - i)))
            slope = M.add(slope, term)
        ct_x = unbroadcast(emit, M.mul(g, slope), meta(x))
    return ct_p, ct_x


@vjp("eigvalsh")
def _eigvalsh(emit, g, out, a, **kwargs):
    # dw_k = v_k^T dA v_k for the symmetric matrix eigvalsh builds from a's lower triangle:
    # S = V diag(g) V^T, counted twice below the diagonal and not at all above it.
    M = Math(emit)
    am = meta(a)
    if am.dtype.kind == "c":
        raise GradError("np.linalg.eigvalsh of complex matrices has no gradient rule")
    vectors = emit(eigenvectors, a)
    gm = meta(g)
    scaled = M.mul(vectors, M.reshape(g, gm.shape[:-1] + (1, gm.shape[-1])))
    s = M("matmul", scaled, _t(M, vectors))
    diagonal = M.mul(s, np.eye(am.shape[-1]))
    return (M.sub(M("tril", M.mul(s, 2.0)), diagonal),)


@vjp("round")
def _round(emit, g, out, a, **kwargs):
    return (Math(emit).mul(g, 0.0),)


vjp("convolve")(_convolution("convolve"))
vjp("correlate")(_convolution("correlate"))
