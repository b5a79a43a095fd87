"""Contraction ops: matmul, dot, einsum, outer and tensordot, with their shape/dtype rules.

These are opaque to fusion (the backends call BLAS-backed NumPy for them). Their rules check the
contracted sizes and report mismatches with both shapes, the way NumPy's errors do.
"""

from __future__ import annotations

import numpy as np

from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import Op, register
from npdynamo.ops.rules import broadcast_shapes, fmt_shape, to_meta

_MATMUL_SIG = "(n?,k),(k,m?)->(n?,m?)"


def _matmul_rule(x1: object, x2: object, *, dtype: np.dtype | None = None) -> ArrayMeta:
    a, b = to_meta("matmul", x1), to_meta("matmul", x2)
    extra = {} if dtype is None else {"signature": (None, None, dtype)}
    out_dtype = np.matmul.resolve_dtypes((a.dtype, b.dtype, None), casting="same_kind", **extra)[-1]
    for i, m in enumerate((a, b)):
        if m.ndim == 0:
            raise ValueError(
                f"matmul: Input operand {i} does not have enough dimensions (has 0, gufunc core "
                f"with signature {_MATMUL_SIG} requires 1)"
            )
    b_dim = b.ndim - 2 if b.ndim >= 2 else 0
    if a.shape[-1] != b.shape[b_dim]:
        raise ValueError(
            f"matmul: shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} do not align: "
            f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[b_dim]} (dim {b_dim})"
        )
    batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    shape = batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim >= 2 else ())
    return ArrayMeta(shape, out_dtype, scalar=shape == ())


def _dot_rule(a: object, b: object) -> ArrayMeta:
    x, y = to_meta("dot", a), to_meta("dot", b)
    dtype = np.result_type(x.dtype, y.dtype)
    if x.ndim == 0 or y.ndim == 0:
        shape = x.shape or y.shape  # a 0-d factor scales the other operand
    else:
        y_dim = 0 if y.ndim == 1 else y.ndim - 2
        if x.shape[-1] != y.shape[y_dim]:
            raise ValueError(
                f"dot: shapes {fmt_shape(x.shape)} and {fmt_shape(y.shape)} not aligned: "
                f"{x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[y_dim]} (dim {y_dim})"
            )
        shape = x.shape[:-1] + y.shape[:y_dim] + y.shape[y_dim + 1 :]
    return ArrayMeta(shape, dtype, scalar=shape == ())


def _outer_rule(a: object, b: object) -> ArrayMeta:
    x, y = to_meta("outer", a), to_meta("outer", b)
    dtype = np.multiply.resolve_dtypes((x.dtype, y.dtype, None))[-1]
    return ArrayMeta((x.size, y.size), dtype)


def _tensordot_axes(axes: object) -> tuple[list[int], list[int]]:
    if isinstance(axes, int):
        return list(range(-axes, 0)), list(range(axes))
    axes_a, axes_b = axes  # type: ignore[misc]
    as_list = lambda v: [v] if isinstance(v, int) else list(v)
    return as_list(axes_a), as_list(axes_b)


def _tensordot_rule(a: object, b: object, *, axes: object = 2) -> ArrayMeta:
    x, y = to_meta("tensordot", a), to_meta("tensordot", b)
    axes_a, axes_b = _tensordot_axes(axes)
    for axs, m in ((axes_a, x), (axes_b, y)):
        for k, ax in enumerate(axs):
            if not -m.ndim <= ax < m.ndim:
                raise IndexError(f"tensordot: axis {ax} out of range for shape {m.shape}")
            axs[k] = ax % m.ndim
        if len(set(axs)) != len(axs):
            raise ValueError("tensordot: repeated axis in transpose")
    if len(axes_a) != len(axes_b) or any(
        x.shape[i] != y.shape[j] for i, j in zip(axes_a, axes_b)
    ):
        raise ValueError(
            f"tensordot: shape-mismatch for sum: axes {axes_a} of {fmt_shape(x.shape)} and "
            f"{axes_b} of {fmt_shape(y.shape)}"
        )
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes_a) + tuple(
        d for i, d in enumerate(y.shape) if i not in axes_b
    )
    return ArrayMeta(shape, np.result_type(x.dtype, y.dtype))


# -- einsum ---------------------------------------------------------------------------------

_ELLIPSIS = "..."


def _parse_term(term: str, where: str) -> list[str]:
    """The items of one subscripts term: single-letter labels and at most one ``...``."""
    items: list[str] = []
    i = 0
    while i < len(term):
        if term.startswith(_ELLIPSIS, i):
            if _ELLIPSIS in items:
                raise ValueError(f"einsum: {where} contains more than one ellipsis ('...')")
            items.append(_ELLIPSIS)
            i += 3
            continue
        c = term[i]
        if c == ".":
            raise ValueError(
                f"einsum: einstein sum subscripts string contains a '.' that is not part of an "
                f"ellipsis ('...') in {where}"
            )
        if not (c.isascii() and c.isalpha()):
            raise ValueError(
                f"einsum: invalid subscript {c!r} in einstein sum subscripts string, subscripts "
                "must be letters"
            )
        items.append(c)
        i += 1
    return items


