"""``for <name> in range(a, b)`` in ordinary Python, captured as one ``fori_loop`` node.

Unrolled, a time loop (``for t in range(T): u[1:-1] = ...``) makes capture time and the graph
grow with ``T``, and a new ``T`` is a new capture. Here ``range(...)`` followed by a ``for``
statement is held back (``LazyRange``: its bounds are not read, so not guarded, yet); at its
``GET_ITER`` the loop is captured once into a body subgraph when:

* the statement is a plain ``for``: its target a local, nothing in the body leaves the loop
  (``break``, ``return``, ``raise``, ``yield``, ``try``/``with``, stores to cells or globals);
* the range has step 1 and at least ``config.for_loop_min_trips`` iterations now, or a bound
  that changes with an outer rolled loop's index (``for j in range(i, n)``: it cannot unroll
  inside that body), whose range may then be empty for some outer iterations (``range(i)``
  at ``i = 0``): the node runs no iteration there, and an array it rebinds is marked as
  possibly its initial one (``_zero_trips_alias``);
* the body can be captured whole with the index unknown: any use that needs the index's value
  (``if i == 0``) refuses; ``x[i]`` is an index the graph computes, and a slice
  bounded by it (``A[i, :i] @ A[:i, i:]``, ``x[i + 1:]``) has a shape that is an expression
  of the index over the range (``ops.loop_index``: decided only where every iteration agrees);
* the locals it carries (stored in the body and read later, and every local array it reads,
  which it may write in place) keep dtype, shape and structure; an array written in place
  stays the same object (the result is written into it, as the loop would have), an array
  rebound is one computed in the iteration, never an alias of another one;
* nothing outside changes (the checks of ``control_flow.sub_capture``).

The bounds become values of the node: a Python int argument not read elsewhere is a graph input
(guarded on its type only), so ``T = 20`` and ``T = 2000`` run the same entry; so is a symbolic
size (``range(n)`` with ``n = A.shape[0]``), computed from the input's shape per call. When the loop
variable is read after the loop, the bounds are specialised instead and it gets its last value.

A loop that fails a check after its capture started raises ``RollRefused``: the whole frame is
captured again with that loop unrolled (``compile_frame``), so every state the failed attempt
touched is thrown away and the result is exactly today's unrolled loop (or its graph break).
``ctx.loop_notes`` says which loops went in-graph and why the others did not (``explain``).
"""

from __future__ import annotations

from npdynamo import config
from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR_LIKE, PY
from npdynamo.capture.bytecode.liveness import _reads_writes, live_locals
from npdynamo.capture.errors import CaptureUnsupported, RollRefused, UserCodeRaises
from npdynamo.capture.flow import higher_order as cf
from npdynamo.capture.flow.assertions import assert_blocks
from npdynamo.capture.flow.carried_views import remake_views, root_of, views_kept, views_of_carried
from npdynamo.capture.flow.for_targets import Target, store_target, targets, var_text
from npdynamo.capture.flow.if_statements import JUMPS_BACK, LEAVING
from npdynamo.capture.guards import GuardKind, NonEmptyRange, SourceTuple
from npdynamo.capture.mixed_scalars import float_like, widen_key, widened
from npdynamo.capture.side_effects import write_array
from npdynamo.capture.values import (
    DELETED,
    NULL,
    ArrayValue,
    Const,
    GuardedConst,
    MixedScalarValue,
    ScalarInputValue,
    SizeValue,
    Value,
)
from npdynamo.ops.higher_order import FORI_LOOP
from npdynamo.ops.loop_index import mentions_index
from npdynamo.ops.meta import ScalarMeta
from npdynamo.ops.scalar_ops import SCALAR_OPS
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision, SymInt, compare, free_symbols
from npdynamo.ops.symbolic_code import symbol_name

SCALAR_SUB = SCALAR_OPS["py_sub"]


