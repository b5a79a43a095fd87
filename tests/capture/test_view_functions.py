"""np.flip/fliplr/flipud/rot90 return views: captured as view ops, so a later write to the base
shows through them, a write through them reaches the base (as a graph break), and a returned
one is still a view of the argument."""

import numpy as np
import pytest

from tests.differential import check_same


def read_flipped(x):
    return np.flip(x, 0) * 2.0 + np.rot90(x).sum() + np.fliplr(x)[0] - np.flipud(x)[-1]


def base_written_after(x):
    v = np.rot90(x)
    x[0, 0] = 100.0  # NumPy: v sees it
    return v.copy(), np.flip(x).sum()


def written_through_the_view(x):
    v = np.flip(x, 1)
    v[0] = -1.0  # reaches x
    return x.sum()


def returned_view(x):
    return np.flipud(x)


@pytest.mark.parametrize("fn,breaks", [(read_flipped, 0), (base_written_after, 0),
                                       (written_through_the_view, 1)])
def test_view_functions_match_python(fn, breaks):
    # the write through the view breaks; the sum after it is the resume function's graph
    check_same(fn, np.arange(12.0).reshape(3, 4), calls=2, graphs=1, breaks=breaks)


def test_a_returned_flip_is_a_view_of_the_argument():
    import npdynamo

    x = np.arange(6.0).reshape(2, 3)
    out = npdynamo.compile(returned_view)(x)
    assert np.shares_memory(out, x) and np.array_equal(out, np.flipud(x))
    out[0, 0] = 42.0
    assert x[1, 0] == 42.0


# -- x.real / x.imag of a complex array: views ------------------------------------------------
Z = np.arange(6.0) + 1j * np.arange(6.0, 0.0, -1.0)


def normalized_parts(c):
    shifted = c - c.real.min() - 1j * c.imag.min()
    return shifted / np.abs(shifted).max()


def parts_see_writes(c):
    re = c.real
    c[0] = 5 + 5j  # re sees it
    im = c.imag
    im[1] = -1.0  # a write through the view (a graph break) reaches c
    return re * 2, c.sum()


def real_parts_of_a_real_array(x):
    return x.real is x, x.imag  # the array itself; a new read-only array (left to Python)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_complex_parts_are_views(backend):
    check_same(normalized_parts, Z, backend=backend, graphs=1, breaks=0)
    # the write through .imag breaks: a graph before it and one after
    check_same(parts_see_writes, Z, backend=backend, graphs=2, breaks=1)
    # .real and .imag of a real array are left to Python: a break at each, no graph
    check_same(real_parts_of_a_real_array, Z.real.copy(), backend=backend, graphs=0, breaks=2)
    import npdynamo

    assert npdynamo.explain(normalized_parts)(Z).graph_break_count == 0
