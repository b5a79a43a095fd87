"""k-means as numba's own examples write it: ``math.sqrt`` of a graph scalar, ``np.array`` of
nested lists of graph scalars, and ``np.sum(A[labels == i, j])`` inside comprehensions all
stay in the graph, with Python's and NumPy's exact semantics: ``math.sqrt`` returns a Python
float and raises ValueError for a negative value; ``np.array`` promotes the leaves' dtypes as
NumPy's discovery does; ``A[mask, j]`` selects what NumPy selects. Each case runs plain and
compiled on copies of the same inputs (eager bitwise; numba at its tolerance)."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest

import npdynamo
from tests.capture.comprehension_programs import kmeans
from tests.differential import check_same, run_both


def counts(fn, *args) -> tuple[int, int]:
    npdynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            report = npdynamo.explain(fn)(*args)
        except Exception:  # the program raises: the report is not needed
            return (-1, -1)
    return report.graph_count, report.graph_break_count


# -- math.sqrt ---------------------------------------------------------------------------------
def norm_of(x):
    s = math.sqrt(np.sum(x * x))
    return s, type(s).__name__, x / s, [s, s * 2.0]


def sqrt_of_kinds(x):
    return (math.sqrt(x.sum()), math.sqrt(x.astype(np.float32).max()),
            math.sqrt(x.astype(np.int64).min()), math.sqrt((x > 0).any()),
            math.sqrt(np.asarray(x.sum())))


def sqrt_of_negative(x):
    return math.sqrt(x.sum())  # ValueError when the graph runs, as in Python


def sqrt_of_a_python_number(x, lr):
    return x * math.sqrt(lr)


def sqrt_of_complex(z):
    return math.sqrt(z.sum())  # a NumPy complex: left to Python (ComplexWarning or not)


# -- np.array of nested lists -----------------------------------------------------------------
def nested_scalars(x):
    return np.array([[np.sum(x[0]), np.max(x[1])], [np.min(x[0]), 2.0]])


def nested_float32(x):
    return np.array([[x[0].sum(), x[1].max()], [x[0].min(), np.float32(1.5)]])


def nested_mixed_dtypes(x):
    return np.array([[x.astype(np.int8).sum(dtype=np.int8), x.astype(np.float16).max()],
                     [x.astype(np.uint8).min(), True]])


def nested_rows(x):
    return np.array([[x[0] * 2, x[1]], [x[1], x[0] - 1]])


def ragged(x):
    return np.array([[x[0].sum(), x[1].sum()], [x[0].sum()]])


def shapes_differ(x):
    return np.array([[x[0], x[1, :2]], [x[0], x[1]]])


# -- masked selections with a column index -------------------------------------------------------
def centre_means(A, labels, k):
    return np.array([[np.sum(A[labels == i, j]) / np.sum(labels == i)
                      for j in range(A.shape[1])] for i in range(k)])


def masked_column_kinds(A, labels):
    m = labels == 1
    return np.mean(A[m, 0]), A[m, 1].sum(), np.sum(A[m, 2] * 2.0 + A[m, 0])


def masked_column_out_of_bounds(A, labels):
    return np.sum(A[labels == 1, 7])


def masked_column_3d(B, labels):
    return np.sum(A3 := B[labels == 0, 1]), A3.shape  # the selection itself: a break


RNG = np.random.default_rng(0)
X = RNG.random((3, 4))
A = RNG.random((12, 3))
LABELS = np.array([0, 1, 2, 1, 0, 2, 1, 1, 0, 2, 2, 1])

#: (function, arguments, the explain report's (graphs, breaks) or None, the counts check_same
#: asserts: where the call raises, the entries made before Python reran the frame)
CASES = [
    (norm_of, (X,), (1, 0), (1, 0)),
    (norm_of, (X.astype(np.float32),), (1, 0), (1, 0)),
    (sqrt_of_kinds, (X,), (1, 0), (1, 0)),
    (sqrt_of_negative, (-X,), (-1, -1), (1, 0)),
    (sqrt_of_negative, (np.array([np.nan, 1.0]),), (1, 0), (1, 0)),
    (sqrt_of_negative, (np.array([-0.0]),), (1, 0), (1, 0)),
    (sqrt_of_a_python_number, (X, 0.25), (1, 0), (1, 0)),
    (sqrt_of_complex, (X + 1j,), None, (1, 1)),
    (nested_scalars, (X,), (1, 0), (1, 0)),
    (nested_scalars, (X.astype(np.float32),), (1, 0), (1, 0)),
    (nested_float32, (X.astype(np.float32),), (1, 0), (1, 0)),
    (nested_mixed_dtypes, (X * 3,), (1, 0), (1, 0)),
    (nested_rows, (X,), (1, 0), (1, 0)),
    (ragged, (X,), None, (1, 1)),
    (shapes_differ, (X,), None, (0, 1)),
    (centre_means, (A, LABELS, 3), (1, 0), (1, 0)),
    # an empty centre: 0/0, NumPy's warning and nan
    (centre_means, (A, LABELS, 4), (1, 0), (1, 0)),
    (masked_column_kinds, (A, LABELS), (1, 0), (1, 0)),
    (masked_column_out_of_bounds, (A, LABELS), None, (0, 0)),
    (masked_column_3d, (RNG.random((12, 2, 3)), LABELS), None, (1, 1)),
    (kmeans, (A, 3, 2, A[:3].copy()), (1, 0), (1, 0)),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("fn,args,expected,made", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_eager_matches_python(fn, args, expected, made):
    check_same(fn, *args, graphs=made[0], breaks=made[1])
    if expected is not None:
        assert counts(fn, *args) == expected


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("fn,args,expected,made", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_numba_matches_python(fn, args, expected, made):
    pytest.importorskip("numba")
    compiled = npdynamo.compile(fn, backend="numba")
    run = run_both(fn, compiled, args, {})
    if run.exc is not None:
        return  # run_both checked the same exception type and message
    want, got = run.expected, run.got
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got, strict=True):
        assert type(g) is type(w)
        if isinstance(w, (np.ndarray, np.generic, float)):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
        else:
            assert str(g) == str(w)


def test_sqrt_result_is_a_python_float_and_negative_raises_as_python():
    compiled = npdynamo.compile(sqrt_of_negative)
    assert type(compiled(np.array([4.0]))) is float
    with pytest.raises(ValueError) as plain:
        sqrt_of_negative(np.array([-4.0]))
    with pytest.raises(ValueError) as got:
        compiled(np.array([-4.0]))
    assert str(got.value) == str(plain.value)


def test_promotion_in_discovery_order_is_numpys():
    # the leaves' dtypes, promoted as np.array does: float32 with a Python float is float64
    got = npdynamo.compile(nested_scalars)(X.astype(np.float32))
    assert got.dtype == nested_scalars(X.astype(np.float32)).dtype == np.float64
    got = npdynamo.compile(nested_float32)(X.astype(np.float32))
    assert got.dtype == np.float32


def normalised(x):
    return x / math.sqrt(np.sum(x * x))


def test_sqrt_exports_to_onnx():
    ort = pytest.importorskip("onnxruntime")
    x = np.arange(1.0, 5.0)
    model = npdynamo.export(normalised, x).to_onnx()
    session = ort.InferenceSession(model.SerializeToString())
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, normalised(x), rtol=1e-15)


def test_the_break_of_math_sqrt_of_a_complex_says_what_it_was_given():
    report = npdynamo.explain(sqrt_of_complex)(X + 1j)
    (reason,) = [b.reason for b in report.break_reasons]
    assert "math.sqrt of a complex128 value" in reason and "runs in Python" in reason, reason
