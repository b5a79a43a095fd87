"""explain shows which graphs run as numba kernels and which fell back to NumPy."""

import contextlib
import io

import numpy as np

import npdynamo


def _softmax_with_break(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    print("between")
    return e / e.sum(axis=-1, keepdims=True)


def test_explain_lists_numba_kernels_per_graph():
    with contextlib.redirect_stdout(io.StringIO()):
        out = npdynamo.explain(_softmax_with_break, backend="numba")(np.ones((4, 8)))
    assert out.graph_count == 2
    assert all(r is not None and not r.fell_back for r in out.backend_reports)
    text = str(out)
    assert "Backend:" in text and "kernel" in text
    np.testing.assert_allclose(out.result, _softmax_with_break(np.ones((4, 8))), rtol=1e-6)
