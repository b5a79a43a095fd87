"""VJP rules of the contractions: matmul (1-D and batched operands), dot, outer, tensordot,
einsum (ellipsis, broadcasting, repeated labels, implicit output).

Each cotangent is itself a contraction of the output cotangent with the other operands, so the
backward graph is made of the same BLAS-backed ops as the forward one.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from npdynamo.autograd.emitting import Emit, is_array, meta
from npdynamo.autograd.vjp_helpers import Math, unbroadcast
from npdynamo.autograd.vjp_registry import vjp
from npdynamo.ops import ArrayMeta


def _swap_last(M: Math, a: Any) -> Any:
    return M("swapaxes", a, axis1=-1, axis2=-2)


@vjp("matmul")
def _matmul(emit: Emit, g: Any, out: Any, a: Any, b: Any, dtype: Any = None) -> tuple:
    # Promote 1-D operands to matrices (as NumPy does), differentiate the batched matrix
    # product, then sum broadcast batch axes away and drop the promoted axes.
    M = Math(emit)
    am, bm = meta(a), meta(b)
    a2 = M.reshape(a, (1, am.shape[0])) if am.ndim == 1 else a
    b2 = M.reshape(b, (bm.shape[0], 1)) if bm.ndim == 1 else b
    a2m = ArrayMeta((1, am.shape[0]) if am.ndim == 1 else am.shape, am.dtype)
    b2m = ArrayMeta((bm.shape[0], 1) if bm.ndim == 1 else bm.shape, bm.dtype)
    om = meta(out)
    batch = om.shape[: max(0, om.ndim - (am.ndim >= 2) - (bm.ndim >= 2))]
    g2 = M.reshape(g, batch + (a2m.shape[-2], b2m.shape[-1]))
    ct_a = ct_b = None
    if is_array(a):
        ct = M("matmul", g2, _swap_last(M, b2))
        ct_a = M.reshape(unbroadcast(emit, ct, a2m), am.shape)
    if is_array(b):
        ct = M("matmul", _swap_last(M, a2), g2)
        ct_b = M.reshape(unbroadcast(emit, ct, b2m), bm.shape)
    return ct_a, ct_b


def _tensordot_cts(emit: Emit, g: Any, a: Any, b: Any, axes_a: Sequence[int],
                   axes_b: Sequence[int]) -> tuple[Any, Any]:
    """Cotangents of ``tensordot(a, b, (axes_a, axes_b))`` (non-negative axes)."""
    M = Math(emit)
    am, bm = meta(a), meta(b)
    free_a = [i for i in range(am.ndim) if i not in axes_a]
    free_b = [i for i in range(bm.ndim) if i not in axes_b]
    g_a = list(range(len(free_a)))
    g_b = list(range(len(free_a), len(free_a) + len(free_b)))
    ct_a = ct_b = None
    if is_array(a):
        ct = M("tensordot", g, b, axes=(tuple(g_b), tuple(free_b)))
        # Result axes: a's free axes, then b's contracted axes in b's order.
        labels = free_a + [axes_a[list(axes_b).index(j)] for j in sorted(axes_b)]
        ct_a = _permute_back(M, ct, labels)
    if is_array(b):
        ct = M("tensordot", a, g, axes=(tuple(free_a), tuple(g_a)))
        labels = [axes_b[list(axes_a).index(i)] for i in sorted(axes_a)] + free_b
        ct_b = _permute_back(M, ct, labels)
    return ct_a, ct_b


def _permute_back(M: Math, ct: Any, labels: list[int]) -> Any:
    """``ct`` whose axis k is input axis ``labels[k]``, transposed into input order."""
    order = tuple(int(i) for i in np.argsort(labels))
    if order == tuple(range(len(order))):
        return ct
    return M("transpose", ct, axes=order)


@vjp("tensordot")
def _tensordot(emit: Emit, g: Any, out: Any, a: Any, b: Any, axes: Any = 2) -> tuple:
    am, bm = meta(a), meta(b)
    if isinstance(axes, int):
        axes_a, axes_b = list(range(am.ndim - axes, am.ndim)), list(range(axes))
    else:
        axes_a, axes_b = ([v] if isinstance(v, int) else list(v) for v in axes)
    axes_a = [i % am.ndim for i in axes_a]
    axes_b = [i % bm.ndim for i in axes_b]
    return _tensordot_cts(emit, g, a, b, axes_a, axes_b)


@vjp("dot")
def _dot(emit: Emit, g: Any, out: Any, a: Any, b: Any) -> tuple:
    am, bm = meta(a), meta(b)
    if am.ndim == 0 or bm.ndim == 0:
        M = Math(emit)
        return (
            unbroadcast(emit, M.mul(g, b), am) if is_array(a) else None,
            unbroadcast(emit, M.mul(g, a), bm) if is_array(b) else None,
        )
    if am.ndim <= 2 and bm.ndim <= 2:
        return _matmul(emit, g, out, a, b)
    return _tensordot_cts(emit, g, a, b, [am.ndim - 1], [max(bm.ndim - 2, 0)])


@vjp("outer")
def _outer(emit: Emit, g: Any, out: Any, a: Any, b: Any) -> tuple:
    M = Math(emit)
    ct_a = ct_b = None
    if is_array(a):
        ct_a = M.reshape(M("matmul", g, M("ravel", b)), meta(a).shape)
    if is_array(b):
        ct_b = M.reshape(M("matmul", M("ravel", a), g), meta(b).shape)
    return ct_a, ct_b


# -- einsum ---------------------------------------------------------------------------------


def _einsum_terms(subscripts: str, metas: list[ArrayMeta]) -> tuple[list[list[str]], list[str],
                                                                     dict[str, int]]:
    """Each operand's labels and the output's, with ``...`` spelled out as fresh letters and
    size-1 broadcast dimensions given labels of their own; plus every label's size."""
    lhs, arrow, out_term = subscripts.partition("->")
    terms = lhs.split(",")
    used = set(subscripts)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    ell_ndims = [m.ndim - (len(t) - 3 if "..." in t else len(t)) for t, m in zip(terms, metas)]
    ellipsis = [next(fresh) for _ in range(max(ell_ndims, default=0))]
    if not arrow:
        counts = {c: lhs.count(c) for c in set(lhs) if c.isalpha()}
        out_term = "..." + "".join(sorted(c for c, n in counts.items() if n == 1))
    labels = []
    for term, n_ell in zip(terms, ell_ndims):
        before, _, after = term.partition("...")
        mid = ellipsis[len(ellipsis) - n_ell:] if "..." in term else []
        labels.append(list(before) + mid + list(after))
    sizes: dict[str, int] = {}
    for labs, m in zip(labels, metas):
        for c, d in zip(labs, m.shape):
            sizes[c] = max(sizes.get(c, 1), d)
    for labs, m in zip(labels, metas):
        for k, (c, d) in enumerate(zip(labs, m.shape)):
            if d == 1 and sizes[c] != 1:
                labs[k] = next(fresh)
                sizes[labs[k]] = 1
    before, _, after = out_term.partition("...")
    out = list(before) + (ellipsis if "..." in out_term else []) + list(after)
    return labels, out, sizes