def _einsum_rule(subscripts: str, *operands: object, dtype: np.dtype | None = None) -> ArrayMeta:
    if not isinstance(subscripts, str):
        raise TypeError("einsum: the subscripts must be a string")
    metas = [to_meta("einsum", x) for x in operands]
    spec = subscripts.replace(" ", "")
    lhs, arrow, out_term = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) < len(metas):
        raise ValueError(
            "einsum: more operands provided to einstein sum function than specified in the "
            "subscripts string"
        )
    if len(terms) > len(metas):
        raise ValueError(
            "einsum: fewer operands provided to einstein sum function than specified in the "
            "subscripts string"
        )
    sizes: dict[str, list[int]] = {}
    lenient: list[ValueError] = []
    counts: dict[str, int] = {}
    ellipsis_shapes = []
    for i, (term, meta) in enumerate(zip(terms, metas)):
        items = _parse_term(term, f"operand {i}")
        n_labels = len(items) - (_ELLIPSIS in items)
        if n_labels > meta.ndim or (_ELLIPSIS not in items and n_labels < meta.ndim):
            raise ValueError(
                f"einsum: subscripts {term!r} do not match operand {i} of shape "
                f"{fmt_shape(meta.shape)}"
            )
        dims = list(meta.shape)
        own: dict[str, int] = {}
        for item in items:
            if item == _ELLIPSIS:
                n_ell = meta.ndim - n_labels
                ellipsis_shapes.append(tuple(dims[:n_ell]))
                del dims[:n_ell]
                continue
            size = dims.pop(0)
            seen = own.get(item)
            if seen is not None and seen != size:
                mismatch = ValueError(
                    f"einsum: dimensions in operand {i} for collapsing index {item!r} don't "
                    f"match ({seen} != {size})"
                )
                if seen:
                    raise mismatch
                # When the result is a view of the lone operand, NumPy lets a repeated label
                # whose first dimension is 0 take the later size; otherwise it is an error.
                lenient.append(mismatch)
            own[item] = size
            counts[item] = counts.get(item, 0) + 1
        for label, size in own.items():
            sizes.setdefault(label, []).append(size)
    label_size = {
        label: broadcast_shapes("einsum", *((s,) for s in ss))[0] for label, ss in sizes.items()
    }
    ell_shape = broadcast_shapes("einsum", *ellipsis_shapes) if ellipsis_shapes else ()
    if arrow:
        out_items = _parse_term(out_term, "the output")
        for label in out_items:
            if label != _ELLIPSIS and label not in label_size:
                raise ValueError(
                    f"einsum: einstein sum subscripts string included output subscript "
                    f"{label!r} which never appeared in an input"
                )
            if out_items.count(label) > 1:
                raise ValueError(
                    f"einsum: einstein sum subscripts string includes output subscript "
                    f"{label!r} multiple times"
                )
        if ell_shape and _ELLIPSIS not in out_items:
            raise ValueError(
                "einsum: output has more dimensions than subscripts given in einstein sum, but "
                "no '...' ellipsis provided to broadcast the extra dimensions."
            )
    else:
        out_items = [_ELLIPSIS] + sorted(c for c, n in counts.items() if n == 1)
    shape: tuple[int, ...] = ()
    for item in out_items:
        shape += ell_shape if item == _ELLIPSIS else (label_size[item],)
    view = len(metas) == 1 and not set(label_size) - set(out_items)
    if lenient and not view:
        raise lenient[0]
    if view:
        # A lone operand without summation comes back as a view of itself: dtype= is ignored.
        out_dtype = metas[0].dtype
    elif dtype is None:
        out_dtype = np.result_type(*(m.dtype for m in metas))
    else:
        for i, m in enumerate(metas):
            if not np.can_cast(m.dtype, dtype, casting="safe"):
                raise TypeError(
                    f"einsum: Iterator operand {i} dtype could not be cast from {m.dtype!r} to "
                    f"{dtype!r} according to the rule 'safe'"
                )
        out_dtype = dtype
    return ArrayMeta(shape, out_dtype, scalar=shape == ())


register(Op("matmul", np.matmul, _matmul_rule, defaults={"dtype": None}, cost="blas"))
register(Op("dot", np.dot, _dot_rule, cost="blas"))
register(Op("outer", np.outer, _outer_rule, cost="blas"))
register(Op("tensordot", np.tensordot, _tensordot_rule, defaults={"axes": 2}, cost="blas"))
register(Op("einsum", np.einsum, _einsum_rule, defaults={"dtype": None}, cost="blas"))
