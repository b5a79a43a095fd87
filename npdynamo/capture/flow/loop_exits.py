"""A test on a graph value at a conditional jump: a ``while`` loop's test, the exit of a loop
left by ``break`` or ``return``, or an ``if`` statement, each formed into one node when it can.

``graph_condition`` is called from the conditional-jump handlers (``opcodes/control.py``) and,
on 3.13, from the comparisons and ``TO_BOOL`` that convert the test to a bool just before the
jump. A ``while <test>:`` loop goes to ``while_loops.form_while``, an ``if`` statement to
``if_statements.form_if``.

A ``while True:`` loop left by ``break`` or ``return`` on a data test is formed rotated
(``form_exit``): the capture has run its first iteration up to the test, so the node runs the
rest of the body and the next iteration's start up to the test again, while the test says
stay; the frame then continues at the exit with the node's results.

A ``for`` loop over a ``range`` left by ``return`` or ``break`` on a data test (``for k in
range(n): A; if c: return r; B``) is formed the same way (``form_for_exit``), with the loop index
carried and one more reason to stop: the range ends. After the node one ``cond`` runs the path
Python takes: the exit where the test said leave, or else the rest of the last iteration
(``B``) and the loop's end. For a ``return`` both paths run on to the function's return and
the ``cond`` gives the value returned; for a ``break`` both reach the code after the loop and
the ``cond`` gives the locals ``B`` stores that it reads.
"""

from __future__ import annotations

import operator

import numpy as np

from npdynamo import config
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE, PY
from npdynamo.capture.bytecode.liveness import _reads_writes, live_locals
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow import higher_order as cf
from npdynamo.capture.flow.higher_order import note_loop
from npdynamo.capture.flow.if_statements import JUMPS_BACK, LEAVING, RETURNS, emit_cond, form_if
from npdynamo.capture.flow.while_loops import (
    build_while,
    carried_names,
    form_while,
    is_graph_condition,
    loop_shape,
    run_to,
)
from npdynamo.capture.values import (
    DELETED,
    ArrayValue,
    Const,
    IteratorValue,
    ScalarInputValue,
    Value,
)
from npdynamo.ops import BINARY_OPERATORS, REGISTRY
from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.scalar_ops import SCALAR_OPS


def graph_condition(frame, value: Value, jump_index: int) -> bool:
    """``value`` is about to be tested by the conditional jump at ``jump_index``. True when it
    was handled here: the bottom test of a loop body being captured (left on the stack), or
    the entry test of a ``while`` loop now captured whole (``frame`` continues after the loop).
    False: not a loop test; the caller breaks the graph as for any branch on an array."""
    if not is_graph_condition(value):
        return False
    if jump_index == frame.stop_at:
        frame.push(value)
        return True
    # (a loop inside a differentiated function stays a break: the tape differentiates it)
    formable = config.capture_while_loops and not frame.ctx.differentiating
    shape = loop_shape(frame, jump_index) if formable else None
    if shape is None:
        if loop_shape(frame, jump_index) is not None:
            return False  # a loop's test: never taken for an if statement
        if formable and form_exit(frame, value, jump_index):  # break / return in a loop
            return True
        return form_if(frame, value, jump_index)  # an if statement, when that is switched on
    return _formed(frame, form_while, (value, *shape), "in the graph as one while_loop",
                   "the while loop on an array condition",
                   "write it with npdynamo.while_loop, or accept a graph break here")


def _formed(frame, form, args: tuple, note: str, what: str, hint: str) -> bool:
    """``form(frame, *args)``, noted as ``note``; what it refuses is a graph break saying that
    ``what`` cannot become an in-graph loop, and why."""
    try:
        form(frame, *args)
        note_loop(frame, note)
    except CaptureUnsupported as exc:
        raise frame.unsupported(f"{what} cannot become an in-graph loop: {exc.reason}",
                                exc.hint or hint, kind="data_dependent_branch") from exc
    return True


# -- a loop left by break or return on a data-dependent test ----------------------------------
#: what the exit test of a rotated loop may compute besides its first test (``a or it >= n``):
#: loads and comparisons of numbers, which cannot raise or warn, so computing them in an
#: iteration where Python does not (``a`` true) changes nothing but time
_CHAIN_OPS = frozenset({"LOAD_FAST", "LOAD_CONST", "LOAD_FAST_LOAD_FAST", "COMPARE_OP", "NOP",
                        "TO_BOOL", "CACHE"})
