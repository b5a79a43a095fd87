"""``while <array condition>:`` in ordinary Python, captured as one ``while_loop`` node.

A ``while`` whose condition is a graph value (``while err > tol:``) would be a graph break at
every iteration. CPython compiles it as a first test that jumps past the loop, the body, and
the test again at the bottom, jumping back to the body. At the first test, when the loop has
that shape and nothing in it leaves it (``break``, ``return``, ``yield``, ``try``/``with``, stores
to cells), the body and the bottom test are captured once into a subgraph whose inputs are the
locals the loop carries (stored in the body and read later in it or after it) and the test's
value; the condition's subgraph just returns that value. The locals then hold the node's
results and capture continues after the loop. This is ``npdynamo.while_loop`` formed from the
bytecode, with the same rules: carried values keep their dtype, shape and structure, the body
mutates nothing outside the loop. Where a rule fails, the test is a graph break as before, and
the break's reason says why the loop did not go into the graph.

A ``while True:`` loop left by ``break`` or ``return`` on a data test is formed rotated
(``form_exit``): the capture has run its first iteration up to the test, so the node runs the
rest of the body and the next iteration's start up to the test again, while the test says
stay; the frame then continues at the exit with the node's results.

Called from the conditional-jump handlers (``opcodes/control.py``) and, on 3.13, from the
comparisons and ``TO_BOOL`` that convert the test to a bool just before the jump.
"""

from __future__ import annotations

import operator

import numpy as np

from npdynamo import config
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE
from npdynamo.capture.bytecode.liveness import _reads_writes, live_locals
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.higher_order import (
    SubCapture,
    check_untouched,
    extras_of,
    flatten,
    infer_results,
    inside_expression,
    leaf_hint,
    leaf_values,
    note_loop,
    record_node,
    same_kinds,
    sub_capture,
    sub_frame,
    sub_inputs,
    unflatten,
)
from npdynamo.capture.flow.if_statements import (
    ENTRY_TESTS,
    JUMPS_BACK,
    LEAVING,
    RETURNS,
    form_if,
)
from npdynamo.capture.values import DELETED, ArrayValue, Const, ScalarInputValue, Value
from npdynamo.ops import BINARY_OPERATORS, REGISTRY
from npdynamo.ops.higher_order import WHILE_LOOP
from npdynamo.ops.meta import ScalarMeta


