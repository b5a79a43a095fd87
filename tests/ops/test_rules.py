"""Every op's meta rule agrees with what its NumPy implementation does, on random inputs.

For each registered op, hypothesis draws canonical calls on real values; the op is run, then its
rule is run on the metas of the same arguments. Shapes, dtypes and NumPy-scalar-vs-array must
match exactly, and when NumPy raises, the rule must raise the same exception type.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from npdynamo.ops import REGISTRY, ArrayMeta, ScalarMeta, UnsupportedArguments
from npdynamo.ops.unbacked import mentions_unbacked
from tests.ops.cases import CASES, Case

# NPDYNAMO_TEST_STRESS=20 multiplies the examples for a long hunt; CI runs the default.
_STRESS = int(os.environ.get("NPDYNAMO_TEST_STRESS", "1"))
# A few ops have a much larger input space than the rest.
_RICH = {
    "getitem",
    "setitem",
    "einsum",
    "matmul",
    "dot",
    "reshape",
    "sum",
    "max",
    "argmax",
    "where",
    "clip",
    "add",
    "power",
    "concatenate",
    "full",
    "arange",
}


def to_metas(value: object) -> object:
    """``value`` with every array and NumPy scalar replaced by its ``ArrayMeta``."""
    if isinstance(value, (np.ndarray, np.generic)):
        return ArrayMeta.of(value)
    if isinstance(value, tuple):
        return tuple(to_metas(v) for v in value)
    return value


def meta_of(result: object) -> object:
    if type(result) in (int, float, complex):  # Python arithmetic gives a Python number
        return ScalarMeta(type(result))
    if isinstance(result, tuple):
        return tuple(ArrayMeta.of(r) for r in result)
    return ArrayMeta.of(result)


def run(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:  # any exception NumPy raises is a valid outcome to compare
            return None, exc


def check_case(name: str, case: Case) -> None:
    op = REGISTRY[name]
    result, np_error = run(op, *case.args, **case.kwargs)
    meta_args = to_metas(case.args)
    inferred, rule_error = run(op.infer, *meta_args, **case.kwargs)
    where = f"{op!r}{case.args!r} {case.kwargs!r}"
    if isinstance(rule_error, UnsupportedArguments):
        assert case.unsupported_ok, f"{where}: rule refused a supported call: {rule_error}"
        return
    if np_error is not None:
        assert rule_error is not None, (
            f"{where}: NumPy raised {np_error!r}, the rule returned {inferred}"
        )
        assert type(rule_error) is type(np_error), (
            f"{where}: NumPy raised {type(np_error).__name__}({np_error}), the rule raised "
            f"{type(rule_error).__name__}({rule_error})"
        )
        return
    assert rule_error is None, (
        f"{where}: NumPy returned {meta_of(result)}, rule raised "
        f"{type(rule_error).__name__}({rule_error})"
    )
    assert _matches(inferred, meta_of(result)), \
        f"{where}: rule {inferred} != NumPy {meta_of(result)}"


def _matches(inferred: object, actual: object) -> bool:
    """``inferred == actual``, where a size known only at run time (``ops.unbacked``: nonzero's
    count) matches any size at least its lower bound."""
    if isinstance(inferred, tuple) and isinstance(actual, tuple):
        return len(inferred) == len(actual) and all(map(_matches, inferred, actual))
    if not (isinstance(inferred, ArrayMeta) and isinstance(actual, ArrayMeta)
            and any(mentions_unbacked(d) for d in inferred.shape)):
        return inferred == actual
    return (inferred.dtype == actual.dtype and len(inferred.shape) == len(actual.shape)
            and all(d == n if not mentions_unbacked(d) else n >= 0
                    for d, n in zip(inferred.shape, actual.shape)))


def _settings(name: str):
    return settings(
        max_examples=(100 if name in _RICH else 30) * _STRESS,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_rule_agrees_with_numpy(name: str) -> None:
    @_settings(name)
    @given(case=CASES[name])
    def prop(case: Case) -> None:
        check_case(name, case)

    prop()


def test_every_registered_op_has_a_generator() -> None:
    assert set(CASES) == set(REGISTRY), (
        f"ops without a generator: {sorted(set(REGISTRY) - set(CASES))}; generators without an "
        f"op: {sorted(set(CASES) - set(REGISTRY))}"
    )


@pytest.mark.parametrize(
    "name, args, kwargs, error",
    [
        ("add", ((2, 3), (4,)), {}, ValueError),
        ("matmul", ((3, 4), (5, 2)), {}, ValueError),
        ("dot", ((3, 4), (5, 2)), {}, ValueError),
        ("reshape", ((2, 3),), {"shape": (4,)}, ValueError),
        ("sum", ((2, 3),), {"axis": 2}, np.exceptions.AxisError),
        ("max", ((0, 3),), {"axis": 0}, ValueError),
        ("getitem", ((3,), (5,)), {}, IndexError),
        ("concatenate", (((2, 3), (2, 4)),), {"axis": 0}, ValueError),
    ],
)
def test_invalid_inputs_raise_numpys_exception_type(name, args, kwargs, error) -> None:
    """Fixed regression cases on top of the random ones: shapes in, exception type out."""

    def build(spec):
        if isinstance(spec, tuple) and all(isinstance(d, int) for d in spec):
            return np.ones(spec)
        if isinstance(spec, tuple):
            return tuple(build(s) for s in spec)
        return spec

    concrete = [build(a) for a in args]
    if name == "getitem":
        concrete = [np.ones(args[0]), args[1]]
    case = Case(tuple(concrete), kwargs)
    _, np_error = run(REGISTRY[name], *case.args, **case.kwargs)
    assert isinstance(np_error, error)
    check_case(name, case)
    with pytest.raises(error, match=name):
        REGISTRY[name].infer(*to_metas(case.args), **kwargs)


def test_matmul_mismatch_message_names_op_and_shapes() -> None:
    a, b = ArrayMeta((3, 4), np.float64), ArrayMeta((5, 2), np.float64)
    with pytest.raises(ValueError) as info:
        REGISTRY["matmul"].infer(a, b)
    expected = "matmul: shapes (3, 4) and (5, 2) do not align: 4 (dim 1) != 5 (dim 0)"
    assert str(info.value) == expected


@pytest.mark.parametrize(
    "shape, index, value_shape",
    [
        # found by the property test: into an empty selection, advanced indexing takes a value
        # with extra leading dimensions (then an index out of bounds is the error) ...
        ((1, 1, 1, 0), (0, [1], np.array([0, 0, 0, -1])), (1, 2, 1, 0)),
        ((1, 2, 2, 0), (0, [1], np.array([0, 0, 0, 1])), (7, 4, 0)),
        ((2, 0), ([0, 1],), (5, 2, 0)),
        # ... and basic indexing does not
        ((2, 0), (slice(None),), (3, 2, 0)),
        ((2, 0), ([0, 1],), (2, 3, 0)),
    ],
)
def test_setitem_into_empty_selections_matches_numpy(shape, index, value_shape):
    check_case("setitem", Case((np.zeros(shape), index, np.zeros(value_shape))))