class LazyRange(GuardedConst):
    """``range(...)`` about to be iterated by a ``for`` statement. Any read of ``value`` reads
    (and guards) its arguments, as ``range`` itself does; the loop formation reads them only as
    far as the loop needs."""

    def __init__(self, args: list[Value], hints: list[int]) -> None:
        super().__init__(range(*hints), None, lambda: [a.value for a in args])
        self.args = args
        self.hints = hints

    def item(self, frame, index: Value) -> Value:
        """The loop variable of the iteration at ``index`` (recorded in ``frame``)."""
        return index

    def starting_at(self, start: int) -> LazyRange:
        """The same loop from the index ``start`` on (its first iterations peeled)."""
        return LazyRange([Const(start), self.args[-1]], [start, self.hints[-1]])

    def unformed(self) -> Value:
        """What ``GET_ITER`` iterates when the loop is not formed."""
        return self

    #: may the target unpack the variable (an int cannot); locals the variable is read through
    unpacks = False
    reads: tuple[str, ...] = ()


def iterated_next(frame, unpack: bool = False) -> tuple | None:
    """The plain ``for`` statement (``for_shape``) that iterates the value just made, if any."""
    return for_shape(frame, _after(frame, frame.ip, "GET_ITER"), unpack)


def lazy_range(frame, args: list[Value]) -> LazyRange | None:
    """A ``LazyRange`` for ``range(*args)`` when a ``for`` statement iterates it at once and
    the loop might be formed; None: ``range`` as always."""
    if not config.capture_for_loops or not 1 <= len(args) <= 3:
        return None
    if not all(isinstance(a, Const) for a in args):
        return None
    hints = [a._value if isinstance(a, GuardedConst) else a.value for a in args]
    if any(type(h) is not int for h in hints) or (len(hints) == 3 and hints[2] not in (1, -1)):
        return None
    if not iterated_next(frame):
        return None
    return LazyRange(args, hints)


def _after(frame, index: int, name: str) -> int | None:
    """The index after the instruction ``name`` found first from ``index`` (labels skipped)."""
    instrs = frame.instrs
    while index < len(instrs) and not isinstance(instrs[index], bc.Instr):
        index += 1
    if index < len(instrs) and instrs[index].name == name:
        return index + 1
    return None


def for_shape(frame, start: int | None, unpack: bool = False) -> tuple | None:
    """(loop head, body start, exit, loop variable: a ``Target``) of a plain ``for`` statement
    whose ``FOR_ITER`` comes next from ``start``; None when it is something else (a
    comprehension, a target that is not a local or, unless ``unpack``, a tuple of locals, a
    body that can leave the loop)."""
    if start is None or frame.code.co_flags & CO_GENERATOR_LIKE:
        return None
    instrs, labels = frame.instrs, frame.labels
    body = _after(frame, start, "FOR_ITER")
    if body is None:
        return None
    if (target := store_target(instrs, body, unpack)) is None:
        return None
    exit_index = labels[instrs[body - 1].arg]
    last = exit_index - 1
    while not isinstance(instrs[last], bc.Instr):
        last -= 1
    if instrs[last].name not in JUMPS_BACK:
        return None
    head = labels[instrs[last].arg]
    if not start <= head < body:
        return None
    failing = assert_blocks(instrs, body, exit_index)  # (rerun in Python, never captured)
    for i in range(body, exit_index):
        ins = instrs[i]
        if isinstance(ins, (bc.TryBegin, bc.TryEnd)):
            return None
        if not isinstance(ins, bc.Instr) or i in failing:
            continue
        if ins.name in LEAVING or ins.name in ("LIST_APPEND", "SET_ADD", "MAP_ADD"):
            return None
        if isinstance(ins.arg, bc.Label) and not (
                labels[ins.arg] == head or body <= labels[ins.arg] < exit_index):
            return None  # break, or a jump out of the loop
    return head, body, exit_index, target