def is_graph_condition(value: Value) -> bool:
    """A loop test whose truth only the run time knows: one graph value."""
    if isinstance(value, ArrayValue):
        return value.meta.shape == ()
    return isinstance(value, ScalarInputValue)


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
    shape = _loop_shape(frame, jump_index) if formable else None
    if shape is None:
        if _loop_shape(frame, jump_index) is not None:
            return False  # a loop's test: never taken for an if statement
        if formable and form_exit(frame, value, jump_index):  # break / return in a loop
            return True
        return form_if(frame, value, jump_index)  # an if statement, when that is switched on
    return _formed(frame, _form, (value, *shape), "in the graph as one while_loop",
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


def next_instruction(frame) -> int:
    """The index of the next real instruction of ``frame`` (labels skipped)."""
    return _instr_index(frame, frame.ip, 1)


def _instr_index(frame, start: int, step: int) -> int:
    i = start
    while not isinstance(frame.instrs[i], bc.Instr):
        i += step
    return i


def _loop_shape(frame, jump_index: int) -> tuple[int, int, int] | None:
    """(body start, bottom test, exit) of the ``while`` loop tested by the jump at
    ``jump_index``, its entry test or its bottom test; None when the jump is neither."""
    jump = frame.instrs[jump_index]
    if not isinstance(jump, bc.Instr):
        return None
    if jump.name in ENTRY_TESTS:
        shape = _from_entry(frame, jump_index, jump)
        if shape is not None:
            return shape
    # the bottom test: reached when the first test was known at capture time (an unrolled
    # first iteration), or after a loop body that began before the loop's value was data
    if jump.name == "POP_JUMP_BACKWARD_IF_TRUE":  # 3.11
        body, exit_index = jump.arg, jump_index + 1
    elif jump.name == "POP_JUMP_IF_FALSE":  # 3.12+: then the jump back
        back = frame.instrs[_instr_index(frame, jump_index + 1, 1)]
        if back.name != "JUMP_BACKWARD":
            return None
        body, exit_index = back.arg, frame.labels[jump.arg]
    else:
        return None
    start = frame.labels[body]
    entry = frame.instrs[start - 1] if start > 0 else None
    if not isinstance(entry, bc.Instr) or _from_entry(frame, start - 1, entry) != (
            start, jump_index, exit_index):
        return None
    return start, jump_index, exit_index


def _from_entry(frame, jump_index: int, jump: bc.Instr) -> tuple[int, int, int] | None:
    instrs = frame.instrs
    if jump.name not in ENTRY_TESTS:
        return None
    start = jump_index + 1
    body = instrs[start] if start < len(instrs) else None
    if not isinstance(body, bc.Label):
        return None
    exit_index = frame.labels[jump.arg]
    last = _instr_index(frame, exit_index - 1, -1)
    if instrs[last].name == "POP_JUMP_BACKWARD_IF_TRUE" and instrs[last].arg is body:
        return start, last, exit_index  # 3.11
    if instrs[last].name == "JUMP_BACKWARD" and instrs[last].arg is body:
        test = _instr_index(frame, last - 1, -1)
        if instrs[test].name == "POP_JUMP_IF_FALSE" and instrs[test].arg is jump.arg:
            return start, test, exit_index  # 3.12+
    return None


def _carried_names(frame, ranges: list[tuple[int, int]], start: int,
                   exit_index: int) -> list[str]:
    """The locals a loop carries: stored by its body (the instruction ranges ``ranges``, which
    no jump inside may leave) and live where the next iteration starts (``start``) or after the
    loop (``exit_index``). Each must be bound now."""
    stored: dict[str, None] = {}
    for first, end in ranges:
        for i in range(first, end):
            ins = frame.instrs[i]
            if isinstance(ins, (bc.TryBegin, bc.TryEnd)):
                raise frame.unsupported("the loop body has a try block")
            if not isinstance(ins, bc.Instr):
                continue
            if ins.name in LEAVING:
                raise frame.unsupported(
                    "the loop body leaves the loop (break, return, raise, yield, with: "
                    f"{ins.name})")
            if isinstance(ins.arg, bc.Label) and not any(
                    a <= frame.labels[ins.arg] <= b for a, b in ranges):
                raise frame.unsupported("the loop body leaves the loop (break or continue)")
            for name in _reads_writes(ins)[1]:
                stored.setdefault(name, None)
    live_body = live_locals(frame.code, start)
    live_after = live_locals(frame.code, exit_index)
    if live_body is None or live_after is None:
        raise frame.unsupported("the function reads its locals implicitly (locals(), eval...)")
    carried = []
    for name in stored:
        if name not in live_body and name not in live_after:
            continue  # a temporary of one iteration
        if frame.locals.get(name, DELETED) is DELETED:
            raise frame.unsupported(
                f"{name} is first assigned inside the loop but read after it or in a later "
                "iteration (unbound if the loop never runs)")
        carried.append(name)
    return carried


def _form(frame, pred: Value, start: int, test: int, exit_index: int) -> None:
    # a while loop inside an expression (3.12+ inlined comprehension), or a generator's body
    if inside_expression(frame) or frame.code.co_flags & CO_GENERATOR_LIKE:
        raise frame.unsupported("the loop sits inside an expression or a generator")
    names = _carried_names(frame, [(start, test)], start, exit_index)

    build_while(frame, names, pred,
                lambda locals_: _run_to(frame, start, test, locals_, "end at its test"))
    frame.ip = exit_index


def _run_to(frame, start: int, stop: int, locals_: dict, what: str) -> tuple[dict, Value]:
    """Run ``frame``'s code from ``start`` to the test at ``stop`` on ``locals_``: the locals
    then and the test's value."""
    body = sub_frame(frame, start, stop)
    body.locals.update(locals_)
    body.run()
    if len(body.stack) != 1 or body.return_value is not None:
        raise frame.unsupported(f"the loop body does not {what}")
    return body.locals, body.stack[0]


def build_while(frame, names: list[str], pred: Value, advance) -> None:
    """Record a ``while_loop`` node carrying the locals ``names`` while ``pred`` holds:
    ``advance(locals)`` captures one iteration from the locals (name -> value) it is given and
    returns the locals after it and the next test. The locals then hold the node's results."""
    init = [frame.locals[name] for name in names]
    parts = [flatten(frame, v, f"the loop variable {n}") for n, v in zip(names, init)]
    leaves = [leaf for found, _s in parts for leaf in found] + [pred]
    structures = [s for _f, s in parts]

    def run(sub: SubCapture) -> Value:
        inside = sub_inputs(sub, leaves)
        sub.carried_inside = inside
        locals_, position = {}, 0
        for name, structure, (found, _s) in zip(names, structures, parts):
            locals_[name] = unflatten(structure, inside[position:position + len(found)])
            position += len(found)
        after, sub.new_pred = advance(locals_)
        return [after.get(name, DELETED) for name in names]

    roots = [*frame.locals.values(), *frame.cells.values()]
    sub, outs = sub_capture(frame, "while_loop", "body", run, roots, "the loop body")
    check_untouched(frame, "while_loop", sub)
    out_leaves = []
    for name, value, structure, (found, _s) in zip(names, outs, structures, parts):
        if value is DELETED:
            raise frame.unsupported(f"the loop body deletes {name}")
        out_leaves += same_kinds(
            frame, structure, found, value, f"the value of {name} after an iteration",
            f"the loop changes {name} from {{want}} to {{got}}; a loop's variables must keep "
            "their structure, dtype and shape")
    new_pred = sub.new_pred
    if not is_graph_condition(new_pred):
        raise frame.unsupported(f"the loop test gives a {new_pred.kind()} after an iteration")
    out_leaves += same_kinds(frame, None, [pred], new_pred, "the loop test",
                             "the loop test changes from {want} to {got}")
    cond = SubCapture(frame.ctx, f"while_loop_cond_{next(frame.ctx.subgraph_names)}")
    with cond.active():
        tests = sub_inputs(cond, leaves)
    node_args = (cond.finish([tests[-1]]), sub.finish(out_leaves), leaf_values(leaves), (),
                 extras_of(sub))
    metas = infer_results(frame, WHILE_LOOP, node_args)
    results = record_node(frame, WHILE_LOOP, node_args, metas, [leaf_hint(v) for v in leaves],
                      "a number the while loop computes", (sub,))
    position = 0
    for name, structure, (found, _s) in zip(names, structures, parts):
        frame.locals[name] = unflatten(structure, results[position:position + len(found)])
        position += len(found)


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
    return _formed(frame, _form_exit, (value, *shape),
                   "in the graph as one while_loop (left by break or return)",
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
    if inside_expression(frame) or frame.code.co_flags & CO_GENERATOR_LIKE or frame.stack:
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
    if first.name in ("FOR_ITER", "GET_ITER") or any(
            isinstance(ins, bc.Instr) and ins.name in _JUMPS and labels[ins.arg] == head
            for ins in instrs):
        return None  # a for loop (its iterator is not carried) or a guarded while
    inside = range(head, end + 1)

    def leaves(index: int) -> int | None:
        at = _follow(frame, index)
        if at not in inside:
            return at
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
    return head, end, stay, exit_index, chain


def _successors(frame, index: int) -> tuple[int, int]:
    """(taken, fall-through) of the conditional jump at ``index``."""
    return frame.labels[frame.instrs[index].arg], index + 1


def _form_exit(frame, value: Value, head: int, end: int, stay: int, exit_index: int,
               chain: list) -> None:
    first_test = chain[0][0]
    names = _carried_names(frame, [(head, first_test), (stay, end + 1)], stay, exit_index)
    pred = _continues(frame, frame.locals, value, chain)
    if isinstance(pred, Const):  # every test known now: Python's own jump
        frame.ip = stay if pred.value else exit_index
        return

    def advance(locals_: dict) -> tuple[dict, Value]:
        after, test = _run_to(frame, stay, first_test, locals_, "reach its exit test")
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


__all__ = ["build_while", "graph_condition", "is_graph_condition", "next_instruction"]
