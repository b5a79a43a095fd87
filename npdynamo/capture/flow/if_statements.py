"""``if <array test>:`` in ordinary Python, captured as one ``cond`` node (opt-in).

With ``config.capture_if_branches`` on, an ``if`` statement whose test is a graph value and
whose branches stay inside the statement (no ``return``/``break``/``continue``/``raise``/``yield``,
no ``try``/``with``) is captured whole: each branch runs once, into its own subgraph (a
sub-capture, as for ``npdynamo.cond``), and the locals either branch assigns that are read after
the statement become the node's results. Both branches must give them the same kinds (dtype,
shape, structure), and neither may change anything outside. Otherwise the test is a graph
break as before, with the reason. CPython compiles the statement as a test jumping to the
``else`` block (or past the ``if`` block), the ``if`` block ending with a jump past the
``else`` block: the same in 3.11-3.13.
"""

from __future__ import annotations

from npdynamo import config
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE
from npdynamo.capture.bytecode.liveness import _reads_writes, live_locals
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow import higher_order as cf
from npdynamo.capture.flow.assertions import assert_blocks
from npdynamo.capture.mixed_scalars import joined
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import DELETED, ArrayValue, Value
from npdynamo.ops.higher_order import COND

FALSE_TESTS = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE"})
#: 3.12+ tests an ``if`` without ``else`` that ends a loop body by jumping into its block
TRUE_TESTS = frozenset({"POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE"})
JUMPS_BACK = frozenset({"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"})
RETURNS = frozenset({"RETURN_VALUE", "RETURN_CONST"})
#: Instructions that leave a loop body or a branch, or touch state a subgraph cannot hold.
LEAVING = frozenset({
    "RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE", "STORE_DEREF", "DELETE_DEREF", "DELETE_FAST",
    "BEFORE_WITH", "SETUP_WITH", "RAISE_VARARGS", "RERAISE", "STORE_GLOBAL", "DELETE_GLOBAL",
})


_REFUSED = "the if statement on an array condition cannot become an in-graph cond"


def form_if(frame, pred: Value, jump_index: int) -> bool:
    """Capture the ``if`` statement tested by the jump at ``jump_index`` as a ``cond`` node
    (``frame`` then continues after it). False when it is not such a statement or the option
    is off; raises the reason when it is one that cannot be captured."""
    if not config.capture_if_branches or frame.ctx.differentiating or (
            frame.code.co_flags & CO_GENERATOR_LIKE):
        return False
    shape = _if_shape(frame, jump_index)
    if shape is None:
        return False
    try:
        _form(frame, pred, *shape[:3], head=shape[3])
        cf.note_loop(frame, "in the graph as one cond")
    except CaptureUnsupported as exc:
        # (a nested if that could not be formed already says so)
        reason = exc.reason if exc.reason.startswith(_REFUSED) else f"{_REFUSED}: {exc.reason}"
        raise frame.unsupported(reason, exc.hint or "compute both sides with np.where",
                                kind="data_dependent_branch") from exc
    return True


def _last_instr(frame, index: int) -> int:
    while not isinstance(frame.instrs[index], bc.Instr):
        index -= 1
    return index


def _stays_inside(frame, start: int, end: int, head: bc.Label | None = None) -> bool:
    """Whether the instructions from ``start`` to ``end`` jump nowhere outside them, except
    back to ``head`` (the loop whose body they end: such a jump is one to the block's own
    jump back at ``end``, ``redirects``)."""
    failing = assert_blocks(frame.instrs, start, end)  # (rerun in Python, never captured)
    for i in range(start, end):
        ins = frame.instrs[i]
        if isinstance(ins, (bc.TryBegin, bc.TryEnd)):
            return False
        if not isinstance(ins, bc.Instr) or i in failing:
            continue
        if ins.name in LEAVING:
            return False
        if isinstance(ins.arg, bc.Label) and not start <= frame.labels[ins.arg] <= end and not (
                ins.arg is head and ins.name in JUMPS_BACK):
            return False
    return True


