"""Code nobody here wrote, where npdynamo itself failed (issue 23): each case matches plain
Python on both backends, and ``fullgraph=True`` gives ``Unsupported`` or a graph, never an
internal traceback. Also the mechanism behind it: an exception npdynamo raises while capturing
a line is a graph break at that line (kind ``internal_error``), never the user's exception."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo import ops
from npdynamo.ops.elementwise import ufunc_meta
from tests.differential import check_same

BACKENDS = ["eager", "numba"]


def divmod_and_floor_divide(a):
    q, r = np.divmod(a, 2)
    return q, r, -a // 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_divmod_with_floor_divide(backend):
    check_same(divmod_and_floor_divide, np.arange(-7, 8), backend=backend, graphs=1, breaks=0)
    # another dtype: a second entry
    check_same(divmod_and_floor_divide, np.arange(-7.0, 8.0) / 3, backend=backend, graphs=2,
               breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_divmod_is_one_graph_under_fullgraph(backend):
    compiled = npdynamo.compile(divmod_and_floor_divide, backend=backend, fullgraph=True)
    check_same(divmod_and_floor_divide, np.arange(-7, 8), compiled=compiled, graphs=1, breaks=0)


def jacobi(A, b, tol=1e-10, max_iter=100):
    x = np.zeros_like(b)
    D = np.diag(A)
    R = A - np.diagflat(D)
    for k in range(max_iter):
        x_new = (b - R @ x) / D
        if np.linalg.norm(x_new - x, ord=np.inf) < tol:
            return x_new, k + 1
        x = x_new
    return x, max_iter


@pytest.mark.parametrize("backend", BACKENDS)
def test_for_loop_returning_on_a_data_dependent_test(backend):
    A = np.array([[4.0, 1, 0], [1, 5, 2], [0, 2, 6]])
    b = np.array([1.0, 2, 3])
    check_same(jacobi, A, b, backend=backend, graphs=1, breaks=0)
    # runs out of iterations (other tol and max_iter: a second entry)
    check_same(jacobi, A, b, 1e-3, 2, backend=backend, graphs=2, breaks=0)


def mandelbrot(n, maxit):
    # the NumPy-book way: flatten by assigning shape, shrink the work set by masks
    x = np.linspace(-2, 1, n)
    y = np.linspace(-1.5, 1.5, n)
    C = x[np.newaxis, :] + 1j * y[:, np.newaxis]
    Xi, Yi = np.mgrid[0:n, 0:n]
    Xi.shape = Yi.shape = C.shape = n * n
    Z = np.zeros(C.shape, complex)
    img = np.zeros((n, n), int)
    for i in range(maxit):
        np.multiply(Z, Z, Z)
        np.add(Z, C, Z)
        rem = abs(Z) > 2.0
        img[Xi[rem], Yi[rem]] = i + 1
        rem = ~rem
        Z = Z[rem]
        Xi, Yi = Xi[rem], Yi[rem]
        C = C[rem]
    return img, Xi, Yi, Z


@pytest.mark.parametrize("backend", BACKENDS)
def test_shape_assignment_then_mask_loop(backend):
    # breaks at mgrid[...], the three shape stores, out=, the mask, and the loop around them
    check_same(mandelbrot, 8, 6, backend=backend, graphs=4, breaks=9)


def escape_sets(Z, C, maxit):
    # the same array on the stack three times at a break (np.multiply(Z, Z, Z) with out=):
    # one object, so the write reaches the name the loop reads next
    found = []
    for _ in range(maxit):
        np.multiply(Z, Z, Z)
        np.add(Z, C, Z)
        rem = abs(Z) > 2.0
        found.append(Z[rem])
        rem = ~rem
        Z = Z[rem]
        C = C[rem]
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mask_selection_is_one_object_at_a_break(backend):
    C = (np.linspace(-2, 1, 6)[None, :] + 1j * np.linspace(-1.5, 1.5, 6)[:, None]).ravel()
    check_same(escape_sets, np.zeros(36, complex), C, 5, backend=backend, graphs=1, breaks=4)


def view_reshaped_in_place(m):
    Xi = m[0]
    Xi.shape = Xi.size
    npdynamo.graph_break()
    return Xi, m


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_is_one_object_at_a_break(backend):
    # breaks: the shape store and graph_break()
    check_same(view_reshaped_in_place, np.arange(18.0).reshape(2, 3, 3), graphs=0, breaks=2,
               backend=backend)


def reshape_by_input_shape(W, x):
    return ((x @ W).reshape(x.shape) ** 2).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_of_compiled_loss_over_a_second_shape(backend):
    W = np.linspace(-1, 1, 9).reshape(3, 3)
    compiled = npdynamo.value_and_grad(npdynamo.compile(reshape_by_input_shape, backend=backend))
    plain = npdynamo.value_and_grad(reshape_by_input_shape)
    for n in (4, 5, 6):  # the second shape makes the batch dimension dynamic
        x = np.arange(n * 3.0).reshape(n, 3) / 7
        (value, grad), (want, want_grad) = compiled(W, x), plain(W, x)
        np.testing.assert_allclose(value, want, rtol=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)


def test_reshape_by_a_symbolic_shape_is_captured():
    compiled = npdynamo.compile(reshape_by_input_shape, dynamic=True, fullgraph=True)
    W = np.eye(3)
    for n in (4, 7):
        x = np.ones((n, 3))
        assert compiled(W, x) == reshape_by_input_shape(W, x)


# -- the mechanism -----------------------------------------------------------------------------
def _failing_rule(*args, **kwargs):
    raise AttributeError("a rule's own bug")


def uses_sin(x):
    y = x + 1
    return np.sin(y) * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rule_that_fails_is_a_graph_break_not_the_users_exception(backend, monkeypatch):
    monkeypatch.setattr(ops.REGISTRY["sin"], "rule", _failing_rule)
    check_same(uses_sin, np.arange(4.0), backend=backend, graphs=2, breaks=1)
    report = npdynamo.explain(uses_sin)(np.arange(4.0))
    assert [r.kind for r in report.break_reasons] == ["internal_error"]
    assert "AttributeError: a rule's own bug" in report.break_reasons[0].reason
    assert report.break_reasons[0].lineno == uses_sin.__code__.co_firstlineno + 2


def test_fullgraph_turns_an_internal_error_into_unsupported(monkeypatch):
    monkeypatch.setattr(ops.REGISTRY["sin"], "rule", _failing_rule)
    with pytest.raises(npdynamo.Unsupported, match="a rule's own bug"):
        npdynamo.compile(uses_sin, fullgraph=True)(np.arange(4.0))


def test_a_handler_that_fails_is_a_graph_break(monkeypatch):
    from npdynamo.capture.registry import HANDLERS

    def broken(frame, ins):
        raise IndexError("a handler's own bug")

    monkeypatch.setitem(HANDLERS, "BINARY_OP", broken)
    check_same(uses_sin, np.arange(4.0), graphs=1, breaks=2)  # a break at each BINARY_OP
    with pytest.raises(npdynamo.Unsupported, match="a handler's own bug"):
        npdynamo.compile(uses_sin, fullgraph=True)(np.arange(4.0))


def test_numpy_errors_from_a_rule_are_still_the_users():
    def mismatch(a, b):
        return a + b

    with pytest.raises(ValueError, match="broadcast"):
        ufunc_meta(np.add, "add", (ops.ArrayMeta((2,), np.dtype(float)),
                                   ops.ArrayMeta((3,), np.dtype(float))))
    check_same(mismatch, np.ones(2), np.ones(3), graphs=0, breaks=0)  # the frame runs in Python
    with pytest.raises(ValueError, match="broadcast"):
        npdynamo.compile(mismatch, fullgraph=True)(np.ones(2), np.ones(3))


def test_a_failure_while_building_the_entry_runs_the_frame_in_python(monkeypatch):
    from npdynamo.capture import compile_frame

    def broken(*args, **kwargs):
        raise KeyError("the entry builder's own bug")

    monkeypatch.setattr(compile_frame, "finish_entry", broken)
    check_same(uses_sin, np.arange(4.0), graphs=0, breaks=0)
    with pytest.raises(npdynamo.Unsupported, match="entry builder's own bug"):
        npdynamo.compile(uses_sin, fullgraph=True)(np.arange(4.0))


def test_a_failure_while_building_a_break_runs_the_frame_in_python(monkeypatch):
    from npdynamo.capture import compile_frame

    def broken(*args, **kwargs):
        raise TypeError("the break builder's own bug")

    def printing(x):
        y = x + 1
        print("y")
        return y * 2

    monkeypatch.setattr(compile_frame, "build_break_entry", broken)
    check_same(printing, np.arange(4.0), graphs=0, breaks=1)