_JUMPS = frozenset({"JUMP_FORWARD", "JUMP"})
_TESTS = frozenset({"POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_IF_FALSE",
                    "POP_JUMP_FORWARD_IF_FALSE"})


def form_exit(frame, value: Value, jump_index: int) -> bool:
    """The test at ``jump_index`` (``value``, data) decides whether a ``while True`` loop is
    left by ``break`` or ``return``: capture the rest of the loop as one ``while_loop`` node,
    rotated. The frame has just run the loop's head up to this test once (the first iteration,
    peeled), so ``while True: A; if c: break; B`` runs as ``A; while not c: B; A`` - the same
    operations in the same order, nothing after the exit - and the frame continues at the exit
    with the node's results. False when the jump is not such a loop exit."""
    shape = _exit_shape(frame, jump_index)
    if shape is None:
        return False
    if frame.stop_at is not None and shape[0] <= frame.stop_at <= shape[1]:
        # capturing a piece of this very loop (its rotated body, a branch in it): a second exit
        # on data, which forming here would rotate inside the loop again, level after level
        raise frame.unsupported("it is left on an array condition at more than one place",
                                kind="data_dependent_branch")
    if frame.stack:  # a for loop's iterator; a while True loop leaves the stack empty
        form, note = form_for_exit, "a for loop left by break or return"
    else:
        form, note = _form_exit, "left by break or return"
    return _formed(frame, form, (value, *shape), f"in the graph as one while_loop ({note})",
                   "the loop left on an array condition", "accept a graph break here")


def _follow(frame, index: int) -> int:
    """Where running from ``index`` first does something: labels, NOPs and jumps skipped."""
    for _ in range(len(frame.instrs)):
        ins = frame.instrs[index]
        if not isinstance(ins, bc.Instr) or ins.name == "NOP":
            index += 1
        elif ins.name in _JUMPS:
            index = frame.labels[ins.arg]
        else:
            return index
    return index


def _straight_to(frame, index: int, ends: frozenset, allowed: frozenset | None) -> int | None:
    """The index of the first instruction in ``ends`` reached from ``index`` without a jump or
    a label (only ``allowed`` instructions on the way, when given), or None."""
    for i in range(index, len(frame.instrs)):
        ins = frame.instrs[i]
        if isinstance(ins, (bc.Label, bc.TryBegin, bc.TryEnd)):
            return None
        if not isinstance(ins, bc.Instr):
            continue
        if ins.name in ends:
            return i
        if isinstance(ins.arg, bc.Label) or ins.name in LEAVING or (
                allowed is not None and ins.name not in allowed):
            return None
    return None