def _if_shape(frame, jump_index: int) -> tuple | None:
    """((then start, then end), (else start, else end) or None, merge, head) of the ``if``
    statement tested at ``jump_index``, or None. ``head``: the label of the loop whose body the
    statement ends (both blocks end by jumping back to it), else None."""
    jump = frame.instrs[jump_index]
    if not isinstance(jump, bc.Instr):
        return None
    if jump.name in TRUE_TESTS:
        return _jumping_into_block(frame, jump_index, jump)
    if jump.name not in FALSE_TESTS:
        return None
    target = frame.labels[jump.arg]
    if target <= jump_index:
        return None
    last = _last_instr(frame, target - 1)
    then_start = jump_index + 1
    if frame.instrs[last].name in RETURNS:
        # the statement's branches each end the function (3.12+ copies a short tail such as
        # ``return y + 1`` into both): each branch runs to its return, the cond gives the value
        if not _stays_inside(frame, then_start, last) or any(
                isinstance(ins, (bc.TryBegin, bc.TryEnd)) for ins in frame.instrs[target:]):
            return None
        return (then_start, None), (target, None), None, None
    head = None
    if frame.instrs[last].name == "JUMP_FORWARD":
        merge = frame.labels[frame.instrs[last].arg]
        branches = ((then_start, last), (target, merge))
    elif frame.instrs[last].name in JUMPS_BACK:
        # the statement ends a loop body: both blocks end with the jump back to the loop's
        # head, which the frame runs after the cond (the else block's own jump back)
        head = frame.instrs[last].arg
        merge = _block_end(frame, target, head)
        if merge is None:
            return None
        branches = ((then_start, last), (target, merge))
    else:
        merge = target
        branches = ((then_start, target), None)
    for branch in branches:
        if branch is not None and not _stays_inside(frame, *branch, head):
            return None
    return (*branches, merge, head)


def _jumping_into_block(frame, jump_index: int, jump: bc.Instr) -> tuple | None:
    """3.12+'s ``if`` without ``else`` at the end of a loop body: ``POP_JUMP_IF_TRUE block;
    JUMP_BACKWARD head; block: ...; JUMP_BACKWARD head``. The block is the true branch."""
    if not _skips_into_block(frame, jump_index):
        return None
    target = frame.labels[jump.arg]
    head = frame.instrs[_last_instr(frame, target - 1)].arg
    merge = _block_end(frame, target, head)
    if merge is None or not _stays_inside(frame, target, merge, head):
        return None
    return (target, merge), None, merge, head


def _skips_into_block(frame, index: int) -> bool:
    """Whether the instruction at ``index`` is such a test (``_jumping_into_block``): a true
    test jumping over the jump back right after it."""
    jump = frame.instrs[index]
    if not isinstance(jump, bc.Instr) or jump.name not in TRUE_TESTS:
        return False
    target = frame.labels[jump.arg]
    skip = _last_instr(frame, target - 1)
    return target > index and skip == _next_instr(frame, index + 1) and (
        frame.instrs[skip].name in JUMPS_BACK)


def _next_instr(frame, index: int) -> int:
    while index < len(frame.instrs) and not isinstance(frame.instrs[index], bc.Instr):
        index += 1
    return index


def _block_end(frame, start: int, head: bc.Label) -> int | None:
    """The jump back to ``head`` that ends the block starting at ``start``, or None: the first
    from ``start`` on that is not the jump an inner ``if`` at the end of the block skips
    (3.13 compiles ``if a: if b: x`` ending a loop body so: each test jumps over a jump back
    to the head, and those jump back before the block's own end)."""
    for i in range(start, len(frame.instrs)):
        ins = frame.instrs[i]
        if isinstance(ins, bc.Instr) and ins.name in JUMPS_BACK and ins.arg is head:
            before = _last_instr(frame, i - 1)
            if before >= start and _skips_into_block(frame, before):
                continue
            return i
    return None


def _stored(frame, start: int, end: int) -> list[str]:
    names: dict[str, None] = {}
    for i in range(start, end):
        ins = frame.instrs[i]
        if isinstance(ins, bc.Instr):
            for name in _reads_writes(ins)[1]:
                names.setdefault(name, None)
    return list(names)


