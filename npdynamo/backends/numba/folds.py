"""Reduction folds as kernel source (part of the numba backend's code generation, ``codegen``).

``fold_start`` is the value a reduction's accumulator starts from and ``fold`` the expression
folding one element into it, per reduction kind and dtype: NumPy's identities (+0.0 for float
sums, the dtype's extremes for max/min), NaN-propagating max/min (``runtime.fmaximum``),
integer sums and products that wrap as NumPy's do, and in the hot loop reassociable float
additions (``runtime.radd``) so that LLVM vectorises them.
"""

from __future__ import annotations

import numpy as np

from npdynamo.backends.numba.ufunc_table import literal, wrapping_arithmetic


def fold_start(kind: str, dtype: np.dtype) -> str:
    """The starting value of a ``kind`` reduction folding elements of ``dtype``."""
    if kind == "sum":
        # +0.0, as NumPy's add.reduce starts from it (a sum of -0.0s is +0.0 there too)
        return literal(0.0 if dtype.kind == "f" else 0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    if kind in ("any", "all"):
        return "False" if kind == "any" else "True"
    if dtype.kind == "b":
        return "False" if kind == "max" else "True"
    if dtype.kind == "f":
        return literal(-np.inf if kind == "max" else np.inf, dtype)
    info = np.iinfo(dtype)
    return literal(info.min if kind == "max" else info.max, dtype)


def fold(kind: str, dtype: np.dtype, acc: str, value: str, vector: bool) -> str:
    """``acc`` folded with ``value``; ``vector`` marks the hot loop (reassociable helpers)."""
    if kind in ("any", "all") or dtype.kind == "b":
        return f"({acc} | {value})" if kind in ("any", "max") else f"({acc} & {value})"
    if kind in ("sum", "prod"):
        if dtype.kind == "f":
            if vector:
                return f"{'radd' if kind == 'sum' else 'rmul'}({acc}, {value})"
            return f"({acc} {'+' if kind == 'sum' else '*'} {value})"
        return wrapping_arithmetic("+" if kind == "sum" else "*", acc, value, dtype)
    if dtype.kind == "f":
        return f"{'fmaximum' if kind == 'max' else 'fminimum'}({acc}, {value})"
    return f"({value} if {value} {'>' if kind == 'max' else '<'} {acc} else {acc})"
