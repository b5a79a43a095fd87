"""npdynamo.export: one graph, its input spec, constants and mutations; calling it checks the
spec and matches plain NumPy on new sizes along the dynamic dimensions (eager and numba)."""

from __future__ import annotations

import numpy as np
import pytest

import npdynamo
from npdynamo.export import Dim, InputSpecError, InvalidDim
from tests.differential import assert_same_value
from tests.export.workloads import BY_NAME, WORKLOADS, assert_close, copies

SCALE = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("work", WORKLOADS, ids=lambda w: w.name)
def test_program_matches_numpy_on_new_sizes(work, backend):
    ep = work.export()
    for n in work.sizes:
        args = work.args(n, seed=n)
        plain_args, ep_args = copies(args), copies(args)
        expected = work.fn(*plain_args)
        got = ep(*ep_args, backend=backend)
        if backend == "eager":
            assert_same_value(expected, got)
        else:
            assert_close(expected, got)
        for before, after in zip(plain_args, ep_args):  # the arrays it writes, written back
            np.testing.assert_allclose(after, before, rtol=1e-12)


def test_spec_shows_dims_constants_and_mutations():
    ep = BY_NAME["sgd_step"].export()
    text = str(ep)
    assert "x: float64(n, 3)  [x]" in text
    assert "w: float64(3, 2)  [w]" in text
    assert "mutates: w <- output 1" in text
    assert "n (s0): 2 <= n" in text
    assert [s.kind for s in ep.inputs] == ["input", "input", "input"]
    ep = BY_NAME["mlp_predict"].export()
    assert sorted(ep.constants) == ["B1", "W1", "W2"]
    assert ep.constants["W1"] is not BY_NAME["mlp_predict"].fn.__globals__["W1"]  # a copy


def test_mismatches_raise_clear_errors():
    ep = BY_NAME["elementwise"].export()
    x, y = BY_NAME["elementwise"].args(5)
    with pytest.raises(InputSpecError, match=r"argument x: dimension 1 must be 4"):
        ep(np.ones((5, 3)), y)
    with pytest.raises(InputSpecError, match=r"expected dtype float64, got float32"):
        ep(x.astype(np.float32), y)
    with pytest.raises(InputSpecError, match=r"dimension 0 is n = 5 .*got 6"):
        ep(x, np.ones((6, 4)))
    with pytest.raises(InputSpecError, match=r"must lie in \[2, inf\], got 1"):
        ep(x[:1], y[:1])
    with pytest.raises(InputSpecError, match=r"must be a NumPy array"):
        ep([1.0], y)
    with pytest.raises(InputSpecError, match=r"missing argument"):
        ep(x)
    assert isinstance(InputSpecError("m"), npdynamo.NpdynamoError)


def test_dim_bounds_are_checked():
    def f(x):
        return x * 2
    ep = npdynamo.export(f, np.ones((4, 2)), dynamic_shapes={"x": {0: Dim("b", max=8)}})
    assert ep(np.ones((8, 2))).shape == (8, 2)
    with pytest.raises(InputSpecError, match=r"\(b\) must lie in \[2, 8\], got 9"):
        ep(np.ones((9, 2)))
    with pytest.raises(InvalidDim):
        Dim("b", min=1)


def test_one_dim_name_is_one_size():
    def f(x, y):
        return x.sum(axis=0), y.sum(axis=0)
    ep = npdynamo.export(f, np.ones((4, 2)), np.ones((4, 3)),
                         dynamic_shapes=({0: Dim("n")}, {0: Dim("n")}))
    ep(np.ones((6, 2)), np.ones((6, 3)))
    with pytest.raises(InputSpecError, match=r"dimension 0 is n = 6 \(from an earlier .*got 5"):
        ep(np.ones((6, 2)), np.ones((5, 3)))


def test_graph_break_raises_unsupported_with_location():
    def f(x):
        print("side effect")
        return x + 1
    with pytest.raises(npdynamo.Unsupported) as info:
        npdynamo.export(f, np.ones(3))
    assert "print" in str(info.value)
    assert info.value.location.filename == __file__