def _exit_shape(frame, jump_index: int) -> tuple | None:
    """(head, continue index, exit index, the chain of tests) when the jump at ``jump_index``
    leaves the innermost ``while True`` loop around it on one side (a ``break`` past the loop,
    or a block running straight to a ``return``) and stays in it on the other, possibly through
    further tests of the same condition (``a or b``) that go to the same two places."""
    if frame.code.co_flags & CO_GENERATOR_LIKE:
        return None
    iterator = None
    if frame.stack:  # the iterator of the for loop the test is in, and nothing else
        iterator = frame.stack[-1]
        if len(frame.stack) != 1 or not _range_iterator(iterator):
            return None
    instrs, labels = frame.instrs, frame.labels
    backs = [(labels[ins.arg], i) for i, ins in enumerate(instrs)
             if isinstance(ins, bc.Instr) and ins.name in JUMPS_BACK and i > jump_index
             and labels[ins.arg] <= jump_index]
    if not backs:
        return None
    head = max(h for h, _i in backs)
    end = max(i for h, i in backs if h == head)
    first = instrs[_follow(frame, head)]
    if (first.name == "FOR_ITER") != (iterator is not None) or first.name == "GET_ITER" or any(
            isinstance(ins, bc.Instr) and ins.name in _JUMPS and labels[ins.arg] == head
            for ins in instrs):
        return None  # a for loop over something else than a range, or a guarded while
    inside = range(head, end + 1)

    def leaves(index: int) -> int | None:
        at = _follow(frame, index)
        if at not in inside:
            return at
        if iterator is not None and frame.instrs[at].name == "POP_TOP" and _follow(
                frame, at + 1) not in inside:
            return at  # a for loop's break: its iterator popped, a jump past the loop
        return at if _straight_to(frame, at, RETURNS, None) is not None else None

    found = {"exit": set(), "stay": set()}

    def side_of(index: int) -> bool | int:
        """True: leaves the loop; False: goes on with it; an index: a further test."""
        out = leaves(index)
        if out is not None:
            found["exit"].add(out)
            return True
        test = _straight_to(frame, index, _TESTS, _CHAIN_OPS)
        if test is not None and any(leaves(s) is not None for s in _successors(frame, test)):
            starts[test] = index
            return test
        found["stay"].add(_follow(frame, index))
        return False

    chain, pending, starts = [], [jump_index], {jump_index: None}
    while pending:
        index = pending.pop()
        ins = instrs[index]
        if ins.name not in _TESTS or len(chain) > 8:
            return None
        taken, fall = (side_of(s) for s in _successors(frame, index))
        chain.append((index, "TRUE" in ins.name, taken, fall, starts[index]))
        pending += [s for s in (taken, fall) if s is not True and s is not False]
    if len(found["exit"]) != 1 or len(found["stay"]) != 1:
        return None
    (exit_index,), (stay,) = found["exit"], found["stay"]
    if stay not in inside:
        return None
    if iterator is not None and _straight_to(frame, exit_index, RETURNS, None) is None and (
            _follow(frame, exit_index + 1) != _after_for(frame, _follow(frame, head))):
        return None  # a for loop's break to somewhere else than the loop's own end
    return head, end, stay, exit_index, chain


def _after_for(frame, for_iter: int) -> int:
    """Where a ``for`` loop's code goes on once its iterator is exhausted (3.12+: past the
    ``END_FOR`` and, on 3.13, the ``POP_TOP`` that clean up its stack)."""
    at = _follow(frame, frame.labels[frame.instrs[for_iter].arg])
    if frame.instrs[at].name == "END_FOR":
        at = _follow(frame, at + 1)
        if PY >= (3, 13) and frame.instrs[at].name == "POP_TOP":
            at = _follow(frame, at + 1)
    return at


def _successors(frame, index: int) -> tuple[int, int]:
    """(taken, fall-through) of the conditional jump at ``index``."""
    return frame.labels[frame.instrs[index].arg], index + 1


def _form_exit(frame, value: Value, head: int, end: int, stay: int, exit_index: int,
               chain: list) -> None:
    first_test = chain[0][0]
    names = carried_names(frame, [(head, first_test), (stay, end + 1)], stay, exit_index)
    pred = _continues(frame, frame.locals, value, chain)
    if isinstance(pred, Const):  # every test known now: Python's own jump
        frame.ip = stay if pred.value else exit_index
        return

    def advance(locals_: dict) -> tuple[dict, Value]:
        after, test = run_to(frame, stay, first_test, locals_, "reach its exit test")
        return after, _continues(frame, after, test, chain)

    build_while(frame, names, pred, advance)
    frame.ip = exit_index


def _continues(frame, locals_: dict, first: Value, chain: list) -> Value:
    """Whether the loop goes on after the tests of ``chain`` (the first one's value given, the
    others computed from ``locals_``): a bool graph value, or a Const when known now."""
    values = {chain[0][0]: first}
    for index, _when, _taken, _fall, start in chain[1:]:
        values[index] = _test_value(frame, locals_, start, index)

    def leaving(index: int) -> Value:
        _i, when, taken, fall, _start = next(c for c in chain if c[0] == index)
        on_true, on_false = (taken, fall) if when else (fall, taken)
        test = _as_bool(frame, values[index])
        outcomes = [o if o is True or o is False else leaving(o) for o in (on_true, on_false)]
        if isinstance(test, Const):
            return outcomes[0] if test.value else outcomes[1]
        return _select(frame, test, *outcomes)

    out = leaving(chain[0][0])
    if out is True or out is False:
        return Const(not out)
    return frame.ctx.call_op(REGISTRY["logical_not"], (out,), {})