def _form(frame, pred: Value, then: tuple, other: tuple | None, merge: int | None,
          head: bc.Label | None = None) -> None:
    if cf.inside_expression(frame):
        raise frame.unsupported("the if statement sits inside an expression")
    if merge is None:
        if frame.stack:  # a loop's iterator: a branch would return from inside the loop
            raise frame.unsupported("the if statement returns from inside a loop")
        _form_returning(frame, pred, then[0], other[0])
        return
    live = live_locals(frame.code, merge)
    if live is None:
        raise frame.unsupported("the function reads its locals implicitly (locals(), eval...)")
    then_names = _stored(frame, *then)
    other_names = _stored(frame, *other) if other is not None else []
    names = [n for n in dict.fromkeys([*then_names, *other_names]) if n in live]
    for name in names:
        bound_before = frame.locals.get(name, DELETED) is not DELETED
        if not bound_before and not (name in then_names and name in other_names):
            raise frame.unsupported(f"{name} is assigned in one branch only and unbound before")
    roots = [*frame.locals.values(), *frame.cells.values()]
    writable = _writable_arrays(frame, names)
    subs, outs, written = [], [], set()
    for role, branch in (("true", then), ("false", other)):
        sub, values = cf.sub_capture(
            frame, "cond", role, _runner(frame, branch, names, writable, written, head), roots,
            f"the {role} branch")
        subs.append(sub)
        outs.append(values)
    # a conditional expression (``a if c else b``): each branch leaves its value on the stack
    pushed = {len(values) - len(names) - len(writable) for values in outs}
    if pushed != {0} and (pushed != {1} or other is None):
        raise frame.unsupported("a branch does not end where the statement does")
    if pushed == {1}:
        names = [*names, "the value of the conditional expression"]
        outs = [[*v[:len(names) - 1], v[-1], *v[len(names) - 1:-1]] for v in outs]
    # arrays written in place in either branch are results too (the other branch: unchanged)
    kept = [k for k, name in enumerate(writable) if name in written]
    _check_written_alone(frame, [writable[k] for k in kept], outs, len(names))
    outs = [values[:len(names)] + [values[len(names) + k] for k in kept] for values in outs]
    arrays = [writable[k] for k in kept]
    before = set(frame.ctx.loop_aliased)
    results = emit_cond(frame, pred, names + [f"{a} (written in place)" for a in arrays], subs,
                        outs)
    if pushed == {1}:
        frame.push(results[len(names) - 1])
        names, results = names[:-1], results[:len(names) - 1] + results[len(names):]
    for name, value in zip(names, results):
        frame.locals[name] = value
    for name, value in zip(arrays, results[len(names):]):
        # the node's result is the array's new content whichever branch ran: written into the
        # same object (so its identity and its views' stay as in Python)
        target = frame.locals[name]
        for key in (id(target), id(value)):
            if key not in before:
                frame.ctx.loop_aliased.pop(key, None)
        write_array(frame.ctx, target, value)
    frame.ip = merge


def _writable_arrays(frame, names: list[str]) -> list[str]:
    """Local arrays a branch may write into in place (``D[i, j] = d`` under an ``if`` on data):
    an array that is no view and has no live view (a write inside a subgraph would have to
    re-derive them there), held by one local name only, not one of the statement's own
    results."""
    seen: dict[int, list[str]] = {}
    for name, value in frame.locals.items():
        if isinstance(value, ArrayValue):
            seen.setdefault(id(value), []).append(name)
    out = []
    for name, value in frame.locals.items():
        if (isinstance(value, ArrayValue) and name not in names and value.base is None
                and len(seen[id(value)]) == 1 and not value.meta.scalar
                and not any(ref() is not None for ref in value.derived)):
            out.append(name)
    return out


def _check_written_alone(frame, arrays: list[str], outs: list, count: int) -> None:
    """A result that is a written array itself or a view would alias it: refuse."""
    written = {id(frame.locals[name]) for name in arrays}
    for values in outs:
        for value in values[:count]:
            leaves, _structure = cf.flatten(frame, value, "a result of the if statement")
            for leaf in leaves:
                if isinstance(leaf, ArrayValue) and (leaf.base is not None
                                                     or id(leaf) in written):
                    raise frame.unsupported(
                        "a branch writes into an array in place and gives a view or alias of "
                        "an array as a result")