def form_for(frame, lazy: LazyRange) -> bool:
    """At the ``GET_ITER`` of ``for ... in <lazy>``: capture the loop as a ``fori_loop`` node
    (``frame`` then continues after it) and return True; False when the loop stays unrolled
    for a reason known before trying; ``RollRefused`` when the attempt failed."""
    ctx = frame.ctx
    shape = for_shape(frame, frame.ip, lazy.unpacks)
    if shape is None or ctx.differentiating:  # a differentiated loop stays the tape's
        return False
    key = (frame.code, shape[1])
    if key in ctx.unrolled_loops:
        return False
    trips = len(lazy._value)
    # a trip count that changes with an outer loop's index (range(i)) cannot unroll inside
    # that loop's body: forming it is the only way to keep the outer loop, whatever it is now
    varying = any(mentions_index(a.expr) for a in lazy.args if isinstance(
        a, (ScalarInputValue, SizeValue)))
    if trips < max(config.for_loop_min_trips, 1) and not varying:
        cf.note_loop(frame, f"unrolled: {trips} iterations, fewer than "
                     f"config.for_loop_min_trips ({config.for_loop_min_trips})")
        return False
    peels = peeled(ctx, key)
    try:
        for _ in range(peels):
            lazy = _peel_first(frame, lazy, *shape)
            trips -= 1
        bounds = _form(frame, lazy, *shape)
    except (CaptureUnsupported, UserCodeRaises, SymbolicDecision) as exc:
        # (a SymbolicDecision: a size of the index compared outside an op's rule)
        why = exc.reason if isinstance(exc, CaptureUnsupported) else str(exc) if isinstance(
            exc, SymbolicDecision) else f"the body raises {type(exc.error).__name__}: {exc.error}"
        if getattr(exc, "peelable", False):
            # a range empty for no iteration of the outer loops has a first iteration to peel
            if peels < MAX_PEELS and _constant_start(lazy) and (
                    not varying or getattr(lazy, "may_be_empty", True) is False):
                raise RollRefused(peel_key(key, peels + 1), f"{cf.loop_place(frame)}: "
                                  f"{ITERATIONS[peels]} before the loop: {why}") from exc
            outer = _outer_to_peel(ctx, lazy) if varying else None
            if outer is not None:
                raise RollRefused(peel_key(outer, 1), f"{outer_place(ctx, outer)}: its first "
                                  "iteration runs before the loop, where the loop at "
                                  f"{cf.loop_place(frame)} runs no iteration ({why})") from exc
        raise RollRefused(key, f"{cf.loop_place(frame)}: unrolled: {why}") from exc
    cf.note_loop(frame, f"in the graph as one fori_loop ({trips} iterations now; {bounds})")
    return True


#: the key's tag of a loop whose first iterations are captured before the node (``_peel_first``)
PEEL = "peel"
#: at most this many: ``s = 0.0`` accumulated in ``for j in range(i)`` inside ``for i in
#: range(n)`` stays a Python float through the outer loop's first iteration (the inner range
#: is empty there) and becomes an ``np.float64`` in its second
MAX_PEELS = 2
ITERATIONS = ("its first iteration runs", "its second iteration runs too")


def peel_key(key: tuple, count: int) -> tuple:
    """The key (among ``ctx.unrolled_loops``) saying the loop ``key`` runs its first ``count``
    iterations before its node."""
    return (PEEL, count, *key)


def peeled(ctx, key: tuple) -> int:
    """How many first iterations of the loop ``key`` run before its node."""
    return max((n for n in range(1, MAX_PEELS + 1) if peel_key(key, n) in ctx.unrolled_loops),
               default=0)


def _outer_to_peel(ctx, lazy: LazyRange) -> tuple | None:
    """The key of the outer loop whose index bounds ``lazy`` (``for k in range(i)`` inside
    ``for i in range(n)``), when the range may be empty for some of its iterations and that
    loop's first iteration can run before it (a constant start, not peeled yet): peeled, its
    other iterations may give this range an iteration always (``range(i)`` for ``i >= 1``),
    so that a Python number this loop turns into a NumPy scalar has one kind in them."""
    if getattr(lazy, "may_be_empty", False) is not True:
        return None
    loops = ctx.__dict__.get("index_loops", {})
    names = set()
    for a in lazy.args:
        if isinstance(a, (ScalarInputValue, SizeValue)) and a.expr is not None:
            names |= free_symbols(a.expr)
    for name in sorted(names):
        key, constant_start = loops.get(name, (None, False))
        if key is not None and constant_start and not peeled(ctx, key):
            return key
    return None


def outer_place(ctx, key: tuple) -> str:
    """The line of the ``for`` statement whose loop has ``key`` (code, body start)."""
    code, body = key
    return ctx.__dict__.get("loop_places", {}).get(key, f"line {code.co_firstlineno}")


def _constant_start(lazy: LazyRange) -> bool:
    """``range(b)`` or ``range(a, b)`` with ``a`` a number known now (not a size or input)."""
    return len(lazy.args) == 1 or len(lazy.args) == 2 and isinstance(lazy.args[0], Const) and (
        not isinstance(lazy.args[0], (ScalarInputValue, SizeValue)))


