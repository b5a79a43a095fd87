"""The native tail of a break (capture/breaks/native_tail.py): bookkeeping after the native
instruction runs in the broken frame, so a loop whose body breaks hands over once per iteration.
Differential tests on loops whose tails walk jumps, FOR_ITER (both ways), stores and native inner
loops, plus unit tests of the walk."""

import contextlib
import io

import bytecode as bc
import numpy as np
import pytest

import npdynamo
from npdynamo.capture.breaks.native_tail import native_stops
from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.hooks.cache import cache_of
from tests.differential import check_same


def print_in_body(xs):
    s = np.zeros(3)
    for x in xs:
        s = s * 0.5 + x
        print(x[0])
    return s


def test_a_loop_whose_body_breaks_hands_over_once_per_iteration():
    compiled = npdynamo.compile(print_in_body)
    xs = np.arange(600, dtype=np.float64).reshape(200, 3)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(xs)  # captures every resume point
        calls = []
        for call in cache_of(compiled).session.resume_calls.values():
            # hand-overs read ``dispatch`` at run time: count through a wrapper
            call.dispatch = (lambda inner: lambda *a: calls.append(1) or inner(*a))(
                call.dispatch
            )
        got = compiled(xs)
    np.testing.assert_array_equal(got, print_in_body(xs))
    assert 200 <= len(calls) <= 202  # one per iteration, plus the loop's way out


def _call_after(fn, callee: str) -> int:
    """Index, in ``fn``'s decoded code, of the first call whose callee is ``callee``."""
    instrs = gen.decoded_instructions(fn.__code__)
    seen = False
    for i, ins in enumerate(instrs):
        if isinstance(ins, bc.Instr) and ins.name == "LOAD_GLOBAL":
            seen = callee in str(ins.arg)
        if seen and isinstance(ins, bc.Instr) and ins.name == "CALL":
            return i
    raise AssertionError("no call found")


def loop_print(xs):
    for x in xs:
        print(x)
    return xs


def test_walk_goes_round_the_loop_to_the_next_item_and_out_of_it():
    instrs = gen.decoded_instructions(loop_print.__code__)
    at = _call_after(loop_print, "print")
    stops = native_stops(loop_print.__code__, [(at + 1, ("V", "V"))], ("xs",))
    assert stops is not None and len(stops) == 2
    body, out = stops
    assert instrs[body.position].name == "LOAD_GLOBAL"  # print(x) again: real work
    assert body.stack == ("V",) and body.locals == ("xs", "x")  # the iterator; x just stored
    assert instrs[out.position].name in ("LOAD_FAST", "RETURN_VALUE")
    assert out.stack == () and out.locals == ("xs",)


def maybe_unbound(flag, xs):
    if flag:
        y = 1
    for x in xs:
        print(x)
    return y  # noqa: F821 - unbound unless flag: Python raises UnboundLocalError


def test_walk_gives_up_when_a_live_local_may_be_unbound():
    at = _call_after(maybe_unbound, "print")
    assert native_stops(maybe_unbound.__code__, [(at + 1, ("V", "V"))], ("xs",)) is None
    # and the break still behaves as Python: result, or the same UnboundLocalError
    with contextlib.redirect_stdout(io.StringIO()):
        # the entries add up across the two: the break at print and its resume's, then three
        # more for flag False (the loop runs in Python up to the raising return)
        check_same(maybe_unbound, True, [1, 2], graphs=0, breaks=2)
        check_same(maybe_unbound, False, [1, 2], graphs=0, breaks=5)