def test_specialised_dim_is_refused_naming_the_line():
    def f(x):
        return np.zeros((x.shape[0], 2)) + x[:, :1]
    with pytest.raises(npdynamo.Unsupported, match=r"specialises the dynamic dimension n to 4 "
                       r"\(Python code at .*test_program.py:\d+"):
        npdynamo.export(f, np.ones((4, 3)), dynamic_shapes=[{0: Dim("n")}])


def test_python_state_changes_are_refused():
    log = []

    def f(x):
        log.append(1)
        return x
    with pytest.raises(npdynamo.Unsupported, match="changes Python state"):
        npdynamo.export(f, np.ones(3))


def test_containers_keywords_and_fixed_numbers():
    def f(params, x, scale=2.0):
        return {"y": (x @ params["w"] + params["b"]) * scale, "n": 3}
    params = {"w": np.ones((3, 2)), "b": np.zeros(2)}
    ep = npdynamo.export(f, params, np.ones((4, 3)), scale=3.0,
                         dynamic_shapes={"x": {0: Dim("batch")}})
    out = ep({"w": np.full((3, 2), 2.0), "b": np.ones(2)}, np.ones((7, 3)), scale=3.0)
    assert out["n"] == 3 and out["y"].shape == (7, 2) and np.all(out["y"] == 21.0)
    with pytest.raises(InputSpecError, match=r"scale was 3.0 when the program was exported"):
        ep(params, np.ones((7, 3)), scale=2.0)


def test_a_tuple_default_is_fixed_whole():
    def masked(x, mask=(1, 0, 1)):
        return np.bitwise_and(mask, x)
    x = np.array([3, 2, 7])
    ep = npdynamo.export(masked, x)
    assert_same_value(masked(x), ep(x))  # the default a call leaves out
    assert_same_value(masked(x, (1, 0, 1)), ep(x, (1, 0, 1)))
    for other in ((1, 0, 1, 1), (1.0, 0, 1), [1, 0, 1], (True, 0, 1)):
        with pytest.raises(InputSpecError, match=r"mask was \(1, 0, 1\) when the program"):
            ep(x, other)


class Model:
    def __init__(self):
        self.w = np.arange(6.0).reshape(3, 2)

    def predict(self, x):
        return x @ self.w + SCALE[:2]


def test_bound_method_weights_are_constants():
    model = Model()
    ep = npdynamo.export(model.predict, np.ones((4, 3)), dynamic_shapes=[{0: Dim("n")}])
    assert sorted(ep.constants) == ["SCALE", "self_w"]
    assert ep.params == ["x"]
    x = np.random.default_rng(1).standard_normal((6, 3))
    assert_same_value(model.predict(x), ep(x))


def test_mutated_constant_is_kept_by_the_program():
    state = {"count": np.zeros(2)}

    def tick(x):
        state["count"] += x
        return state["count"] * 1.0
    ep = npdynamo.export(tick, np.ones(2))
    assert np.all(state["count"] == 0)  # export ran nothing
    ep(np.ones(2))
    assert np.all(ep(np.ones(2)) == 2.0)
    assert np.all(state["count"] == 0)


def test_export_leaves_no_dynamic_marks_on_the_callers_arrays():
    x = np.ones((4, 3))
    npdynamo.export(lambda a: a * 2, x, dynamic_shapes=[{0: Dim("n")}])
    from npdynamo.capture.dynamic_dims import _marks_of
    assert _marks_of(x) is None


def _powers(m):
    y = np.linalg.matrix_power(m, 1)  # NumPy returns m itself: the write below is seen in m
    y += 1.0
    return y is m, np.linalg.matrix_power(m, 3), np.linalg.matrix_power([[1.0, 2.0]] * 2, 1)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_matrix_power_of_one_is_the_array_itself(backend):
    from tests.differential import check_same
    # matrix_power(m, 1) breaks (it returns m itself); the rest is the resume function's graph
    check_same(_powers, np.arange(4.0).reshape(2, 2), backend=backend, graphs=1, breaks=1)
    with pytest.raises(npdynamo.Unsupported, match="returns a itself"):
        npdynamo.export(lambda m: np.linalg.matrix_power(m, 1), np.ones((2, 2)))
    ep = npdynamo.export(lambda m: np.linalg.matrix_power(m, 2), np.ones((2, 2)))
    assert_same_value(np.linalg.matrix_power(np.eye(2) * 3, 2), ep(np.eye(2) * 3))
