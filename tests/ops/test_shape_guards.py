"""Guards on symbolic sizes: they fail exactly when a relation the rules relied on stops holding.

Hypothesis draws shapes, makes every size >= 2 a symbol, runs a rule, builds the guards from the
recorded facts, then draws new sizes: the generated check must agree with "every symbol >= 2 and
every fact holds", and where it passes, NumPy must give the shape the symbolic result predicts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.registry import REGISTRY
from npdynamo.ops.shape_guards import shape_guards
from npdynamo.ops.symbol_table import SymbolTable, evaluate
from npdynamo.ops.symbolic import FactRecorder, substitute

F64 = np.dtype(np.float64)
dims = st.integers(0, 5)
shape = st.lists(dims, max_size=3).map(tuple)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def guard_roundtrip(op_name, shapes, kwargs, numpy_fn, data, packed=False):
    """``packed``: the op takes its arrays as one sequence (``concatenate``)."""
    try:
        numpy_fn(*(np.zeros(s) for s in shapes))
    except (ValueError, IndexError):
        return
    table = SymbolTable()
    sym = [tuple(table.new(d) if d >= 2 else d for d in s) for s in shapes]
    metas = [ArrayMeta(s, F64) for s in sym]
    with FactRecorder() as rec:
        op = REGISTRY[op_name]
        out = op.infer(tuple(metas), **kwargs) if packed else op.infer(*metas, **kwargs)
    guards = shape_guards(metas, rec.facts, [f"a{i}" for i in range(len(metas))])
    assert guards.check(*(np.zeros(s) for s in shapes))  # the capture sizes pass
    other = {n: data.draw(st.integers(0, 7)) for n in table.hints()}
    new = [tuple(substitute(d, other) if not isinstance(d, int) else d for d in s) for s in sym]
    expected = all(v >= 2 for v in other.values()) and evaluate(rec.facts, other)
    assert guards.check_shapes(*new) == expected
    assert guards.check(*(np.zeros(s) for s in new)) == expected
    assert (guards.failing(*(np.zeros(s) for s in new)) == []) == expected
    if expected:
        want = numpy_fn(*(np.zeros(s) for s in new)).shape
        assert tuple(substitute(d, other) for d in out.shape) == want


@SETTINGS
@given(shape, shape, st.data())
def test_broadcast_guards(a, b, data):
    guard_roundtrip("add", [a, b], {}, np.add, data)


@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
       st.sampled_from([(2, -1), (-1,), (-1, 3), (3, -1, 2)]), st.data())
def test_reshape_guards(a, new_shape, data):
    guard_roundtrip("reshape", [a], {"shape": new_shape}, lambda x: x.reshape(new_shape), data)


@SETTINGS
@given(st.lists(st.integers(1, 5), min_size=2, max_size=2).map(tuple),
       st.lists(st.integers(1, 5), min_size=2, max_size=2).map(tuple), st.data())
def test_matmul_and_concatenate_guards(a, b, data):
    guard_roundtrip("matmul", [a, b], {}, np.matmul, data)
    guard_roundtrip("concatenate", [a, b], {"axis": 0},
                    lambda x, y: np.concatenate((x, y), axis=0), data, packed=True)


def test_guards_print_over_inputs_and_are_minimal():
    t = SymbolTable()
    s0, s1, s2, s3 = t.new(4), t.new(4), t.new(4), t.new(8)
    x, y, z = (ArrayMeta((s, 3), F64) for s in (s0, s1, s2))
    w = ArrayMeta((s3,), F64)
    with FactRecorder() as rec:
        REGISTRY["add"].infer(x, y)
        REGISTRY["add"].infer(y, z)
        REGISTRY["add"].infer(z, x)  # implied by the two before
        REGISTRY["reshape"].infer(w, shape=(4, -1))
        REGISTRY["subtract"].infer(REGISTRY["getitem"].infer(x, slice(1, None)),
                                   REGISTRY["getitem"].infer(y, slice(None, -1)))
    guards = shape_guards([x, y, z, w], rec.facts, ["x", "y", "z", "w"])
    assert guards.exprs == [
        "x.ndim == 2 and x.shape[1] == 3", "y.ndim == 2 and y.shape[1] == 3",
        "z.ndim == 2 and z.shape[1] == 3", "w.ndim == 1",
        "y.shape[0] == x.shape[0]", "z.shape[0] == x.shape[0]",
        "x.shape[0] >= 2", "w.shape[0] >= 2",
        "w.shape[0]%4 == 0", "x.shape[0] != 2",
    ]
    a = np.zeros
    assert guards.check(a((5, 3)), a((5, 3)), a((5, 3)), a(12))
    assert guards.failing(a((5, 3)), a((6, 3)), a((5, 3)), a(10)) == [
        "y.shape[0] == x.shape[0]", "w.shape[0]%4 == 0"]
    assert guards.failing(a((2, 3)), a((2, 3)), a((2, 3)), a(4)) == ["x.shape[0] != 2"]
    assert guards.failing(a((5, 4)), a((5, 3)), a((5, 3)), a(4)) == [
        "x.ndim == 2 and x.shape[1] == 3"]


def test_same_symbol_twice_and_lower_bounds():
    t = SymbolTable()
    s0 = t.new(5)
    x, y = ArrayMeta((s0, s0), F64), ArrayMeta((s0,), F64)
    with FactRecorder() as rec:
        REGISTRY["getitem"].infer(x, slice(None, 3))  # needs nothing: clamps
        REGISTRY["getitem"].infer(y, 4)  # an int index needs s0 >= 5
    guards = shape_guards([x, y], rec.facts, ["x", "y"])
    assert "x.shape[1] == x.shape[0]" in guards.exprs and "y.shape[0] == x.shape[0]" in guards.exprs
    assert "x.shape[0] >= 5" in guards.exprs and "x.shape[0] >= 2" not in guards.exprs
    a = np.zeros
    assert guards.check(a((6, 6)), a(6))
    assert not guards.check(a((6, 5)), a(6)) and not guards.check(a((4, 4)), a(4))


@pytest.mark.parametrize("kind, good, bad", [
    (float, [0.5, -1e300, float("nan")], [1, True, np.float64(0.5), None]),
    (int, [0, -(2**63), 2**63 - 1], [2**63, 0.0, True, np.int64(3)]),
])
def test_dynamic_scalar_guards(kind, good, bad):
    guards = shape_guards([ScalarMeta(kind)], [], ["lr"])
    assert guards.exprs == [f"type(lr) is {kind.__name__}"]
    assert all(guards.check(v) for v in good)
    assert not any(guards.check(v) for v in bad)


def test_static_inputs_are_left_to_capture():
    guards = shape_guards([ArrayMeta((3, 4), F64), 2.0], [], ["w", "k"])
    assert guards.exprs == [] and guards.check(np.zeros(7), "anything")


def test_a_scalar_input_may_give_a_size_symbol_a_trip_count():
    """A loop's int bound is a symbol read from the value itself, assumed >= 1 (a trip count),
    and related to the arrays' sizes by the recorded facts."""
    table = SymbolTable()
    s0 = table.new(10)
    n = table.new(8, lower=1)
    with FactRecorder() as rec:
        assert s0 >= n   # recorded: true at the hints
        assert n != 0    # no record: implied by n >= 1
    assert len(rec.facts) == 1
    guards = shape_guards([ArrayMeta((s0,), F64), ScalarMeta(int)], rec.facts, ["x", "n"],
                          {1: n})
    assert guards.symbols == {"s0": (0, 0), "s1": (1, None)}
    assert "n >= 1" in guards.exprs and "x.shape[0] >= n" in guards.exprs, guards.exprs
    assert guards.check(np.zeros(10), 8) and guards.check(np.zeros(10), 1)
    assert guards.check(np.zeros(5), 5)
    assert not guards.check(np.zeros(5), 6)    # the array is shorter than the trip count
    assert not guards.check(np.zeros(5), 0)    # an empty loop is another entry
    assert guards.failing(np.zeros(5), 6) == ["x.shape[0] >= n"]
