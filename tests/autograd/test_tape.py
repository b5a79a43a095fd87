"""The tape (``grad``/``value_and_grad`` outside compile): API, pytrees, dtypes, conventions,
Python control flow on tracers, and the errors users see."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import npdynamo
from npdynamo.autograd import grad, grad_spec, is_tracer, tracer_value, value_and_grad
from npdynamo.errors import GradError

X = np.array([0.3, -1.2, 2.0, 0.7])


def test_value_and_grad_returns_value_and_gradient():
    value, g = value_and_grad(lambda x: np.sum(x**3))(X)
    assert value == np.sum(X**3) and type(value) is np.float64
    np.testing.assert_allclose(g, 3 * X**2)


def test_argnums_tuple_and_kwargs_pass_through():
    f = lambda a, b, scale=1.0: np.sum(a * b) * scale
    ga, gb = grad(f, argnums=(0, 1))(X, 2 * X, scale=3.0)
    np.testing.assert_allclose(ga, 6 * X)
    np.testing.assert_allclose(gb, 3 * X)
    np.testing.assert_allclose(grad(f, argnums=1)(X, 2 * X), X)


def test_has_aux_returns_untracked_aux():
    (value, aux), g = value_and_grad(lambda x: (np.sum(x), {"m": x.mean(), "n": 3}),
                                     has_aux=True)(X)
    assert type(aux["m"]) is np.float64 and aux["n"] == 3
    g2, aux2 = grad(lambda x: (np.sum(x), [x * 2]), has_aux=True)(X)
    np.testing.assert_allclose(g2, np.ones(4))
    assert type(aux2[0]) is np.ndarray and not is_tracer(aux2[0])


Pair = namedtuple("Pair", "w b")


def test_pytree_structure_dtypes_and_scalar_kinds_are_kept():
    params = {"layers": [Pair(np.ones((2, 2), np.float32), 0.5)], "s": np.float64(2.0),
              "z": np.zeros(()), "skip": None}

    def f(p):
        layer = p["layers"][0]
        return np.sum(layer.w * layer.b) * p["s"] + p["z"] * 4.0

    g = grad(f)(params)
    assert isinstance(g["layers"][0], Pair) and g["skip"] is None
    assert g["layers"][0].w.dtype == np.float32
    np.testing.assert_allclose(g["layers"][0].w, np.full((2, 2), 1.0))
    assert type(g["layers"][0].b) is float and g["layers"][0].b == pytest.approx(8.0)
    assert type(g["s"]) is np.float64 and g["s"] == pytest.approx(2.0)
    assert isinstance(g["z"], np.ndarray) and g["z"].shape == () and g["z"] == 4.0


def test_float32_gradients_stay_float32_and_unused_inputs_get_zeros():
    x32 = X.astype(np.float32)
    ga, gb = grad(lambda a, b: np.sum(np.tanh(a) * 2.0), argnums=(0, 1))(x32, X)
    assert ga.dtype == np.float32
    np.testing.assert_allclose(ga, 2 * (1 - np.tanh(x32) ** 2), rtol=1e-6)
    assert gb.dtype == np.float64 and not gb.any()


def test_astype_between_floats_casts_the_cotangent_back():
    g = grad(lambda x: np.sum(x.astype(np.float32) * np.float32(3)))(X)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, np.full(4, 3.0))
    g32 = grad(lambda x: np.sum(x.astype(np.float64) ** 2))(X.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * X.astype(np.float32), rtol=1e-6)


def test_returned_gradients_are_fresh_writable_arrays():
    x = np.ones(3)
    g = grad(lambda x: np.sum(x))(x)  # the rule broadcasts: a read-only view internally
    assert g.flags.writeable and g is not x
    g[0] = 5.0
    h = grad(lambda x: np.sum(x * 1.0))(x)
    np.testing.assert_array_equal(h, np.ones(3))


def test_python_control_flow_uses_values():
    def f(x):
        total = 0.0
        for v in x:
            if v > 0:
                total = total + v**2
            elif bool(v < -1):
                total = total - 3.0 * v
        while np.max(np.abs(x)) > 0.5:
            x = x / 2.0
        return total + np.sum(x)

    expected = np.where(X > 0, 2 * X, np.where(X < -1, -3.0, 0.0)) + 0.25
    np.testing.assert_allclose(grad(f)(X), expected)


def test_boolean_masks_in_place_updates_and_aliases():
    def f(x):
        y = x * 1.0
        alias = y
        y += 1.0
        y[0] = 0.0
        y[y > 1.5] *= 3.0
        z = np.zeros_like(x)
        z[1:3] = alias[:2]
        return np.sum(alias**2) + np.sum(z)

    x = X.copy()
    y = x + 1.0
    y[0] = 0.0
    mask = y > 1.5
    expected = np.where(mask, 9 * 2 * y, 2 * y)
    expected[0] = 0.0
    expected[1] += 1.0  # z[2] = alias[1]; z[1] = alias[0] is constant 0
    np.testing.assert_allclose(grad(f)(x), expected)


def test_builtins_and_attributes_work_on_tracers():
    def f(w):
        assert w.shape == (2, 3) and w.ndim == 2 and w.size == 6 and w.dtype == np.float64
        assert len(w) == 2 and f"{w.sum():.1f}" == "6.0" and isinstance(w.sum().item(), float)
        rows = [r for r in w]
        return sum(rows).sum() + max(w[0, 0], w[1, 1]) + abs(w).T.sum() + w.reshape(-1)[2]

    g = grad(f)(np.ones((2, 3)))
    expected = np.full((2, 3), 2.0)  # sum(rows).sum() and abs(w).T.sum()
    expected[0, 0] += 1.0  # the builtin max of a tie returns its first argument
    expected[0, 2] += 1.0  # w.reshape(-1)[2]
    np.testing.assert_allclose(g, expected)


def test_max_min_ties_split_equally():
    g = grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])
    g = grad(lambda x: np.sum(np.min(x, axis=1)))(np.array([[2.0, 2.0, 2.0], [1.0, 0.0, 5.0]]))
    np.testing.assert_allclose(g, [[1 / 3, 1 / 3, 1 / 3], [0.0, 1.0, 0.0]])
    ga, gb = grad(lambda a, b: np.sum(np.maximum(a, b)), argnums=(0, 1))(
        np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 0.0]))
    np.testing.assert_array_equal(ga, [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gb, [0.5, 1.0, 0.0])


def test_clip_passes_gradient_inside_closed_interval():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(grad(lambda x: np.sum(np.clip(x, -1.0, 1.0)))(x),
                                  [0.0, 1.0, 1.0, 1.0, 0.0])


def test_repeated_integer_indices_accumulate():
    g = grad(lambda t: np.sum(t[np.array([0, 2, 2, 2])] * np.array([1.0, 2.0, 3.0, 4.0])))(
        np.zeros(3))
    np.testing.assert_array_equal(g, [1.0, 0.0, 9.0])


def test_nested_grad_gives_second_derivatives():
    d2 = grad(lambda x: np.sum(grad(lambda y: np.sum(y**3))(x)))(X)
    np.testing.assert_allclose(d2, 6 * X)


def test_grad_spec_describes_the_wrapper():
    def loss(p, x):
        return np.sum(p * x)

    spec = grad_spec(value_and_grad(loss, argnums=(0,), has_aux=False))
    assert spec.fn is loss and spec.argnums == (0,) and not spec.single_argnum
    assert spec.with_value and not spec.has_aux
    assert grad_spec(grad(loss)).single_argnum and grad_spec(loss) is None
    assert tracer_value(X) is X and not is_tracer(X)
    assert npdynamo.errors.GradError is GradError


@pytest.mark.parametrize("fn, args, message", [
    (lambda x: x * 2, (X,), "must return a scalar to be differentiated, but it returned an "
                            "array of shape (4,)"),
    (lambda x: (np.sum(x), 1), (X,), "pass has_aux=True"),
    (lambda x: np.sum(x), (np.arange(3),), "argument 0 has integer dtype int64"),
    (lambda x: x, (3,), "is the Python int 3"),
    (lambda p: np.sum(p["w"]), ({"w": np.ones(2), "n": np.arange(2)},),
     "argument 0['n'] has integer dtype"),
    (lambda x: np.sum(x // 2.0), (X,), "np.floor_divide is not differentiable"),
    (lambda x: np.sum(np.linalg.eig(np.outer(x, x))[0]), (X,),
     "np.linalg.eig is not differentiable"),
    (lambda x: np.sum(np.linalg.eigh(np.outer(x, x))[0]), (X,),
     "np.linalg.eigh is differentiated only inside compiled code"),
    (lambda x: np.sum(np.unwrap(x)), (X,), "np.unwrap is not supported"),
    # a complex value on the path: an error, never a gradient that silently leaves it out
    (lambda x: np.sum(np.abs(x * 1j) * x), (X,), "gradients through complex values"),
    (lambda x: np.sum(np.cumprod(x)), (X,), "np.cumprod is not differentiable"),
    (lambda x: np.sum(np.asarray(x)), (X,), "converted to a plain NumPy array"),
    (lambda x: float(np.sum(x)), (X,), "float() of a value being differentiated"),
    (lambda x: np.sum(x, where=x > 0), (X,), "np.sum: sum: where="),
    (lambda x: np.sum(x), (np.array([1 + 2j]),), "only real floating-point"),
    (lambda x: np.int64(2), (X,), "must return a floating-point scalar"),
])
def test_grad_errors_say_what_went_wrong(fn, args, message):
    with pytest.raises(GradError) as info:
        grad(fn)(*args)
    assert message in str(info.value)


def test_bad_argnums():
    with pytest.raises(GradError, match="argnums=2"):
        grad(lambda x: np.sum(x), argnums=2)(X)
    with pytest.raises(TypeError, match="argnums"):
        grad(lambda x: np.sum(x), argnums="0")


def test_non_float_results_are_plain_values():
    seen = {}

    def f(x):
        seen["mask"] = x > 0
        seen["idx"] = np.argmax(x)
        seen["shape"] = np.shape(x)
        return np.sum(x[seen["idx"]] * 2.0)

    np.testing.assert_array_equal(grad(f)(X), [0.0, 0.0, 2.0, 0.0])
    assert type(seen["mask"]) is np.ndarray and seen["mask"].dtype == bool
    assert type(seen["idx"]) is np.intp and seen["shape"] == (4,)