def _peel_first(frame, lazy: LazyRange, head: int, body: int, exit_index: int,
                var: Target) -> LazyRange:
    """Run the first iteration of ``for var in range(a, b)`` (``a`` a constant) inline, as the
    unrolled loop would, and give ``range(a + 1, b)`` for the node: a local that starts as a
    Python number and becomes a NumPy scalar in the first iteration (``crc = 0xFFFF``,
    ``crc ^= data[i] << 8``) then keeps its kind, as Python computes it. The node guards the
    rest non-empty, so the peeled iteration is one the range has; a body that cannot run
    inline (a break in it) unrolls the loop."""
    first = lazy.args[0].value if len(lazy.args) == 2 else 0
    step = cf.sub_frame(frame, body, head)
    step.push(lazy.item(step, Const(first)))
    try:
        step.run()
    except CaptureUnsupported as exc:
        raise frame.unsupported(f"its first iteration cannot run inline: {exc.reason}") from exc
    if step.stack or step.return_value is not None:
        raise frame.unsupported("the loop body does not end at the loop's head")
    frame.locals = step.locals
    return lazy.starting_at(first + 1)


def _carried_names(frame, head: int, body: int, exit_index: int, stores: tuple[str, ...],
                   reads: tuple[str, ...]) -> list[str]:
    """Locals the body stores that a later iteration or the code after the loop reads, then
    the local arrays it reads, or ``reads`` (it may write into them in place)."""
    stored: dict[str, None] = {}
    read = dict.fromkeys(reads)
    for i in range(body, exit_index):
        ins = frame.instrs[i]
        if isinstance(ins, bc.Instr):
            reads, writes = _reads_writes(ins)
            read.update(dict.fromkeys(reads))
            stored.update(dict.fromkeys(writes))
    live = live_locals(frame.code, head)
    if live is None:
        raise frame.unsupported("the function reads its locals implicitly (locals(), eval...)")
    carried = []
    for name in stored:
        if name in stores or name not in live:
            continue  # the index, or a temporary of one iteration
        if frame.locals.get(name, DELETED) is DELETED:
            raise frame.unsupported(
                f"{name} is first assigned inside the loop but read after it or in a later "
                "iteration")
        carried.append(name)
    carried += [name for name in read if name not in stored and name not in stores
                and isinstance(frame.locals.get(name), ArrayValue)]
    return carried


def _bound(ctx, value: Value, dynamic: bool) -> int | SymInt | ScalarInputValue:
    """A range bound as the node takes it: a graph scalar read from outside or a symbolic size
    (``range(n)`` with ``n = A.shape[0]``) when it may stay one, else its value (read, so
    guarded, as ``range`` would)."""
    if isinstance(value, SizeValue) and dynamic:
        return value.expr
    if dynamic and isinstance(value, ScalarInputValue) and value.expr is not None and (
            value.source is None):  # an outer loop's index, or computed from it: range(i, n)
        return value
    if isinstance(value, ScalarInputValue) and not isinstance(value, cf.LoopScalarValue):
        if dynamic and value.source is not None and value.node.meta.get(
                "val") == ScalarMeta(int):
            return value
    elif (dynamic and type(value) is GuardedConst and value._install_guard is not None
          and value.source is not None and ctx.dynamic is not False):
        # an int from outside nobody read yet: a graph input, so a new value is no new capture
        inputs = ctx.__dict__.setdefault("loop_bound_inputs", {})  # one per source
        if value.source not in inputs:
            ctx.guard(value.source, GuardKind.TYPE, int)
            node = ctx.add_scalar_placeholder(value._value, value.source)
            inputs[value.source] = ScalarInputValue(
                value._value, value.source, value._install_guard, node)
        return inputs[value.source]
    return value.value


def _trip_symbol(ctx, value: ScalarInputValue) -> None:
    """An int argument that is a loop's upper bound is also a size symbol (its value read per
    call, as an input's shape is): the index's last value is an expression of it, so slices
    the index bounds compare with the arrays' sizes through guards (``n <= A.shape[0]``)
    instead of refusing; ``n - 1 - i`` in the body is a size too. The symbol assumes >= 1
    (the range is not empty), so a trip count of 1 needs no new entry; a capture at a value
    below 2 makes none (a symbol's hint is >= 2)."""
    node = value.node
    if value.expr is None and node.op == "placeholder" and node.graph is ctx.root_graph and (
            type(value._value) is int and value._value >= 2):
        value.expr = ctx.symbols.new(value._value, source=value.source.short(), lower=1)
        node.meta["size_symbol"] = symbol_name(value.expr)  # read from the value (fx.sizes)
        node.meta["size_expr"] = value.expr