class Countdown:
    """A user iterator: FOR_ITER over it breaks, and its __next__ runs natively."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return self.n


def drain_natively(x, it):
    y = x * 2.0
    for _ in it:  # the tail walks this whole loop: FOR_ITER, STORE_FAST, JUMP_BACKWARD
        pass
    return y + it.n


def nested_tails(xs, m):
    acc = np.zeros(2)
    for i in range(m):
        for x in xs:
            acc = acc + x * i
            print(i)  # the tail: inner jump back, inner FOR_ITER, and when exhausted the outer
    return acc


def unpacking_loop(d):
    total = 0.0
    for k, v in d.items():
        total = total + v * 2
        print(k)
    return total


def gen_items(n):
    for i in range(n):
        yield np.full(2, float(i))


def loop_over_generator(n):
    s = np.zeros(2)
    for v in gen_items(n):
        s = s + v
        print(v[0])
    return s


def loop_else_and_break(xs, stop):
    s = np.zeros(2)
    for x in xs:
        s = s + x
        print(x[0])
        if x[0] == stop:  # a branch on an array value: a second break
            break
    else:
        s = -s
    return s


def try_in_loop(xs):
    s = np.zeros(2)
    for x in xs:
        try:
            s = s + 1.0 / x
            print(x[0])
        except ZeroDivisionError:
            s = s * 0
    return s


@pytest.mark.parametrize(
    "fn,args,graphs,breaks",
    [
        (drain_natively, lambda: (np.ones(3), Countdown(5)), 2, 1),
        (nested_tails, lambda: ([np.ones(2), np.arange(2.0)], 3), 3, 3),
        (unpacking_loop, lambda: ({"a": np.ones(2), "b": np.zeros(2)},), 2, 2),
        # a generator that has produced items cannot be handed back at a break: Python runs
        # the frame (its entry keeps the break)
        (loop_over_generator, lambda: (5,), 0, 1),
        (loop_else_and_break, lambda: ([np.ones(2) * k for k in range(4)], 2.0), 3, 3),
        (loop_else_and_break, lambda: ([np.ones(2) * k for k in range(4)], 9.0), 4, 3),
        (try_in_loop, lambda: ([np.ones(2), np.full(2, 2.0)],), 2, 3),
    ],
)
def test_tails_match_python(fn, args, graphs, breaks):
    with contextlib.redirect_stdout(io.StringIO()):
        check_same(fn, *args(), calls=3, graphs=graphs, breaks=breaks)


def test_reset_drops_generated_resume_codes():
    with contextlib.redirect_stdout(io.StringIO()):
        npdynamo.compile(print_in_body)(np.ones((3, 3)))
    assert gen._RESUME_CODES
    npdynamo.reset()
    assert not gen._RESUME_CODES and not gen._ORIGINS
    with contextlib.redirect_stdout(io.StringIO()):  # and everything works again afterwards
        check_same(print_in_body, np.ones((4, 3)), graphs=2, breaks=2)


def test_break_reason_names_the_users_class():
    with contextlib.redirect_stdout(io.StringIO()):
        out = npdynamo.explain(drain_natively)(np.ones(3), Countdown(3))
    reasons = " ".join(r.reason for r in out.break_reasons)
    assert "Countdown object" in reasons and "UserObjectValue" not in reasons


def import_or_skip(x, flag):
    y = x + 1
    try:
        from locale import NOT_THERE_AT_ALL  # IMPORT_FROM breaks; raises natively every time
    except ImportError:
        pass  # Python goes on with NOT_THERE_AT_ALL unbound
    if flag:
        return NOT_THERE_AT_ALL  # noqa: F821 - UnboundLocalError, as in Python
    return y * 2


def import_in_a_loop(x, names):
    y = x * 1.0
    for name in names:
        try:
            value = __import__("math").__dict__[name]  # a subscript of a module's dict
            from locale import CHAR_MAX  # the break: raises unless the name exists
        except (ImportError, KeyError):
            continue
        y = y + value + CHAR_MAX * 0
    return y


def test_walk_gives_up_when_a_handler_of_the_native_part_reaches_a_stop():
    code = import_or_skip.__code__
    instrs = gen.decoded_instructions(code)
    at = next(i for i, ins in enumerate(instrs)
              if isinstance(ins, bc.Instr) and ins.name == "IMPORT_FROM")
    starts = [(at + 1, ("V", "V"))]
    # the walk alone finds the stop after the try (the handler's path reaches it too) ...
    assert native_stops(code, starts, ("x", "flag", "y")) is not None
    # ... which an exception at the native instruction, caught and passed, reaches unbound
    assert native_stops(code, starts, ("x", "flag", "y"), native=(at,)) is None


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_caught_native_exception_goes_on_as_python(backend):
    # the hand-over at the stop loaded NOT_THERE_AT_ALL unchecked: a segfault on 3.12 and 3.13,
    # UnboundLocalError on 3.11, where Python returns
    # one break: the import of locale (already imported) is captured, IMPORT_FROM of a name it
    # does not hold is the break, and raises natively
    check_same(import_or_skip, np.arange(3.0), False, backend=backend, graphs=1, breaks=1)
    check_same(import_or_skip, np.arange(3.0), True, backend=backend, graphs=1, breaks=1)
    check_same(import_in_a_loop, np.arange(3.0), ["pi", "nope", "e"], backend=backend, graphs=2,
               breaks=3)
