"""Every op of the kernel table against NumPy, on every pair of special values, per dtype.

One graph per dtype applies each unary op to ``x`` and each binary op to ``x`` (a column) and
``y`` (a row), so every pair of values (nan, +-inf, +-0.0, extremes, fractions) meets once; the
numba backend must give NumPy's results bit for bit (except where approximations and libm calls
are involved, which ``test_approx.py`` and ``test_float_ufuncs.py`` cover). It also checks which
ops went into the kernel, so an op silently falling back to NumPy would not hide a missing table
entry.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from npdynamo import ops
from npdynamo.backends.numba import NumbaFallbackWarning, numba_backend, ufunc_table
from npdynamo.fx import Graph, GraphModule
from npdynamo.ops.meta import ArrayMeta

FLOAT_VALUES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -7.75]
DTYPES = ["float32", "float64", "int8", "int64", "uint8", "uint64", "bool", "complex64",
          "complex128"]
COMPLEX_PARTS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e30, 3e-39, 0.75]
# approximations and libm calls round differently from NumPy's loops (test_float_ufuncs.py)
NOT_EXACT = {"exp", "tanh", "log", *ufunc_table.LIBM_OPS}
EXACT_UNARY = [n for n in ufunc_table.UFUNC_EMITTERS
               if getattr(np, n).nin == 1 and n not in NOT_EXACT]
BINARY = [n for n in ufunc_table.UFUNC_EMITTERS if getattr(np, n).nin == 2 and n not in NOT_EXACT]


def _values(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "c":  # every pair of special parts, as real and imaginary part
        with np.errstate(all="ignore"):
            return np.array([complex(r, i) for r in COMPLEX_PARTS for i in COMPLEX_PARTS],
                            dtype=dtype)
    if dtype.kind == "f":
        return np.array(FLOAT_VALUES, dtype=dtype)
    if dtype.kind == "b":
        return np.array([True, False])
    info = np.iinfo(dtype)
    return np.array(sorted({int(info.min), int(info.max), 0, 1, 2, 3, 100 % (int(info.max) + 1),
                            max(int(info.min), -1), max(int(info.min), -7)}), dtype=dtype)


def _build(dtype: np.dtype):
    graph = Graph()
    v = _values(dtype)
    x_meta, y_meta = ArrayMeta((v.size, 1), dtype), ArrayMeta((1, v.size), dtype)
    x, y = graph.placeholder("x", x_meta), graph.placeholder("y", y_meta)
    metas = {x: x_meta, y: y_meta}
    outputs, names = [], []

    def add(op_name, args, kwargs=None):
        op = ops.lookup(op_name)
        try:
            meta = op.infer(*(metas.get(a, a) for a in args), **(kwargs or {}))
        except Exception:
            return None  # NumPy refuses this dtype
        node = graph.call_function(op, args, kwargs)
        node.meta["val"] = meta
        metas[node] = meta
        outputs.append(node)
        names.append(op_name)
        return node

    for name in EXACT_UNARY:
        add(name, (x,))
    for name in BINARY:
        add(name, (x, y))
    for const in (2, -1, 0.5):
        add("multiply", (x, const))
        add("add", (const, y))
    cond = add("greater", (x, y))
    add("where", (cond, x, y))
    add("where", (x, y, 1.5))
    add("clip", (x, -1, 3))
    add("clip", (x, None, 0.5))
    for target in ("float32", "float64", "int16", "uint8", "bool"):
        add("astype", (x,), {"dtype": np.dtype(target)})
    add("power", (x, 2))
    graph.output(tuple(outputs))
    return graph, [v.reshape(-1, 1), v.reshape(1, -1)], names


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_table_op_matches_numpy_exactly(dtype):
    dtype = np.dtype(dtype)
    graph, inputs, names = _build(dtype)
    gm = GraphModule(graph)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error", NumbaFallbackWarning)
        want = gm.forward(*inputs)
        compiled = numba_backend(gm, inputs)
        got = compiled(*inputs)
    report = compiled.report
    fused = {op for group in report.groups for op in group}
    not_fused = {name.rstrip("_0123456789") for name, _ in report.not_fused}
    for name, g, w in zip(names, got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape, name
        # complex values part by part (a nan in one part says nothing of the other)
        parts = [(w.real, g.real), (w.imag, g.imag)] if w.dtype.kind == "c" else [(w, g)]
        for want_part, got_part in parts:
            floats = want_part.dtype.kind == "f"
            same = np.array_equal(got_part, want_part, equal_nan=floats)
            assert same, f"{name} on {dtype}:\n{g}\n{w}"
            if floats:
                zeros = want_part == 0
                assert np.array_equal(np.signbit(got_part[zeros]), np.signbit(want_part[zeros])), \
                    f"{name}: -0.0"
    # the table's float and integer ops must really be in the kernel
    if dtype.kind in "fi":
        assert {"add", "subtract", "multiply", "maximum", "less", "where"} <= fused
        assert not ({"add", "subtract", "multiply", "maximum"} & not_fused)
    if dtype.kind == "c":  # NumPy's complex loops, step for step (runtime.complex_*)
        assert {"add", "subtract", "multiply", "divide", "absolute", "conjugate", "square",
                "equal", "not_equal", "isnan", "isinf", "isfinite", "power", "where"} <= fused
    if dtype.kind in "iu":  # shift counts below 0 and past the width included (_values)
        assert {"left_shift", "right_shift", "bitwise_xor", "invert"} <= fused
