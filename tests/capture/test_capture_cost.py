"""What makes captures cheap must not change what they do (issue 23, item 5; issue 24, item 3).

- Broken frames and resume functions are assembled without their dead code
  (``capture/bytecode/reachable.py``): programs whose breaks sit inside try ranges, handlers,
  ``with`` blocks and loops run as in Python, and a resume function near a function's end is short.
- A resume function is read by the translator as the list it was assembled from, never decoded:
  that list must be the same program a decode of its code gives.
- A loop past the step limit breaks once and the rest of the frame runs in Python.
- The garbage collector is paused during a capture only, and a user's own ``gc.disable()`` kept.
"""

from __future__ import annotations

import contextlib
import gc
import io

import bytecode as bc
import numpy as np
import pytest

import npdynamo
from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.bytecode import reachable
from npdynamo.capture.translator import STEP_LIMIT
from tests.fidelity import check_fidelity


# -- breaks around try ranges, handlers, with blocks and loops ---------------------------------
def try_after_break(x, n):
    y = x + 1
    try:
        print("in try")
        y = y * 2
        if n > 1:
            raise ValueError(n)
        y = y - 1
    except ValueError as e:
        print("caught", e)
        y = y + 10
    finally:
        y = y + 0.5
    return y


def break_in_handler(x, n):
    d = {0: 1}
    try:
        v = x * d[n]
    except KeyError:
        print("missing", n)
        v = x * 3
    return v + 1


def loop_continue_else(x, n):
    total = x * 0
    for i in range(n):
        if i % 2:
            continue
        print(i)
        total = total + x * i
    else:
        print("done")
        total = total - 1
    return total


def while_break(x, n):
    i = 0
    y = x
    while True:
        y = y * 1.5
        print(i)
        i += 1
        if i >= n:
            break
    return y, i


def return_in_try_after_break(x, n):
    try:
        print("a", n)
        if n:
            return x + 1
        return x - 1
    finally:
        print("finally")


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append(("exit", exc[0] is not None))
        return exc[0] is KeyError


def with_in_loop_in_try(x, n):
    rec = Recorder()
    y = x
    try:
        for i in range(n):
            with rec:
                y = y + i
                print("body", i)
                if i == 1:
                    raise KeyError(i)
                if i == 2:
                    raise ValueError(i)
    except ValueError as e:
        print("outer", e)
        y = y * 2
    return y, rec.events


def nested_handlers(x, n):
    out = []
    for i in range(n):
        try:
            try:
                print("try", i)
                if i % 3 == 0:
                    raise KeyError(i)
                out.append(x * i)
            except KeyError:
                print("inner", i)
                if i:
                    raise
        except KeyError:
            print("outer", i)
            out.append(x - i)
    return out


PROGRAMS = [
    (try_after_break, 0), (try_after_break, 2),
    (break_in_handler, 0), (break_in_handler, 5),
    (loop_continue_else, 5), (loop_continue_else, 0),
    (while_break, 3),
    (return_in_try_after_break, 0), (return_in_try_after_break, 1),
    (with_in_loop_in_try, 2), (with_in_loop_in_try, 4),
    (nested_handlers, 7),
]


@pytest.mark.parametrize("fn, n", PROGRAMS, ids=lambda p: getattr(p, "__name__", str(p)))
def test_breaks_in_try_with_and_loops_eager(fn, n):
    # break_in_handler(5): capture sees the KeyError its handler catches, so the frame runs in
    # Python
    graphs = 0 if (fn, n) == (break_in_handler, 5) else None
    with contextlib.redirect_stdout(io.StringIO()):
        check_fidelity(fn, np.arange(4.0), n, backend="eager", graphs=graphs)


@pytest.mark.parametrize(
    "fn, n", [(try_after_break, 2), (with_in_loop_in_try, 4), (nested_handlers, 7)],
    ids=lambda p: getattr(p, "__name__", str(p)),
)
def test_breaks_in_try_with_and_loops_numba(fn, n):
    with contextlib.redirect_stdout(io.StringIO()):
        check_fidelity(fn, np.arange(4.0), n, backend="numba")


# -- dead code is not assembled ------------------------------------------------------------------
def long_then_break(x):
    y = x + 1
    y = y * 2
    y = y - 3
    y = np.sin(y)
    y = y + np.cos(y)
    y = y * y
    y = y / 4
    y = y + 5
    y = np.exp(y * 0.01)
    y = y - x
    y = y * 3
    y = y + 7
    print("near the end")
    return y - 1


def _resume_codes_of(name: str) -> list:
    return [c for c in list(gen._RESUME_CODES.values()) if gen.user_name(c) == name]


def test_resume_function_holds_only_what_follows_it():
    npdynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        check_fidelity(long_then_break, np.arange(4.0))
    codes = _resume_codes_of("long_then_break")
    assert codes, "the print should have broken the graph"
    whole = len(list(long_then_break.__code__.co_code))
    assert all(len(c.co_code) < whole / 2 for c in codes), [len(c.co_code) for c in codes]