def _select(frame, test: Value, if_true, if_false) -> Value:
    """``if_true if test else if_false`` on bools (``test`` a bool graph value; the others
    Python bools or bool graph values: an outcome known now is folded)."""
    def op(name, *args):
        return frame.ctx.call_op(REGISTRY[name], args, {})

    known = (True, False)
    if if_true is if_false and if_true in known:
        return if_true
    if if_true is True and if_false is False:
        return test
    if if_true is False and if_false is True:
        return op("logical_not", test)
    if if_true is True or if_false is False:  # test or f / test and t
        return op("logical_or" if if_true is True else "logical_and", test,
                  if_false if if_true is True else if_true)
    if if_true is False or if_false is True:  # (not test) and f / (not test) or t
        return op("logical_and" if if_true is False else "logical_or", op("logical_not", test),
                  if_false if if_true is False else if_true)
    return op("logical_or", op("logical_and", test, if_true),
              op("logical_and", op("logical_not", test), if_false))


def _as_bool(frame, value: Value) -> Value:
    """The truth of a test value: a Const, or a bool graph value."""
    if isinstance(value, ArrayValue) and value.meta.shape == () and value.meta.dtype == bool:
        return value
    if isinstance(value, Const) and not isinstance(value, ScalarInputValue):
        if type(value.value) in (bool, np.bool_):
            return Const(bool(value.value))
    raise frame.unsupported(f"the loop's exit test gives a {value.kind()}, not a bool")


def _test_value(frame, locals_: dict, start: int, stop: int) -> Value:
    """The value the straight test code from ``start`` leaves for the jump at ``stop``: loads
    and comparisons only (``_CHAIN_OPS``), a comparison with a graph operand recorded as the
    ufunc (its truth is Python's for numbers)."""
    stack: list[Value] = []
    for i in range(start, stop):
        ins = frame.instrs[i]
        if not isinstance(ins, bc.Instr) or ins.name in ("NOP", "CACHE", "TO_BOOL"):
            continue
        if ins.name == "LOAD_CONST":
            stack.append(Const(ins.arg))
        elif ins.name in ("LOAD_FAST", "LOAD_FAST_LOAD_FAST"):
            for name in (ins.arg if isinstance(ins.arg, tuple) else (ins.arg,)):
                value = locals_.get(name, DELETED)
                if not _number_like(value):
                    raise frame.unsupported(f"the exit test reads {name}, not a number")
                stack.append(value)
        else:  # COMPARE_OP
            right, left = stack.pop(), stack.pop()
            symbol = _COMPARE[ins.arg.name.removesuffix("_CAST")]
            if isinstance(left, (ArrayValue, ScalarInputValue)) or isinstance(
                    right, (ArrayValue, ScalarInputValue)):
                operands = tuple(v if isinstance(v, (ArrayValue, ScalarInputValue)) else v.value
                                 for v in (left, right))
                stack.append(frame.ctx.call_op(BINARY_OPERATORS[symbol], operands, {}))
            else:
                stack.append(Const(_PY_COMPARE[symbol](left.value, right.value)))
    if len(stack) != 1:
        raise frame.unsupported("the exit test is not one comparison")
    return stack[0]


def _number_like(value) -> bool:
    if isinstance(value, ArrayValue):
        return value.meta.shape == () and value.meta.dtype.kind in "biuf"
    if isinstance(value, ScalarInputValue):
        meta = value.node.meta.get("val")
        return isinstance(meta, ScalarMeta) and meta.type in (int, float)
    return isinstance(value, Const) and type(value.value) in (int, float, bool)


_COMPARE = {"LT": "<", "LE": "<=", "EQ": "==", "NE": "!=", "GT": ">", "GE": ">="}
_PY_COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
               ">": operator.gt, ">=": operator.ge}



# -- a for loop over a range left by return ---------------------------------------------------
#: the names under which the rotated for loop carries its index and its last test's outcome
_INDEX, _STAY = "<the loop index>", "<the loop goes on>"


def _range_iterator(value: Value) -> bool:
    """The iterator of a ``for`` statement over a ``range``, stepped item by item."""
    return (isinstance(value, IteratorValue) and value.loop_owned and value.mode == "items"
            and isinstance(value.origin, range) and not value.exhausted
            and 0 < value.pos <= len(value.items))


