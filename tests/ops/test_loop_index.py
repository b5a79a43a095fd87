"""The loop index as a size (``ops.loop_index``): every answer it gives holds for every index of
the range and every size the recorded facts allow, checked by brute force; anything else is a
refusal. Slice lengths built from it are NumPy's for every index."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from npdynamo.ops.indexing import slice_length
from npdynamo.ops.loop_index import index_symbol, mentions_index
from npdynamo.ops.symbol_table import SymbolTable, evaluate
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision, substitute

RELS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
        "==": operator.eq, "!=": operator.ne}
SIZES = range(2, 41)
small = st.integers(-3, 3)


def _range(first: int, last_kind: int, s0):
    """The index's range over a size ``s0``: ``[first, s0 - 1]``, ``[first, s0 - 2]``,
    ``[first, s0]`` or ``[first, 12]``."""
    last = {0: s0 - 1, 1: s0 - 2, 2: s0, 3: 12}[last_kind]
    assume(first <= (last if isinstance(last, int) else last.hint))  # the loop runs now
    return index_symbol("i0", first, last), last


def _allowed(facts, first: int, last, hint: int) -> list[int]:
    """The sizes where the facts hold and the range is not empty (its loop runs)."""
    out = []
    for v in SIZES:
        top = substitute(last, {"s0": v}) if not isinstance(last, int) else last
        if evaluate(facts, {"s0": v}) and first <= top:
            out.append(v)
    assert hint in out or not out
    return out


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2), st.integers(0, 3), small, small, st.integers(-6, 6),
       st.sampled_from(sorted(RELS)), st.integers(3, 30))
def test_decisions_hold_for_every_index_and_allowed_size(first, last_kind, a, b, c, rel, hint):
    table = SymbolTable()
    s0 = table.new(hint)
    i, last = _range(first, last_kind, s0)
    expr = a * i + b * s0 + c
    with FactRecorder() as rec:
        try:
            answer = RELS[rel](expr, 0)
        except SymbolicDecision:
            return  # refused: the loop unrolls
    for v in _allowed(rec.facts, first, last, hint):
        top = substitute(last, {"s0": v}) if not isinstance(last, int) else last
        for k in range(first, top + 1):
            assert RELS[rel](a * k + b * v + c, 0) is answer, (expr, rel, v, k, rec.facts)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2), st.integers(0, 3), st.integers(-2, 2), st.integers(-2, 2),
       st.sampled_from([None, 0, 1, -1]), st.sampled_from([None, 0, 1, -1]),
       st.sampled_from([None, 1, -1, 2]), st.integers(3, 30))
def test_slice_lengths_are_numpys_for_every_index(first, last_kind, ka, kb, start_kind,
                                                   stop_kind, step, hint):
    """``x[start:stop:step]`` with bounds ``i + k``, ``s0 - i + k``, ``k`` or None."""
    table = SymbolTable()
    s0 = table.new(hint)
    i, last = _range(first, last_kind, s0)

    def bound(kind, k, at_i=None, at_s=None):
        if kind is None:
            return None
        index, size = (i, s0) if at_i is None else (at_i, at_s)
        return {0: index + k, 1: size - index + k, -1: k}[kind]

    with FactRecorder() as rec:
        try:
            length = slice_length(slice(bound(start_kind, ka), bound(stop_kind, kb), step), s0)
        except SymbolicDecision:
            return
    for v in _allowed(rec.facts, first, last, hint):
        top = substitute(last, {"s0": v}) if not isinstance(last, int) else last
        for k in range(first, top + 1):
            want = len(np.arange(v)[slice(bound(start_kind, ka, k, v),
                                          bound(stop_kind, kb, k, v), step)])
            got = substitute(length, {"s0": v, "i0": k}) if not isinstance(length, int) \
                else length
            assert got == want, (start_kind, stop_kind, ka, kb, step, v, k, length)


def test_common_triangular_slices_are_decided_without_guards():
    s0 = SymbolTable().new(16)
    i = index_symbol("i0", 0, s0 - 1)
    with FactRecorder() as rec:
        lengths = [slice_length(slice(*b), s0) for b in (
            (None, i), (i, None), (i + 1, None), (None, s0 - i), (s0 - 1 - i, None))]
    assert lengths == [i, s0 - i, s0 - i - 1, s0 - i, i + 1]
    assert rec.facts == []
    assert mentions_index(s0 - i) and not mentions_index(s0) and not mentions_index(3)


def test_an_unknown_end_refuses_everything_it_would_need():
    i = index_symbol("i0", 0, None)
    with FactRecorder(), pytest.raises(SymbolicDecision, match=r"\[0, \?\]"):
        bool(i + 1 > 5)
    assert index_symbol("i1", None, 5) is None   # an unknown start: no size at all