def _guard_nonempty(ctx, lower, upper, var: str) -> bool:
    """Bounds that are graph inputs: the entry serves only non-empty ranges, so the loop's
    results are always computed by an iteration (never its initial arrays, which a later
    write would have to see). An empty range is another entry, where the loop unrolls.

    Returns True when the range may be empty for some iterations of an outer loop
    (``for j in range(i)`` from ``i = 0``): no guard can say so once per call, so the loop
    runs no iteration there and ``_zero_trip_safe`` checks its results allow that."""
    sizes = [b.expr if isinstance(b, ScalarInputValue) else b for b in (lower, upper)]
    if None not in sizes and any(isinstance(b, SymInt) for b in sizes):
        # sizes (an outer loop's index among them): decided for every iteration, or a guard
        with FactRecorder() as trial:  # kept only when decided: no guard for an undecided end
            try:
                nonempty = compare(sizes[1], ">", sizes[0])
            except SymbolicDecision:
                if not any(mentions_index(b) for b in sizes):
                    raise
                return True  # empty for some outer iterations only
        for fact in trial.facts:
            ctx.facts.add(fact)
        if not nonempty:
            raise ctx.unsupported(f"the range of the loop over {var} is empty")
        return False
    given = [b for b in (lower, upper) if isinstance(b, ScalarInputValue)]
    if given:
        text = ", ".join(b.source.short() if isinstance(b, ScalarInputValue) else str(b)
                         for b in (lower, upper))
        spec = NonEmptyRange(*(None if isinstance(b, ScalarInputValue) else b
                               for b in (lower, upper)), f"range({text}) of the loop over {var}")
        ctx.guard(SourceTuple(tuple(b.source for b in given)), GuardKind.NONEMPTY_RANGE, spec)
    return False


