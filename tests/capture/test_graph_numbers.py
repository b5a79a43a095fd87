"""``float(a)``, ``int(a)`` and ``a.item()`` of a 0-d graph array: Python numbers the graph
computes. They stay in the graph while they are only stored, appended, returned or combined
with arrays and numbers; a use that needs the value breaks at that use. Every case runs plain
and compiled (eager and numba) on copies of the same inputs."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npdynamo
from tests.differential import check_same


def counts(fn, *args) -> tuple[int, int]:
    with contextlib.redirect_stdout(io.StringIO()):
        report = npdynamo.explain(fn)(*args)
    return report.graph_count, report.graph_break_count


def history_of_losses(x, history):
    loss = (x * x).mean()
    history.append(float(loss))
    return x - 0.1 * x, history


def scale_by_mean(x):
    m = float(x.mean())  # a weak Python float: a float32 array stays float32
    return x * m, x / (m + 1.0), m * 2.0 + 1.0


def count_positive(x):
    k = int((x > 0).sum())
    return x * k, k, k + 1, {"count": k}


def item_of_each_kind(x):
    return x.sum().item(), x.astype(np.int64).max().item(), x.astype(np.uint8).min().item()


def bool_item(x):
    return x * 2, (x > 0).any().item()  # a Python bool: the value goes to Python (a break)


def type_checks(x):
    m = float(x.mean())
    k = x.sum().item()
    return isinstance(m, float), type(k) is float, isinstance(m, int), x * m


def value_needed(x):
    m = float(x.max())
    if m > 1.0:  # Python needs the value: a break here, where the graph has computed m
        return x * m, f"{m:.3f}"
    return x, f"{m:.3f}"


def range_of_int(x):
    n = int((x > 0).sum())
    total = x * 0
    for i in range(n):  # the trip count is the value: a break at range()
        total = total + i
    return total


def int_of_nan(x):
    return int(x.max())  # NaN: Python raises ValueError, the graph run too (the frame reruns)


def carried_through_a_loop(x):
    s = 0.0
    for _t in range(20):
        x = x * 0.5 + 1.0
        s = s + float(x.sum())
    return x, s


ALL = [
    (history_of_losses, lambda: (np.arange(8.0) - 3.0, []), (1, 0)),
    (scale_by_mean, lambda: (np.arange(6, dtype=np.float32),), (1, 0)),
    (count_positive, lambda: (np.array([-1.0, 2.0, 3.0]),), (1, 0)),
    (item_of_each_kind, lambda: (np.array([[1.5, -2.0], [3.0, 0.25]], np.float32),), (1, 0)),
    (bool_item, lambda: (np.array([0.5, -2.0]),), (1, 1)),
    (type_checks, lambda: (np.arange(4.0),), (1, 0)),  # resumed after the last op
    (value_needed, lambda: (np.array([0.5, 2.0]),), (2, 1)),
    (value_needed, lambda: (np.array([0.5, 0.75]),), (1, 1)),  # the resumed branch: no ops
    (range_of_int, lambda: (np.array([1.0, 2.0, -1.0]),), (2, 1)),
    (carried_through_a_loop, lambda: (np.ones(4),), (1, 0)),
]


# inputs whose sums are exact in any order: the numba backend's reductions give the same
# Python numbers bitwise
@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn,make,expected", ALL,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(ALL)])
def test_same_as_python_with_breaks_only_where_the_value_is_needed(fn, make, expected, backend):
    check_same(fn, *make(), backend=backend, calls=3, graphs=expected[0], breaks=expected[1])
    npdynamo.reset()
    assert counts(fn, *make()) == expected


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_int_of_nan_raises_as_python_does(backend):
    check_same(int_of_nan, np.array([1.0, np.nan]), backend=backend, graphs=1, breaks=0)
    check_same(int_of_nan, np.array([1.0, np.inf]), backend=backend, graphs=1, breaks=0)


def test_the_number_is_a_python_number_of_the_right_type():
    compiled = npdynamo.compile(item_of_each_kind)
    got = compiled(np.array([[1.5, -2.0]], np.float32))
    assert [type(v) for v in got] == [float, int, int]
    m = npdynamo.compile(scale_by_mean)(np.ones(3, np.float32))[2]
    assert type(m) is float


def size_one(x):
    return float(x[:1]) + 1.0  # NumPy 2: TypeError, or the value with a DeprecationWarning


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_size_one_array_that_is_not_0d_is_left_to_python():
    # raises or not, as Python does
    check_same(size_one, np.array([2.0, 3.0]), graphs=0, breaks=1)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32,
                                 min_value=-100, max_value=100), min_size=1, max_size=6),
       dtype=st.sampled_from([np.float32, np.float64, np.int64, np.int8, np.bool_]))
def test_generated_values_and_dtypes(values, dtype):
    npdynamo.reset()  # every example compiled (not past the cache limit, in Python)
    x = np.array(values).astype(dtype)
    check_same(item_of_each_kind, x, graphs=1, breaks=0)
    if dtype != np.bool_:
        check_same(scale_by_mean, x, graphs=1, breaks=0)
        check_same(count_positive, x, graphs=1, breaks=0)