def form_for_exit(frame, value: Value, head: int, end: int, stay: int, exit_index: int,
                  chain: list) -> None:
    """``for k in range(...): A; if c: return r; B`` at its test ``c`` (``value``), the frame
    having run the current iteration's ``A``: the rest of the loop as one rotated
    ``while_loop`` (``B``, the next index, ``A``, the test) running while the test says stay
    and the range has a next index; then one ``cond`` on the last test's outcome gives the
    value the function returns (``r``; or ``B``, the loop's end and the code after it)."""
    iterator = frame.stack[-1]
    steps = iterator.origin
    current, last = steps[iterator.pos - 1], steps[-1]
    body = _next_real(frame, _follow(frame, head) + 1)
    store = frame.instrs[body]
    if store.name != "STORE_FAST":
        raise frame.unsupported("the for loop's target is not a local variable")
    first_test = chain[0][0]
    names = _for_carried(frame, head, [(body, first_test), (stay, end + 1)], first_test)
    stay_now = _continues(frame, frame.locals, value, chain)
    state = {name: frame.locals[name] for name in names}
    if isinstance(stay_now, Const):  # every test known now: Python's own jump
        frame.ip = stay if stay_now.value else exit_index
        return
    state[_INDEX], state[_STAY] = Const(current), stay_now

    def advance(locals_: dict) -> tuple[dict, Value]:
        locals_ = dict(locals_)
        index, _stay = locals_.pop(_INDEX), locals_.pop(_STAY)
        rest = cf.sub_frame(frame, stay, head)  # B, to the loop's head
        rest.locals.update(locals_)
        rest.run()
        if rest.stack or rest.return_value is not None or rest.ip != head:
            raise frame.unsupported("the rest of the loop body does not end at the loop's head")
        node = frame.ctx.call_op(SCALAR_OPS["py_add"], (index, steps.step), {}).node
        index = cf.LoopScalarValue(current, node, frame.ctx, f"the loop variable {store.arg}")
        start = cf.sub_frame(frame, body, first_test)  # the next iteration's A, to the test
        start.locals = rest.locals
        start.push(index)
        start.run()
        if len(start.stack) != 1 or start.return_value is not None:
            raise frame.unsupported("the loop body does not reach its exit test")
        after = dict(start.locals)
        after[_INDEX] = index
        after[_STAY] = _continues(frame, after, start.stack[0], chain)
        return after, _goes_on(frame, after[_STAY], index, last)

    go = _goes_on(frame, stay_now, Const(current), last)
    if not isinstance(go, Const):
        build_while(frame, [*names, _INDEX, _STAY], go, advance, state)
    for name in names:
        frame.locals[name] = state[name]
    if _straight_to(frame, exit_index, RETURNS, None) is not None:
        _return_by_exit(frame, state[_STAY], stay, exit_index, iterator)
    else:
        _join_after(frame, state[_STAY], stay, exit_index, iterator,
                    _after_for(frame, _follow(frame, head)), [(stay, end + 1)])


def _next_real(frame, index: int) -> int:
    while not isinstance(frame.instrs[index], bc.Instr):
        index += 1
    return index


def _for_carried(frame, head: int, ranges: list[tuple[int, int]], test: int) -> list[str]:
    """The locals the rotated loop carries: stored in its body (``ranges``: the start up to the
    test, the rest after it; no jump leaving them except back to ``head``) and live at the
    test, where both ways on read them. Each must be bound now."""
    stored: dict[str, None] = {}
    for first, stop in ranges:
        for i in range(first, stop):
            ins = frame.instrs[i]
            if isinstance(ins, (bc.TryBegin, bc.TryEnd)):
                raise frame.unsupported("the loop body has a try block")
            if not isinstance(ins, bc.Instr):
                continue
            if ins.name in LEAVING:
                raise frame.unsupported(
                    f"the loop body leaves the loop another way ({ins.name})")
            if isinstance(ins.arg, bc.Label) and not (frame.labels[ins.arg] == head or any(
                    a <= frame.labels[ins.arg] <= b for a, b in ranges)):
                raise frame.unsupported("the loop body leaves the loop (break or continue)")
            stored.update(dict.fromkeys(_reads_writes(ins)[1]))
    live = live_locals(frame.code, test)
    if live is None:
        raise frame.unsupported("the function reads its locals implicitly (locals(), eval...)")
    names = []
    for name in stored:
        if name in live:
            if frame.locals.get(name, DELETED) is DELETED:
                raise frame.unsupported(f"{name} is unbound at the loop's exit test")
            names.append(name)
    return names