def _form(frame, lazy: LazyRange, head: int, body: int, exit_index: int, var: Target) -> str:
    """Capture the loop into one node; returns what its bounds are, in words."""
    ctx = frame.ctx
    stores, var = targets(var), var_text(var)  # (a range's target is one local: ``var``)
    names = _carried_names(frame, head, body, exit_index, stores, lazy.reads)
    views = views_of_carried(frame, names)
    names = [name for name in names if name not in views]
    after = live_locals(frame.code, exit_index)
    var_read_after = after is None or any(name in after for name in stores)
    if var_read_after and type(lazy) is not LazyRange:
        raise frame.unsupported(f"{var} is read after the loop")
    args = lazy.args if len(lazy.args) > 1 else [Const(0), *lazy.args]
    lower, upper = (_bound(ctx, a, not var_read_after) for a in args[:2])
    reversed_from = None
    if len(args) == 3 and args[2].value == -1:  # (reading the step guards it, as range does)
        lower, upper, reversed_from = _reversed(frame, lower, upper)
    # (a bound from an outer index is kept only when the variable is not read after the
    # loop: so a range that may be empty never has to leave it unbound)
    may_be_empty = lazy.may_be_empty = _guard_nonempty(ctx, lower, upper, var)
    key = (frame.code, body)
    ctx.__dict__.setdefault("loop_places", {})[key] = cf.loop_place(frame)
    if isinstance(upper, ScalarInputValue):
        _trip_symbol(ctx, upper)
    init = [widened(frame, frame.locals[name]) if widen_key(*key, name) in ctx.unrolled_loops
            else frame.locals[name] for name in names]
    parts = [cf.flatten(frame, v, f"the loop variable {n}") for n, v in zip(names, init)]
    leaves = [leaf for found, _s in parts for leaf in found]
    start_hint = lazy.hints[0] if len(lazy.hints) > 1 else 0

    def run(sub):
        node = sub.placeholder("i", ScalarMeta(int))
        index = cf.LoopScalarValue(lower if reversed_from is not None else start_hint, node,
                                   ctx, f"the loop variable {var}")
        index.expr = cf.index_size(ctx, node, lower, upper)
        if "size_symbol" in node.meta:  # which loop's index it is (``_outer_to_peel``)
            ctx.__dict__.setdefault("index_loops", {})[node.meta["size_symbol"]] = (
                key, _constant_start(lazy))
        if reversed_from is not None:
            index = _counting_down(ctx, index, reversed_from, var)
        inside = cf.sub_inputs(sub, leaves)
        placed = {id(v): v.node for v in inside if isinstance(v, ArrayValue)}
        frame_body = cf.sub_frame(frame, body, head)
        position = 0
        for name, (found, structure) in zip(names, parts):
            mine = inside[position:position + len(found)]
            frame_body.locals[name] = cf.unflatten(structure, mine)
            position += len(found)
        made = remake_views(ctx, frame, frame_body.locals, views)
        frame_body.push(lazy.item(frame_body, index))
        frame_body.run()
        if frame_body.stack or frame_body.return_value is not None:
            raise frame.unsupported("the loop body does not end at the loop's head")
        views_kept(frame, frame_body.locals, views, made)
        return frame_body.locals, inside, placed

    roots = [*frame.locals.values(), *frame.cells.values()]
    sub, (end, inside, placed) = cf.sub_capture(frame, "fori_loop", "body", run, roots,
                                                "the loop body")
    _check_widened(frame, key, names, init, end)
    out_leaves, same = _outputs(frame, sub, names, init, parts, inside, placed, end)
    node_args = (lower, upper, sub.finish(out_leaves), cf.leaf_values(leaves),
                 cf.extras_of(sub))
    metas = cf.infer_results(frame, FORI_LOOP, node_args)
    before = set(ctx.loop_aliased)
    hints = [cf.leaf_hint(v) for v in leaves]
    results = cf.record_node(frame, FORI_LOOP, node_args, metas, hints,
                             f"a number the loop over {var} computes", (sub,))
    # The range is not empty (known, or guarded), and a rebound array is one an iteration
    # computed: no result is an input array or a view of one, as in the loop itself, so later
    # in-place writes into them or into the inputs need not break. (A range empty for some
    # outer iterations: only its rebound arrays stay marked.)
    for key in set(ctx.loop_aliased) - before:
        del ctx.loop_aliased[key]
    if may_be_empty:
        _zero_trips_alias(ctx, names, parts, same, results)
    position = 0
    for name, value, (found, structure) in zip(names, init, parts):
        mine = results[position:position + len(found)]
        position += len(found)
        if name not in same:
            frame.locals[name] = cf.unflatten(structure, mine)
        elif same[name]:
            write_array(ctx, value, mine[0])  # the loop wrote into it: so does the graph
    if var_read_after:  # the range is not empty
        frame.locals[var] = Const(upper - 1 if reversed_from is None else lower)
    if PY >= (3, 12):  # the exit's END_FOR (3.13: and POP_TOP) pops the iterator and one more
        frame.push(NULL)
        frame.push(NULL)
    frame.ip = exit_index
    if any(isinstance(b, ScalarInputValue) and b.source is None for b in (lower, upper)):
        return "a bound is computed from an outer loop's index"
    if any(isinstance(b, ScalarInputValue) for b in (lower, upper)):
        return "the bounds are graph inputs: a new trip count reuses the graph"
    if any(isinstance(b, SymInt) for b in (lower, upper)):
        return "the bounds are symbolic sizes: a new size reuses the graph"
    return ("the bounds are constants: " + (
        f"{var} is read after the loop" if var_read_after else "not from an int argument"))


def _check_widened(frame, key: tuple, names: list[str], init: list[Value], end: dict) -> None:
    """A local that starts as one kind of float (``best = 0.0``) and that the body makes a float
    or ``np.float64`` as the data decides (``best = max(best, h)``): the frame is captured
    again with the loop carrying it so from the start (``mixed_scalars``)."""
    for name, value in zip(names, init):
        if isinstance(end.get(name), MixedScalarValue) and not isinstance(
                value, MixedScalarValue) and float_like(value):
            raise RollRefused(widen_key(*key, name), f"{cf.loop_place(frame)}: carries {name} as "
                              "a float or numpy.float64, as the data decides")


def _reversed(frame, start, stop) -> tuple[int, int, int]:
    """``range(start, stop, -1)`` as the ascending range of the node, ``(stop + 1, start + 1)``,
    and the constant ``start + stop + 1`` the loop variable is that range's index subtracted
    from. Constant bounds only (a bound read per call would need the sum in the graph: such a
    loop unrolls)."""
    if type(start) is not int or type(stop) is not int:
        raise frame.unsupported("a reversed range whose bounds are not constants")
    return stop + 1, start + 1, start + stop + 1