def _shape(items: list) -> list:
    """The program an abstract instruction list stands for, independent of where its labels,
    try markers and NOPs sit: each other instruction's name, argument (a jump target as the index
    of the instruction it reaches) and the handler (target index, push_lasti, depth) covering it."""
    real_index, pending, handler, active = {}, [], [], None
    real = []
    for item in items:
        if isinstance(item, bc.Label):
            pending.append(item)
        elif isinstance(item, bc.TryBegin):
            active = item
        elif isinstance(item, bc.TryEnd):
            active = None
        elif isinstance(item, bc.Instr) and item.name != "NOP":
            for label in pending:
                real_index[id(label)] = len(real)
            pending = []
            real.append(item)
            handler.append(active)
    for label in pending:
        real_index[id(label)] = len(real)
    out = []
    for ins, entry in zip(real, handler):
        arg = real_index[id(ins.arg)] if isinstance(ins.arg, bc.Label) else repr(ins.arg)
        cover = None if entry is None else (
            real_index[id(entry.target)], entry.push_lasti, entry.stack_depth)
        out.append((ins.name, arg, cover))
    return out


def test_assembled_list_is_the_program_a_decode_gives():
    npdynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        for fn, n in PROGRAMS:
            check_fidelity(fn, np.arange(4.0), n)
    codes = list(gen._RESUME_CODES.values())
    assert len(codes) > 10
    for code in codes:
        fresh = list(bc.Bytecode.from_code(code, conserve_exception_block_stackdepth=True))
        assert _shape(gen.decoded_instructions(code)) == _shape(fresh), code.co_name


def test_live_only_keeps_handlers_and_drops_dead_ranges():
    def f(a):
        try:
            a = a + 1
        except ValueError:
            a = 0
        return a

    items = gen.decoded_instructions(f.__code__)
    whole = reachable.live_only(list(items))
    assert _shape(whole) == _shape(items)  # all of it can run
    # every range starts with a NOP: 3.13 finds the handler of a raising Python call by the code
    # unit before the call, so a call first in its range would go unhandled
    starts = [whole[i + 1] for i, x in enumerate(whole) if isinstance(x, bc.TryBegin)]
    assert starts and all(isinstance(x, bc.Instr) and x.name == "NOP" for x in starts)
    # jump over the try statement: its range and handler are dead, the return is not
    start = next(i for i, x in enumerate(items) if isinstance(x, bc.Instr) and x.name == "RESUME")
    ret = max(i for i, x in enumerate(items) if isinstance(x, bc.Instr)
              and x.name == "RETURN_VALUE" and i > start)
    load = ret - 1
    label = bc.Label()
    jumped = [*items[: start + 1], bc.Instr("JUMP_FORWARD", label), *items[start + 1: load],
              label, *items[load:]]
    kept = reachable.live_only(jumped)
    assert not any(isinstance(x, (bc.TryBegin, bc.TryEnd)) for x in kept)
    names = [x.name for x in kept if isinstance(x, bc.Instr) and x.name != "NOP"]
    assert names[-2:] == [items[load].name, "RETURN_VALUE"]
    assert len(names) < len([x for x in items if isinstance(x, bc.Instr)])


# -- the step limit ------------------------------------------------------------------------------
def long_python_loop(a):
    d = {}
    i = 0
    while i < 20_000:
        d[i % 13] = d.get(i % 13, 0) + i
        i += 1
    b = a * 2
    return b + d[3], d


def test_loop_past_the_step_limit_breaks_once_and_runs_on_in_python():
    assert 20_000 * 10 > STEP_LIMIT  # the loop above needs more steps than one capture may take
    npdynamo.reset()
    report = npdynamo.explain(long_python_loop)(np.arange(4.0))
    assert report.graph_break_count == 1
    assert report.graph_count == 0
    assert "the rest of the function runs in Python" in report.break_reasons[0].reason
    npdynamo.reset()
    check_fidelity(long_python_loop, np.arange(4.0))
    check_fidelity(long_python_loop, np.arange(4.0), backend="numba")


# -- the garbage collector -----------------------------------------------------------------------
def test_gc_paused_only_during_capture():
    seen = []

    def backend(gm, example_inputs):
        seen.append(gc.isenabled())
        return gm

    def f(x):
        return x * 2 + 1

    assert gc.isenabled()
    npdynamo.compile(f, backend=backend)(np.arange(3.0))
    assert seen == [False]
    assert gc.isenabled()
    gc.disable()
    try:
        npdynamo.compile(lambda x: x - 1, backend=backend)(np.arange(3.0))
        assert not gc.isenabled()  # the user's own setting is left as it was
    finally:
        gc.enable()


# -- a with block catching what a broken callee raises (3.13: test_scope's test_multiple_nesting)
class Catches:
    def __init__(self, kind):
        self.kind, self.seen = kind, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.seen.append(exc[0])
        return exc[0] is not None and issubclass(exc[0], self.kind)


def with_catching_a_broken_callee(n):
    class Outer:
        def f1(self):
            __arg = 1

            class D:
                def g(self, __arg):
                    return __arg
            return D().g(_Outer__arg=2)

    inst = Outer()
    first = Catches(TypeError)
    with first:
        inst.f1()
    second = Catches(TypeError)
    with second:
        inst.f1()
    return n, first.seen, second.seen


def test_with_block_catches_what_a_broken_callee_raises():
    npdynamo.reset()
    check_fidelity(with_catching_a_broken_callee, 1)
    check_fidelity(with_catching_a_broken_callee, 2)  # another compiled object, warm caches
    report = npdynamo.explain(with_catching_a_broken_callee)(3)
    assert report.result[0] == 3
