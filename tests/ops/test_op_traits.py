"""Each op's declared traits (``Op.view``, ``allocates``, ``quiet``, ``nonnegative``, ...) agree
with what its NumPy implementation does, over the op table.

Passes and backends trust these traits instead of lists of op names (the in-place analysis,
the scheduler's costs, the backward's recomputation, the simplifier's sign facts): a wrong
trait is a wrong result, so each is checked on the op itself. ``blas`` and ``cost`` are
estimates (no behaviour to observe) and are only checked for consistency.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import npdynamo.autograd  # noqa: F401  (attaches the VJP rules)
from npdynamo.fx.subgraphs import is_subgraph
from npdynamo.ops.registry import COSTS, NONNEGATIVE, REGISTRY
from tests.differential import assert_same_value
from tests.ops.cases import CASES, Case
from tests.ops.test_rules import run, to_metas

_A = np.arange(24.0).reshape(2, 3, 4)
_M = np.arange(9.0).reshape(3, 3)
_Z = (np.arange(6.0) + 1j).reshape(2, 3)

#: One call per view op where NumPy returns a view of the first operand.
VIEW_SAMPLES = {
    "reshape": ((_A,), {"shape": (6, 4)}),
    "transpose": ((_A,), {}),
    "getitem": ((_A, (0, slice(1, 3))), {}),
    "ravel": ((_A,), {}),
    "squeeze": ((_A[:1],), {}),
    "expand_dims": ((_A,), {"axis": 0}),
    "broadcast_to": ((_A[0, 0],), {"shape": (3, 4)}),
    "broadcast_view": ((_A[0, 0],), {"shape": (3, 4)}),
    "swapaxes": ((_A,), {"axis1": 0, "axis2": 2}),
    "moveaxis": ((_A,), {"source": 0, "destination": 2}),
    "diagonal": ((_M,), {}),
    "diag": ((_M,), {}),
    "flip": ((_A,), {}),
    "rot90": ((_M,), {}),
    "real": ((_Z,), {}),
    "imag": ((_Z,), {}),
}


def _ops(trait) -> list[str]:
    return sorted(name for name, op in REGISTRY.items() if trait(op))


def _settings(examples: int):
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _arrays(value) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for item in value for a in _arrays(item)]
    return []


def _accepted(name: str, case: Case):
    """NumPy's result for ``case``, or None when NumPy or the rule refuses it."""
    op = REGISTRY[name]
    _, rule_error = run(op.infer, *to_metas(case.args), **case.kwargs)
    result, error = run(op, *copy.deepcopy(case.args), **case.kwargs)
    return None if rule_error is not None or error is not None else result


def test_traits_are_well_formed():
    for name, op in REGISTRY.items():
        assert op.cost in COSTS and op.nonnegative in NONNEGATIVE, name
        assert not (op.view and op.allocates), f"{name}: a view cannot be a new array"
        assert op.blas == (op.cost == "blas"), name
        assert op.impure == op.draws, f"{name}: only random draws are impure"
        if op.loop is not None:
            assert op.subgraph_inputs is not None, f"{name}: a loop op has subgraphs"


def test_every_view_op_has_a_sample():
    assert _ops(lambda op: op.view) == sorted(VIEW_SAMPLES)


@pytest.mark.parametrize("name", sorted(VIEW_SAMPLES))
def test_a_view_op_returns_a_view(name):
    args, kwargs = VIEW_SAMPLES[name]
    result = REGISTRY[name](*args, **kwargs)
    assert np.shares_memory(result, args[0])


@pytest.mark.parametrize("name", _ops(lambda op: op.cost == "free"))
def test_a_free_op_does_not_pass_over_the_data(name):
    if name == "tuple_item":
        items = (np.ones(3), np.zeros(2))
        assert REGISTRY[name](items, 1) is items[1]
        return
    args, kwargs = VIEW_SAMPLES[name]  # every other free op is a view
    assert np.shares_memory(REGISTRY[name](*args, **kwargs), args[0])


@pytest.mark.parametrize("name", _ops(lambda op: op.allocates))
def test_an_allocating_op_returns_a_new_array(name):
    @_settings(30)
    @given(case=CASES[name])
    def prop(case):
        result = _accepted(name, case)
        assume(isinstance(result, np.ndarray))
        args = copy.deepcopy(case.args)
        result, _ = run(REGISTRY[name], *args, **case.kwargs)
        assert not any(np.may_share_memory(result, a) for a in _arrays(args))
        assert result.flags.owndata or result.base is not None and not any(
            result.base is a for a in _arrays(args))

    prop()


