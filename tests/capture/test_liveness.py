"""Liveness of locals (``capture/bytecode/liveness.py``): what a resume function is handed."""

from __future__ import annotations

import dis

import numpy as np

import npdynamo
from npdynamo.capture.bytecode.generate import decoded_instructions
from npdynamo.capture.bytecode.liveness import hand_over, live_locals
from npdynamo.capture.hooks.cache import compiled_entries


def live_at_call(fn, callee: str) -> frozenset[str] | None:
    """The locals live at the first call of the global ``callee`` in ``fn``."""
    instrs = decoded_instructions(fn.__code__)
    for i, ins in enumerate(instrs):
        arg = getattr(ins, "arg", None)
        if getattr(ins, "name", "") == "LOAD_GLOBAL" and callee in (
            arg if isinstance(arg, tuple) else (arg,)
        ):
            return live_locals(fn.__code__, i)
    raise AssertionError(f"no call of {callee}")


def marker(*args):
    return args


def dead_counter(x, n):
    for _ in range(n):
        x = marker(x)[0]
    return x


def read_in_handler(x):
    tmp = 1
    try:
        marker(x)
        tmp = 2
    except ValueError:
        return tmp
    return x


def deleted_later(x):
    gone = 1
    marker(x)
    del gone
    return x


def uses_locals(x):
    y = 2
    marker(x)
    return locals()


def overwritten(x):
    y = x
    marker(x)
    y = 3
    return y


def test_a_loop_counter_nobody_reads_is_dead():
    assert live_at_call(dead_counter, "marker") == {"x"}


def test_a_local_read_by_an_exception_handler_is_live():
    assert "tmp" in live_at_call(read_in_handler, "marker")


def test_del_counts_as_a_read():
    assert "gone" in live_at_call(deleted_later, "marker")


def test_code_that_calls_locals_keeps_everything():
    assert live_at_call(uses_locals, "marker") is None


def test_a_local_overwritten_before_any_read_is_dead():
    assert live_at_call(overwritten, "marker") == {"x"}


def loop_with_a_break_and_an_unread_counter(x, rng):
    for _ in range(30):
        x = x + rng.standard_normal(3)  # a graph break every iteration
    return x


def test_unread_counter_does_not_make_an_entry_per_iteration():
    compiled = npdynamo.compile(loop_with_a_break_and_an_unread_counter)
    for seed in range(3):
        rng_plain, rng_compiled = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = loop_with_a_break_and_an_unread_counter(np.ones(3), rng_plain)
        got = compiled(np.ones(3), rng_compiled)
        np.testing.assert_array_equal(got, expected)
        assert rng_compiled.bit_generator.state == rng_plain.bit_generator.state
    assert len(compiled_entries(compiled)) == 1


def _passer(a, b):
    try:
        return _sink(a, b)
    except KeyError:
        return b


def _sink(a, b):
    return a, b


def test_hand_over_clears_only_what_is_dead_after_a_returning_call():
    code = hand_over(_passer.__code__)
    deleted = {i.argval for i in dis.get_instructions(code) if i.opname == "DELETE_FAST"}
    assert deleted == {"a"}  # b is read by the handler: kept
    fn = type(_passer)(code, globals())
    assert fn(1, 2) == (1, 2)