def _goes_on(frame, stay: Value, index: Value, last: int) -> Value:
    """Whether the rotated loop runs again: its test said stay and the range has a next
    index (``index != last``); a Const when known now."""
    if not isinstance(index, ScalarInputValue):  # (a graph number is a Const too)
        return stay if index.value != last else Const(False)
    more = frame.ctx.call_op(BINARY_OPERATORS["!="], (index, last), {})
    return frame.ctx.call_op(REGISTRY["logical_and"], (stay, more), {})


def _exhausted(iterator: IteratorValue) -> IteratorValue:
    """``iterator`` at its end: the range the rotated loop stopped at."""
    return IteratorValue(items=list(iterator.items), pos=len(iterator.items),
                         python_type=iterator.python_type, origin=iterator.origin,
                         loop_owned=True)


def _join_after(frame, stay: Value, rest: int, exit_index: int, iterator, after: int,
                ranges: list[tuple[int, int]]) -> None:
    """After the rotated loop of a ``for`` left by ``break``: a ``cond`` on the last test.
    Where it said stay, the range has ended: the rest of the body runs, then the loop's end;
    else the ``break``. Both reach ``after``, where the frame goes on with the locals the
    rest of the body stores (``ranges``) that are live there, as the ``cond`` gives them."""
    live = live_locals(frame.code, after)
    if live is None:
        raise frame.unsupported("the function reads its locals implicitly (locals(), eval...)")
    names = []
    for first, stop in ranges:
        for i in range(first, stop):
            ins = frame.instrs[i]
            if isinstance(ins, bc.Instr):
                names += [n for n in _reads_writes(ins)[1] if n in live and n not in names]
    for name in names:
        if frame.locals.get(name, DELETED) is DELETED:
            raise frame.unsupported(f"{name} is unbound when the loop is left by break")

    def runner(start: int, it: IteratorValue):
        def run(sub) -> list[Value]:
            branch = cf.sub_frame(frame, start, after)
            branch.push(it)
            branch.run()
            if branch.stack or branch.return_value is not None or branch.ip != after:
                raise frame.unsupported("a way out of the loop does not reach the loop's end")
            values = [branch.locals.get(name, DELETED) for name in names]
            if DELETED in values:
                raise frame.unsupported("a way out of the loop leaves a variable unbound")
            return values
        return run

    if names:  # (else neither way changes what the code after the loop sees)
        values = _exit_cond(frame, stay, names, runner(rest, _exhausted(iterator)),
                            runner(exit_index, iterator), "the break")
        frame.locals.update(zip(names, values))
    frame.pop()  # the loop's iterator
    frame.ip = after


def _exit_cond(frame, stay: Value, names: list[str], at_end, at_exit, exit_what: str) -> list:
    """The ``cond`` on the rotated loop's last test: ``at_end`` (the range ended) where it said
    stay, else ``at_exit``; each gives the values of ``names``. The values after it."""
    roots = [*frame.locals.values(), *frame.cells.values()]
    subs, outs = [], []
    for role, run, what in (("true", at_end, "the end of the range"),
                            ("false", at_exit, exit_what)):
        sub, values = cf.sub_capture(frame, "cond", role, run, roots, what)
        subs.append(sub)
        outs.append(values)
    return emit_cond(frame, stay, names, subs, outs)


def _return_by_exit(frame, stay: Value, rest: int, exit_index: int, iterator) -> None:
    """After the rotated loop: a ``cond`` on the last test. Where it said stay, the range has
    ended: the rest of the body, the loop's end (its iterator exhausted) and the code after it
    run to the function's return; else the exit's return. Its value is the function's."""

    def returner(start: int, it: IteratorValue):
        def run(sub) -> list[Value]:
            branch = cf.sub_frame(frame, start, None)
            branch.push(it)
            value = branch.run()
            if value is None:
                raise frame.unsupported("a way out of the loop does not return")
            return [value]
        return run

    (frame.return_value,) = _exit_cond(
        frame, stay, ["the returned value"], returner(rest, _exhausted(iterator)),
        returner(exit_index, iterator), "the return")