@pytest.mark.parametrize("name", _ops(lambda op: op.quiet))
def test_a_quiet_reduction_does_not_raise_on_empty_axes(name):
    # a symbolic size may be 0: the in-place plans write into an input before a quiet reduction
    @_settings(30)
    @given(case=CASES[name])
    def prop(case):
        assume(_accepted(name, case) is not None)
        args = tuple(np.empty((0,) * a.ndim, a.dtype) if isinstance(a, np.ndarray) else a
                     for a in case.args)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            REGISTRY[name](*args, **case.kwargs)  # must not raise

    prop()


def _nonnegative_operand(x):
    """``x`` with every number >= +0 (nan kept)."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "iuf":
        x = np.maximum(x, x.dtype.type(0))
        return x + x.dtype.type(0) if x.dtype.kind == "f" else x  # (+0.0, never -0.0)
    if type(x) is int:
        return max(x, 0)
    if type(x) is float:  # (max(-0.0, 0) is -0.0, its first argument: + 0.0 makes it +0.0)
        return max(x, 0.0) + 0.0
    return x


@pytest.mark.parametrize("name", _ops(lambda op: op.nonnegative is not None))
def test_a_nonnegative_op_gives_no_negative_number_or_minus_zero(name):
    op = REGISTRY[name]

    @_settings(30)
    @given(case=CASES[name])
    def prop(case):
        assume(not any(np.iscomplexobj(a) for a in case.args))  # (signs of real numbers)
        if op.nonnegative == "operands":
            case = Case(tuple(_nonnegative_operand(a) for a in case.args), case.kwargs)
        result = _accepted(name, case)
        assume(isinstance(result, (np.ndarray, np.generic)) and result.dtype.kind == "f")
        values = np.asarray(result)
        ok = np.isnan(values) | (values > 0) | ((values == 0) & ~np.signbit(values))
        assert ok.all(), f"{name}{case.args!r} {case.kwargs!r} -> {result!r}"

    prop()


@pytest.mark.parametrize("name", _ops(lambda op: op.shape_only))
def test_a_shape_only_op_ignores_its_operands_values(name):
    @_settings(30)
    @given(case=CASES[name], fill=st.sampled_from([0, 1, 7]))
    def prop(case, fill):
        result = _accepted(name, case)
        assume(isinstance(result, np.ndarray))
        other = tuple(np.full_like(a, fill) if isinstance(a, np.ndarray) else a
                      for a in case.args)
        again = REGISTRY[name](*other, **case.kwargs)
        assert again.dtype == result.dtype
        np.testing.assert_array_equal(again, result)

    prop()


@pytest.mark.parametrize("name", _ops(lambda op: op.draws))
def test_a_drawing_op_advances_its_generator(name):
    @_settings(20)
    @given(case=CASES[name])
    def prop(case):
        args = copy.deepcopy(case.args)
        state = args[0]
        before = copy.deepcopy(state.bit_generator.state if hasattr(state, "bit_generator")
                               else state.get_state(legacy=False))
        result, error = run(REGISTRY[name], *args, **case.kwargs)
        assume(error is None)
        if name == "shuffled":  # (one item along the axis: nothing to draw)
            assume(np.shape(result)[case.kwargs.get("axis", 0)] > 1)
        else:
            assume(np.size(result) > 0)
        after = (state.bit_generator.state if hasattr(state, "bit_generator")
                 else state.get_state(legacy=False))
        assert repr(after) != repr(before)

    prop()


@pytest.mark.parametrize("name", _ops(lambda op: op.loop is not None))
def test_a_loop_op_has_its_body_where_it_says(name):
    position, before_carried = REGISTRY[name].loop

    @_settings(10)
    @given(case=CASES[name])
    def prop(case):
        body, carried = case.args[position], case.args[position + 1]
        assert is_subgraph(body)
        placeholders = [n for n in body.graph.nodes if n.op == "placeholder"]
        assert len(placeholders) >= before_carried + len(carried)

    prop()


@pytest.mark.parametrize("name", _ops(lambda op: op.recomputable))
def test_a_recomputable_op_gives_the_same_result_again(name):
    @_settings(5)
    @given(case=CASES[name])
    def prop(case):
        first = _accepted(name, case)
        assume(first is not None)
        again, _ = run(REGISTRY[name], *copy.deepcopy(case.args), **case.kwargs)
        assert_same_value(first, again)

    prop()


def test_differentiable_ops_have_a_vjp_rule():
    assert _ops(lambda op: op.differentiable and op.vjp is None) == []
