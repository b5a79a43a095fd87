"""Symbolic shape rules: substituted results match the concrete rule and NumPy; facts suffice."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npdynamo.ops.indexing import slice_length
from npdynamo.ops.meta import ArrayMeta
from npdynamo.ops.registry import REGISTRY
from npdynamo.ops.symbol_table import SymbolTable, evaluate
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision, substitute

F64 = np.dtype(np.float64)


def symbolize(shapes, table):
    """Dims >= 2 become symbols with those hints; equal sizes share nothing (facts relate them)."""
    return [tuple(table.new(d) if d >= 2 else d for d in s) for s in shapes]


def concrete(x, bindings):
    if isinstance(x, ArrayMeta):
        return tuple(substitute(d, bindings) for d in x.shape)
    return substitute(x, bindings)


def check(op_name, shapes, kwargs, numpy_fn, data):
    """Run the rule on symbolic shapes; compare with the concrete rule and NumPy; soundness."""
    op = REGISTRY[op_name]
    arrays = [np.zeros(s) for s in shapes]
    try:
        expected = numpy_fn(*arrays).shape
    except (ValueError, IndexError):
        return
    table = SymbolTable()
    sym = symbolize(shapes, table)
    with FactRecorder() as rec:
        out = op.infer(*(ArrayMeta(s, F64) for s in sym), **kwargs)
    hints = table.hints()
    assert concrete(out, hints) == op.infer(*(ArrayMeta(s, F64) for s in shapes), **kwargs).shape
    assert concrete(out, hints) == expected
    assert evaluate(rec.facts, hints)
    # Soundness: other sizes satisfying the facts give the concrete rule's shape.
    other = {n: data.draw(st.integers(2, 7)) for n in hints}
    if evaluate(rec.facts, other):
        shapes2 = [tuple(substitute(d, other) for d in s) for s in sym]
        want = numpy_fn(*(np.zeros(s) for s in shapes2)).shape
        assert concrete(out, other) == want


dims = st.integers(0, 5)
shape = st.lists(dims, max_size=3).map(tuple)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(shape, shape, st.data())
def test_broadcast(a, b, data):
    check("add", [a, b], {}, np.add, data)


@SETTINGS
@given(shape, st.data())
def test_reductions(a, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(a) or -1, max(len(a) - 1, 0))))
    keep = data.draw(st.booleans())
    check("sum", [a], {"axis": axis, "keepdims": keep},
          lambda x: np.sum(x, axis=axis, keepdims=keep), data)


@SETTINGS
@given(shape, st.data())
def test_reshape(a, data):
    size = int(np.prod(a))
    target = data.draw(st.sampled_from([(-1,), (size,), (-1, 1), (1, -1), (2, -1), (-1, 3)]))
    check("reshape", [a], {"shape": target}, lambda x: np.reshape(x, target), data)


bound = st.one_of(st.none(), st.integers(-6, 6))


@SETTINGS
@given(st.lists(st.integers(0, 6), min_size=1, max_size=2).map(tuple), bound, bound,
       st.sampled_from([None, 1, 2, 3, -1, -2]), st.data())
def test_slicing(a, start, stop, step, data):
    index = (slice(start, stop, step),)
    op = REGISTRY["getitem"]
    expected = np.zeros(a)[index].shape
    table = SymbolTable()
    (sym,) = symbolize([a], table)
    with FactRecorder() as rec:
        out = op.infer(ArrayMeta(sym, F64), index)
    hints = table.hints()
    assert concrete(out, hints) == expected
    assert evaluate(rec.facts, hints)
    other = {n: data.draw(st.integers(2, 9)) for n in hints}
    if evaluate(rec.facts, other):
        a2 = tuple(substitute(d, other) for d in sym)
        assert concrete(out, other) == np.zeros(a2)[index].shape


@SETTINGS
@given(st.integers(2, 9), st.integers(0, 9), st.data())
def test_symbolic_slice_bounds(n, k, data):
    table = SymbolTable()
    s0, s1 = table.new(n), table.new(max(k, 2))
    with FactRecorder() as rec:
        length = slice_length(slice(s1, None), s0)
        length2 = slice_length(slice(None, s0 - s1), s0)
    other = {"s0": data.draw(st.integers(2, 12)), "s1": data.draw(st.integers(2, 12))}
    for b in (table.hints(), other):
        if evaluate(rec.facts, b):
            assert substitute(length, b) == len(range(b["s0"])[b["s1"]:])
            assert substitute(length2, b) == len(range(b["s0"])[: b["s0"] - b["s1"]])


@SETTINGS
@given(shape, shape, st.integers(-1, 1), st.data())
def test_concatenate(a, b, axis, data):
    op = REGISTRY["concatenate"]
    try:
        expected = np.concatenate([np.zeros(a), np.zeros(b)], axis=axis).shape
    except (ValueError, np.exceptions.AxisError):
        return
    table = SymbolTable()
    sa, sb = symbolize([a, b], table)
    with FactRecorder() as rec:
        out = op.infer([ArrayMeta(sa, F64), ArrayMeta(sb, F64)], axis=axis)
    hints = table.hints()
    assert concrete(out, hints) == expected and evaluate(rec.facts, hints)
    other = {k: data.draw(st.integers(2, 7)) for k in hints}
    if evaluate(rec.facts, other):
        a2, b2 = ([substitute(d, other) for d in s] for s in (sa, sb))
        assert concrete(out, other) == np.concatenate([np.zeros(a2), np.zeros(b2)], axis).shape


@SETTINGS
@given(st.lists(dims, min_size=1, max_size=3).map(tuple),
       st.lists(dims, min_size=1, max_size=3).map(tuple), st.data())
def test_matmul(a, b, data):
    check("matmul", [a, b], {}, np.matmul, data)


@SETTINGS
@given(shape, st.data())
def test_transpose_squeeze_expand(a, data):
    check("transpose", [a], {}, np.transpose, data)
    check("squeeze", [a], {}, np.squeeze, data)
    check("expand_dims", [a], {"axis": 0}, lambda x: np.expand_dims(x, 0), data)


def test_facts_recorded_and_deduped():
    t = SymbolTable()
    s0, s1 = t.new(4), t.new(4)
    with FactRecorder() as rec:
        REGISTRY["add"].infer(ArrayMeta((s0,), F64), ArrayMeta((s1,), F64))
        REGISTRY["add"].infer(ArrayMeta((s1,), F64), ArrayMeta((s0,), F64))
    assert [f.render() for f in rec.facts] == ["s0 == s1"]
    assert rec.facts[0].render(t.sources) == "s0 == s1"
    assert not evaluate(rec.facts, {"s0": 3, "s1": 4})


def test_decisions_without_recorder_refuse():
    t = SymbolTable()
    s0, s1 = t.new(3), t.new(3)
    with pytest.raises(SymbolicDecision):
        REGISTRY["add"].infer(ArrayMeta((s0,), F64), ArrayMeta((s1,), F64))
    # Decidable ones need no recorder: a symbol is never 1.
    assert REGISTRY["add"].infer(ArrayMeta((s0,), F64), ArrayMeta((1,), F64)).shape == (s0,)


def test_reshape_minus_one_records_divisibility():
    t = SymbolTable()
    s0 = t.new(4)
    with FactRecorder() as rec:
        out = REGISTRY["reshape"].infer(ArrayMeta((s0, 3), F64), shape=(2, -1))
    assert str(out.shape[1]) == "s0 + s0//2"  # (3*s0)//2 with the exact part divided out
    assert evaluate(rec.facts, {"s0": 6}) and not evaluate(rec.facts, {"s0": 5})


def test_creation_with_symbolic_size_and_hints():
    t = SymbolTable()
    n = t.new(5)
    assert REGISTRY["zeros"].infer(shape=(n, 3)).shape == (n, 3)
    with pytest.raises(ValueError):
        t.new(1)
    with pytest.raises(TypeError):
        range(n)  # no silent specialisation