def _counting_down(ctx, index: cf.LoopScalarValue, top: int, var: str) -> ScalarInputValue:
    """``top - index``: the loop variable of a reversed range, a graph int whose size
    expression (so the slices it bounds) follows the index's, and whose value Python may not
    read (it changes per iteration)."""
    node = ctx.call_op(SCALAR_SUB, (top, index), {}).node
    value = cf.LoopScalarValue(top - index._value, node, ctx, f"the loop variable {var}")
    value.expr = top - index.expr
    node.meta["size_expr"] = value.expr
    return value


def _zero_trips_alias(ctx, names: list[str], parts: list, same: dict,
                      results: list[Value]) -> None:
    """A loop whose range may be empty (``range(i)`` at ``i = 0``) leaves a rebound array as
    it was: then the name holds its initial array itself (a view of another one, perhaps),
    which the result node does not know. As for ``npdynamo.fori_loop``, an in-place write later
    into either, or into what the initial array views, is a graph break
    (``side_effects.write_array``). NumPy scalars and Python numbers cannot be written into;
    arrays the body writes in place are the same object whether it runs or not."""
    position = 0
    for name, (found, _structure) in zip(names, parts):
        mine = results[position:position + len(found)]
        position += len(found)
        if name in same:
            continue
        for before, after in zip(found, mine):
            if not isinstance(before, ArrayValue) or before.meta.scalar:
                continue
            for value in (before, after):
                while isinstance(value, ArrayValue):
                    ctx.loop_aliased[id(value)] = value
                    value = value.base


def _outputs(frame, sub, names, init, parts, inside, placed, end) -> tuple[list, dict]:
    """What the body returns per carried leaf, and ``same``: name -> written, for the arrays
    the body kept under their name (unchanged, or written in place: ``written`` True)."""
    out_leaves, same, kept = [], {}, set()
    position = 0
    for name, value, (found, structure) in zip(names, init, parts):
        mine = inside[position:position + len(found)]
        position += len(found)
        now = end.get(name, DELETED)
        if structure is None and isinstance(value, ArrayValue) and now is mine[0]:
            same[name] = now.node is not placed[id(now)]
            kept.add(id(now))
            out_leaves.append(now)
            continue
        try:
            got = cf.same_kinds(
                frame, structure, found, now, f"the value of {name} after an iteration",
                f"the loop changes {name} from {{want}} to {{got}}; a loop's variables must keep "
                "their structure, dtype and shape")
        except CaptureUnsupported as exc:
            # a Python number that one iteration turns into another kind: running the first
            # iteration before the loop may give the kind the rest keeps (``_peel_first``)
            exc.peelable = any(not isinstance(leaf, ArrayValue) for leaf in found)
            raise
        for leaf in got:
            if isinstance(leaf, ArrayValue) and (
                    leaf.node.graph is not sub.graph or leaf.node.op == "placeholder"
                    or leaf.base is not None):
                raise frame.unsupported(
                    f"the loop binds {name} to an array it did not compute in the iteration (an "
                    "alias of another variable or a view), whose identity a graph loses")
        out_leaves += got
    for value in inside:
        if isinstance(value, ArrayValue) and value.node is not placed[id(value)] and (
                id(value) not in kept):
            raise frame.unsupported("the loop writes into an array in place and rebinds its name")
    _check_no_alias(frame, names, init, parts, same, sub)
    return out_leaves, same


def _check_no_alias(frame, names: list[str], init: list[Value], parts: list, same: dict,
                    sub) -> None:
    """An array written in place must be the only way the body sees its memory: another
    variable or an outer value sharing it would not see the writes inside the subgraph."""
    for name, value in zip(names, init):
        if not same.get(name):
            continue
        root = root_of(value)
        others = [leaf for n, (found, _s) in zip(names, parts) if n != name for leaf in found]
        others += [v for v, _node in sub.watched]
        for other in others:
            if isinstance(other, ArrayValue) and root_of(other) is root:
                raise frame.unsupported(
                    f"the loop writes into {name} in place while another variable or value "
                    "shares its memory")


__all__ = ["LazyRange", "for_shape", "form_for", "iterated_next", "lazy_range"]
