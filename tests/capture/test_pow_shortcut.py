"""``ndarray.__pow__``'s shortcuts (``ops.pow_shortcut``): ``z ** 2``, ``z ** -1`` and
``z ** 0.5`` on a complex array are NumPy's square / reciprocal / sqrt, which differ from
``np.power`` in the last bit for about a third of random inputs. Every spelling of the operator
must give what Python + NumPy give, bit for bit: the dunder called by name, a masked in-place
update, and an in-place square whose rounding depends on the written array's strides."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from tests.differential import check_same


def _complex(n: int, dtype=np.complex128, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    z[:4] = [0, -0.0, complex(np.inf, 1.0), complex(1.0, np.nan)]
    return z.astype(dtype)


def dunder_by_name(z):
    return z.__pow__(2), z.__pow__(-1), z.__pow__(0.5), z.__pow__(2.0), z.__rpow__(2)


def masked_inplace_square(z):
    m = z.real > 0
    z[m] **= 2
    return z


def view_inplace_square(z):
    w = z[::2]
    w **= 2
    return z


def square_into_view(z):
    w = z[1::3]
    np.square(w, out=w)
    return z


def fresh_inplace_square(z):
    w = z * 1.5
    w **= 2
    return w


def _differs_from_power(z: np.ndarray) -> None:
    # the inputs are worth testing: power and square disagree on some of them
    assert not np.array_equal(np.power(z, 2), np.square(z), equal_nan=True)


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("fn,graphs,breaks", [
    (dunder_by_name, 1, 0), (masked_inplace_square, 1, 0), (fresh_inplace_square, 1, 0),
    # a write into a strided view breaks (see below): nothing before it, so no graph
    (view_inplace_square, 0, 1), (square_into_view, 0, 1)])
def test_complex_powers_match_python(fn, graphs, breaks, dtype, backend):
    if backend == "numba":
        pytest.importorskip("numba")
    z = _complex(2001, dtype)
    _differs_from_power(z)
    with np.errstate(all="ignore"):
        check_same(fn, z, backend=backend, graphs=graphs, breaks=breaks)


@pytest.mark.parametrize("fn,graphs", [(dunder_by_name, 1), (masked_inplace_square, 1),
                                       (fresh_inplace_square, 1)])
def test_shortcuts_stay_in_the_graph(fn, graphs):
    with np.errstate(all="ignore"):
        report = npdynamo.explain(fn)(_complex(64))
    assert (report.graph_count, report.graph_break_count) == (graphs, 0)


def test_strided_inplace_square_breaks_with_a_reason():
    # NumPy squares into a strided array without the fused multiply-adds of its contiguous
    # loop: the graph cannot know the layout, so the write runs in Python
    report = npdynamo.explain(view_inplace_square)(_complex(64))
    assert report.graph_break_count == 1
    assert "strides" in str(report)