@vjp("einsum")
def _einsum(emit: Emit, g: Any, out: Any, subscripts: str, *operands: Any,
            dtype: Any = None) -> tuple:
    M = Math(emit)
    metas = [meta(x) for x in operands]
    labels, out_labels, sizes = _einsum_terms(subscripts, metas)
    used = set(sizes) | set(subscripts)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    cts: list[Any] = [None]
    for i, x in enumerate(operands):
        if not is_array(x):
            cts.append(None)
            continue
        others = [j for j in range(len(operands)) if j != i]
        unique = list(dict.fromkeys(labels[i]))
        elsewhere = set(out_labels).union(*(labels[j] for j in others))
        present = [c for c in unique if c in elsewhere]
        missing = [c for c in unique if c not in elsewhere]
        spec = ",".join(["".join(out_labels)] + ["".join(labels[j]) for j in others])
        ct = M("einsum", f"{spec}->{''.join(present)}", g, *(operands[j] for j in others))
        if missing:
            # Labels summed inside this operand alone: the cotangent is constant along them.
            ct = M.reshape(ct, tuple(sizes[c] for c in present) + (1,) * len(missing))
            ct = M.broadcast_to(ct, tuple(sizes[c] for c in present + missing))
            ct = _permute_back(M, ct, [unique.index(c) for c in present + missing])
        if len(unique) < len(labels[i]):
            # A repeated label reads a diagonal: put the cotangent back on it.
            spelled, eyes = [], []
            for c in labels[i]:
                if c in spelled:
                    twin = next(fresh)
                    eyes.append((c, twin))
                    spelled.append(twin)
                else:
                    spelled.append(c)
            eye_ops = [M("eye", N=sizes[c], dtype=meta(g).dtype) for c, _ in eyes]
            spec = ",".join(["".join(unique)] + [c + t for c, t in eyes])
            ct = M("einsum", f"{spec}->{''.join(spelled)}", ct, *eye_ops)
        cts.append(ct)
    return tuple(cts)