def _form_returning(frame, pred: Value, then_start: int, else_start: int) -> None:
    roots = [*frame.locals.values(), *frame.cells.values()]
    subs, outs = [], []
    for role, start in (("true", then_start), ("false", else_start)):
        sub, value = cf.sub_capture(frame, "cond", role, _returner(frame, start), roots,
                                 f"the {role} branch")
        subs.append(sub)
        outs.append([value])
    (frame.return_value,) = emit_cond(frame, pred, ["the returned value"], subs, outs)


def emit_cond(frame, pred: Value, names: list[str], subs: list, outs: list) -> list[Value]:
    """The cond node over both branches' values of ``names``: the values after it. A Python
    float in one branch and an ``np.float64`` in the other become a float or ``np.float64``
    that the data decides (``mixed_scalars``)."""
    for k, (first, second) in enumerate(zip(*outs)):
        both = joined(first, second)
        if both is not None:
            outs[0][k], outs[1][k] = both
    true_leaves, structures = [], []
    for name, value in zip(names, outs[0]):
        found, structure = cf.flatten(frame, value, f"{name} after the true branch")
        true_leaves += found
        structures.append((structure, len(found)))
    false_leaves = []
    position = 0
    for name, value, (structure, count) in zip(names, outs[1], structures):
        false_leaves += cf.same_kinds(
            frame, structure, true_leaves[position:position + count], value,
            f"{name} after the false branch",
            f"the branches give {name} different kinds: {{want}} and {{got}}")
        position += count
    node_args = (pred, subs[0].finish(true_leaves), subs[1].finish(false_leaves), (),
                 cf.extras_of(subs[0]), cf.extras_of(subs[1]))
    metas = cf.infer_results(frame, COND, node_args)
    results = cf.record_node(frame, COND, node_args, metas, [cf.leaf_hint(v) for v in true_leaves],
                      "a number an if statement computes", tuple(subs))
    values, position = [], 0
    for structure, count in structures:
        values.append(cf.unflatten(structure, results[position:position + count]))
        position += count
    return values


def _returner(frame, start: int):
    def run(sub: cf.SubCapture) -> Value:
        value = cf.sub_frame(frame, start, None).run()
        if value is None:
            raise frame.unsupported("a branch does not return")
        return value

    return run


def _runner(frame, branch: tuple | None, names: list[str], writable: list[str],
            written: set[str], head: bc.Label | None = None):
    """The branch's values of ``names``, then of the ``writable`` arrays (their content at its
    end: the array as it was, or what the branch wrote into it). The arrays' own values get
    their outer node back, so the other branch and the code after see them unwritten; the
    names of those written go into ``written``. ``head``: the loop whose body the statement
    ends; a jump back to it inside the branch ends the branch (the branch's own jump back is
    the same jump)."""
    def run(sub: cf.SubCapture) -> list[Value]:
        arrays = [frame.locals[name] for name in writable]
        if branch is None:  # no else block: the locals as they are
            return [frame.locals[name] for name in names] + arrays
        nodes = [a.node for a in arrays]
        body = cf.sub_frame(frame, *branch)
        if head is not None:
            body.redirects = {head: branch[1]}
        try:
            body.run()
        finally:
            ends = [a.node for a in arrays]
            for array, node in zip(arrays, nodes):
                array.node = node
        if len(body.stack) > 1 or body.return_value is not None:
            raise frame.unsupported("a branch does not end where the statement does")
        values = [body.locals.get(name, DELETED) for name in names]
        if any(v is DELETED for v in values):
            raise frame.unsupported("a branch leaves a variable unbound")
        for name, array, end, node in zip(writable, arrays, ends, nodes):
            if body.locals.get(name) is not array:
                raise frame.unsupported(f"a branch writes into {name} in place and rebinds it")
            if end is not node:
                written.add(name)
        return [*values, *(a if e is n else ArrayValue(e) for a, e, n in zip(arrays, ends, nodes)),
                *body.stack]  # (the value a conditional expression's branch leaves)

    return run
