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

``build_while`` records the node for this form and for the loops left by ``break`` or
``return`` (``loop_exits.py``, which decides at each test on a graph value which form it is).
"""

from __future__ import annotations

from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE
from npdynamo.capture.bytecode.liveness import _reads_writes, live_locals
from npdynamo.capture.flow.assertions import assert_blocks
from npdynamo.capture.flow.higher_order import (
    SubCapture,
    check_untouched,
    extras_of,
    flatten,
    infer_results,
    inside_expression,
    leaf_hint,
    leaf_values,
    record_node,
    same_kinds,
    sub_capture,
    sub_frame,
    sub_inputs,
    unflatten,
)
from npdynamo.capture.flow.if_statements import (
    FALSE_TESTS,
    LEAVING,
)
from npdynamo.capture.values import DELETED, ArrayValue, ScalarInputValue, Value
from npdynamo.ops.higher_order import WHILE_LOOP


def is_graph_condition(value: Value) -> bool:
    """A loop test whose truth only the run time knows: one graph value."""
    if isinstance(value, ArrayValue):
        return value.meta.shape == ()
    return isinstance(value, ScalarInputValue)


def next_instruction(frame) -> int:
    """The index of the next real instruction of ``frame`` (labels skipped)."""
    return _instr_index(frame, frame.ip, 1)


def _instr_index(frame, start: int, step: int) -> int:
    i = start
    while not isinstance(frame.instrs[i], bc.Instr):
        i += step
    return i


def loop_shape(frame, jump_index: int) -> tuple[int, int, int] | None:
    """(body start, bottom test, exit) of the ``while`` loop tested by the jump at
    ``jump_index``, its top test or its bottom test; None when the jump is neither."""
    jump = frame.instrs[jump_index]
    if not isinstance(jump, bc.Instr):
        return None
    if jump.name in FALSE_TESTS:
        shape = _from_top_test(frame, jump_index, jump)
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
    top = frame.instrs[start - 1] if start > 0 else None
    if not isinstance(top, bc.Instr) or _from_top_test(frame, start - 1, top) != (
            start, jump_index, exit_index):
        return None
    return start, jump_index, exit_index


def _from_top_test(frame, jump_index: int, jump: bc.Instr) -> tuple[int, int, int] | None:
    instrs = frame.instrs
    if jump.name not in FALSE_TESTS:
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


def carried_names(frame, ranges: list[tuple[int, int]], start: int,
                   exit_index: int) -> list[str]:
    """The locals a loop carries: stored by its body (the instruction ranges ``ranges``, which
    no jump inside may leave) and live where the next iteration starts (``start``) or after the
    loop (``exit_index``). Each must be bound now."""
    stored: dict[str, None] = {}
    for first, end in ranges:
        failing = assert_blocks(frame.instrs, first, end)  # (rerun in Python, never captured)
        for i in range(first, end):
            ins = frame.instrs[i]
            if isinstance(ins, (bc.TryBegin, bc.TryEnd)):
                raise frame.unsupported("the loop body has a try block")
            if not isinstance(ins, bc.Instr) or i in failing:
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


def form_while(frame, pred: Value, start: int, test: int, exit_index: int) -> None:
    # a while loop inside an expression (3.12+ inlined comprehension), or a generator's body
    if inside_expression(frame) or frame.code.co_flags & CO_GENERATOR_LIKE:
        raise frame.unsupported("the loop sits inside an expression or a generator")
    names = carried_names(frame, [(start, test)], start, exit_index)

    build_while(frame, names, pred,
                lambda locals_: run_to(frame, start, test, locals_, "end at its test"))
    frame.ip = exit_index


def run_to(frame, start: int, stop: int, locals_: dict, what: str) -> tuple[dict, Value]:
    """Run ``frame``'s code from ``start`` to the test at ``stop`` on ``locals_``: the locals
    then and the test's value."""
    body = sub_frame(frame, start, stop)
    body.locals.update(locals_)
    body.run()
    if len(body.stack) != 1 or body.return_value is not None:
        raise frame.unsupported(f"the loop body does not {what}")
    return body.locals, body.stack[0]


def build_while(frame, names: list[str], pred: Value, advance, state: dict | None = None) -> None:
    """Record a ``while_loop`` node carrying the locals ``names`` while ``pred`` holds:
    ``advance(locals)`` captures one iteration from the locals (name -> value) it is given and
    returns the locals after it and the next test. The locals (or ``state``, when given: the
    values the loop starts from by name) then hold the node's results."""
    state = frame.locals if state is None else state
    init = [state[name] for name in names]
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
        state[name] = unflatten(structure, results[position:position + len(found)])
        position += len(found)


__all__ = ["build_while", "carried_names", "form_while", "is_graph_condition", "loop_shape",
           "next_instruction", "run_to"]
