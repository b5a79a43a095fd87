"""Graph breaks: re-trace up to the unsupported instruction and build the broken frame's entry.

The first trace stopped at an instruction a graph cannot hold (its position in the root frame is
on the ``CaptureUnsupported``). Re-tracing from the top with that position marked as the break
point gives the translator's exact state there: the graph of everything before it, the stack
(NULL slots included) and the bound locals and cells. From that state the entry gets:

* a *prefix* function (generated Python): call the compiled graph, rebuild the live values;
* the *break code* (``bytecode/break_code.py``): prefix, the instruction natively, then a
  resume function — one per way out of the instruction (a branch has two).

A user function called natively at the break goes through ``npdynamo.compile`` so it is captured
as its own frame, as a PEP 523 hook would do.
"""

from __future__ import annotations

import dis
import io
import types

from npdynamo import logs
from npdynamo.capture import bytecode as bc
from npdynamo.capture.breaks.native_tail import native_stops
from npdynamo.capture.breaks.reasons import GraphBreakReason
from npdynamo.capture.breaks.resume import CompileSession, TailCall, finish
from npdynamo.capture.bytecode import generate as gen
from npdynamo.capture.bytecode.break_code import BreakPlan, Continuation, break_code
from npdynamo.capture.bytecode.liveness import hand_over, live_locals
from npdynamo.capture.calls import class_attribute
from npdynamo.capture.entry import (
    CompiledEntry,
    GraphFailed,
    finish_graph,
    generated_function,
    python_runner,
)
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.hooks.dispatch import mark_generated
from npdynamo.capture.hooks.region import is_library_file
from npdynamo.capture.rebuild import ValueRebuilder
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.translator import Frame, ReachedBreak, root_frame
from npdynamo.capture.values import (
    NULL,
    BoundMethodValue,
    CellValue,
    ComprehensionSave,
    DictValue,
    FunctionValue,
    ListValue,
    NullValue,
    SetValue,
    UserObjectValue,
    Value,
)
from npdynamo.generated import define

#: Instructions whose result may be a NULL pair (unknown without running them): never broken at.
MAYBE_NULL = {"LOAD_GLOBAL", "LOAD_METHOD", "LOAD_SUPER_ATTR", "LOAD_ATTR"}
#: Instructions a break cannot be placed at (their continuation is not a plain fall-through).
NOT_BREAKABLE = {
    "SEND",
    "YIELD_VALUE",
    "END_FOR",
    "LOAD_FAST_AND_CLEAR",
    "RETURN_GENERATOR",
}
CALLS = {"CALL", "CALL_KW", "CALL_FUNCTION_EX"}
BOOL_MAKERS = {"TO_BOOL", "COMPARE_OP", "CONTAINS_OP", "IS_OP"}


#: Instructions of generated code (broken frames, resume functions: each a whole copy of the
#: function) one function's graph breaks may cost; past it a break's frame runs on natively to
#: its end. About 2 s of the bytecode library's work: a 100-instruction function can break about
#: 200 times, a 4,000-instruction test method (a long list of asserts, each a break) 5 times.
REGENERATION_BUDGET = 20_000


class CannotBreak(Exception):
    """No graph break is possible here: the frame runs in Python."""


def build_break_entry(
    first: CaptureContext,
    frame_args: tuple,
    exc: CaptureUnsupported,
    reason: GraphBreakReason,
    context: CompileSession,
) -> CompiledEntry:
    """The entry of a frame whose first capture (``first``) stopped at ``exc``."""
    fn, cells_as_argument = first.fn, first.cells_as_argument
    if exc.root_position is None:
        raise CannotBreak("the function's arguments themselves cannot be captured")
    code = fn.__code__
    instrs = gen.decoded_instructions(code)
    index, visit = exc.root_position
    ins = instrs[index]
    _check_breakable(ins)
    start = index
    if ins.name in BOOL_MAKERS and _is_conditional_jump(instrs, index + 1):
        # the bool goes straight into a jump (3.13: COMPARE_OP bool(>), TO_BOOL): run both
        # natively, so the resume functions are the jump's two sides, not one per bool value
        index += 1
        ins = instrs[index]
    if ins.name == "CALL":  # KW_NAMES / PRECALL belong to the call: run them natively too
        while (
            start > 0
            and isinstance(instrs[start - 1], bc.Instr)
            and instrs[start - 1].name in ("KW_NAMES", "PRECALL")
        ):
            start -= 1
    ctx = CaptureContext(
        fn,
        break_at=(start, visit),
        cells_as_argument=cells_as_argument,
        opaque_iterators=first.opaque_iterators,
        dynamic=first.dynamic,
        unrolled_loops=first.unrolled_loops,
    )
    try:
        root_frame(ctx, frame_args).run()
    except ReachedBreak as reached:
        frame = reached.frame
    else:
        raise CannotBreak("the re-trace did not reach the break point")
    finally:
        first.steps += ctx.steps  # the entry's instructions stepped count the re-trace too
    # a 3.12+ inlined comprehension's saved outer binding goes back on the stack as it was:
    # the value, or NULL for an unbound name (the STORE_FAST after the loop restores either)
    stack = [v.saved if isinstance(v, ComprehensionSave) else v for v in frame.stack]
    kinds = tuple("N" if isinstance(v, NullValue) else "V" for v in stack)
    # generated names (a resume function's stack arguments) are dead after its prologue
    local_names = tuple(
        n
        for n, v in frame.locals.items()
        if not isinstance(v, NullValue) and not n.startswith("___")
    )
    # the order of the original code's locals, the same in the function and its resume functions
    # (their keys, hence the resume functions shared by every iteration, depend on it)
    original = gen.original_position(code, index)
    order = {name: i for i, name in enumerate((original or (code,))[0].co_varnames)}
    local_names = tuple(sorted(local_names, key=lambda n: order.get(n, len(order))))
    # only the locals the rest of the code can read: a dead one (a loop counter nobody reads)
    # would be guarded by value in the resume function, one entry per iteration
    live = _live_at(code, start)
    kept = frozenset(n for n in local_names if _outlives_break(frame.locals[n]))
    if live is not None:
        local_names = tuple(n for n in local_names if n in live or n in kept)
    cell_names = tuple(
        n for n, c in frame.cells.items() if isinstance(c, CellValue) and c.contents is not None
    )
    rebuilder = ValueRebuilder(ctx, _frame_cell_positions(frame, code))
    if ins.name in CALLS:
        _compile_callee(stack, ins, context)
    exprs = [rebuilder.expr(frame.locals[n]) for n in local_names]
    exprs += [rebuilder.expr(frame.cells[n].contents) for n in cell_names]
    exprs += rebuilder.stack_exprs(stack)
    rebuilder.record_side_effects()  # flushed before the native instruction runs
    graph, inputs = finish_graph(ctx, frame_args, rebuilder, context)
    ctx.finish_guards()
    tail = "return (" + "".join(e + ", " for e in exprs) + ")"
    prefix, source = generated_function(
        ctx, "prefix", graph.compiled, inputs, rebuilder, tail, frame_cells=True
    )
    original_code = (original or (code,))[0]
    spent = gen.regenerated(original_code, len(gen.decoded_instructions(original_code)))
    try:
        if spent > REGENERATION_BUDGET or exc.runs_on_natively:
            # capture has cost this function enough (or a loop ran past the step limit, whose
            # resume functions would each unroll it again): the frame runs on natively after
            # the break, to its end (plain Python, exact; only slower than more graphs would be)
            stops, fallthrough, branch = (), None, None
        else:
            handed = _bound_after(ins, local_names, order)
            stops = _native_tail(code, start, index, kinds, handed, kept, context,
                                 fn.__globals__)
            fallthrough, branch = (None, None) if stops else _continuations(
                code, start, index, kinds, handed, context, fn.__globals__
            )
    except Exception as error:  # the bytecode library refused the layout: never a crash
        raise CannotBreak(f"cannot generate the resume function ({error})") from error
    plan = BreakPlan(
        code,
        tuple(ctx.arg_names),
        start,
        index,
        kinds,
        local_names,
        cell_names,
        prefix,
        fallthrough,
        branch,
        finish if not cells_as_argument else None,
        TailCall,
        stops=stops,
        unbound=tuple(
            n for n in ctx.arg_names
            if isinstance(frame.locals.get(n, NULL), NullValue) and n not in code.co_cellvars
        ),
    )
    try:
        new_code = break_code(plan)
    except Exception as error:  # the bytecode library refused the layout: never a crash
        raise CannotBreak(f"cannot generate the broken frame's code ({error})") from error
    _log_bytecode(code, new_code)
    # the region hook must not capture these frames as user functions of their own: they are
    # already run by their entries (and their hand-over expects its own driver)
    mark_generated(new_code)
    for cont in (fallthrough, branch, *(cont for _, cont in stops)):
        if cont is not None:
            mark_generated(cont.callable.code)
    python = python_runner(ctx)
    run = _runner(new_code, ctx, python, GraphFailed)
    entry = CompiledEntry(
        ctx.guards.check, run, ctx.guards, graph.graph_module, graph.compiled,
        graph_break=reason, run_source=source, python=python,
    )
    entry.notes.append(f"graph break at instruction {index} ({ins.name})")
    return entry


def _continuations(code, start, index, kinds, local_names, context, glob):
    """The resume functions after the native instruction: fall-through, and a branch's target.

    They continue the ORIGINAL code (a break inside a resume function is mapped back to it), so
    the same break met again in a later loop iteration reuses the same resume functions."""
    first, last = gen.original_position(code, start), gen.original_position(code, index)
    if first is None or last is None or first[0] is not last[0]:
        raise CannotBreak("the break is inside generated code")
    code, start, index = first[0], first[1], last[1]
    instrs = gen.decoded_instructions(code)
    ins = instrs[index]
    block = instrs[start : index + 1]
    fallthrough = branch = None
    if ins.name not in gen.TERMINAL:
        after = gen.stack_after(block, kinds, jump=False)
        key = gen.ResumeKey(code, _past_labels(instrs, index + 1), after, local_names)
        fallthrough = Continuation(context.resume_call(key, glob), after, local_names,
                                       attribute="take")
    if ins.has_jump():
        after = gen.stack_after(block, kinds, jump=True)
        target = instrs.index(ins.arg)
        if ins.name == "FOR_ITER":
            target = gen.exhausted_start(instrs, target)
        key = gen.ResumeKey(code, _past_labels(instrs, target), after, local_names)
        branch = Continuation(context.resume_call(key, glob), after, local_names,
                                  attribute="take")
    return fallthrough, branch


def _bound_after(ins, local_names: tuple[str, ...], order: dict) -> tuple[str, ...]:
    """The locals bound after the native instruction: it may delete or store one (a drop that
    may end an object Python code can see is run natively, ``opcodes.stack._drop``)."""
    if ins.name == "DELETE_FAST":
        return tuple(n for n in local_names if n != ins.arg)
    stored = {"STORE_FAST": lambda arg: (arg,), "STORE_FAST_LOAD_FAST": lambda arg: arg[:1],
              "STORE_FAST_STORE_FAST": tuple}.get(ins.name, lambda arg: ())(ins.arg)
    names = set(local_names) | {n for n in stored if isinstance(n, str)}
    return tuple(sorted(names, key=lambda n: order.get(n, len(order))))


def _native_tail(code, start, index, kinds, local_names, kept, context, glob) -> tuple:
    """``(index in code, continuation)`` of each stop of the break's native tail
    (``native_tail.py``), or ``()`` when the tail is not walked: the plain continuations serve."""
    first, last = gen.original_position(code, start), gen.original_position(code, index)
    if first is None or last is None or first[0] is not last[0]:
        return ()
    original, start_at, index_at = first[0], first[1], last[1]
    instrs = gen.decoded_instructions(original)
    ins = instrs[index_at]
    block = instrs[start_at : index_at + 1]
    starts = []
    if ins.name not in gen.TERMINAL:
        starts.append((index_at + 1, gen.stack_after(block, kinds, jump=False)))
    if ins.has_jump():
        target = instrs.index(ins.arg)
        if ins.name == "FOR_ITER":
            target = gen.exhausted_start(instrs, target)
        starts.append((target, gen.stack_after(block, kinds, jump=True)))
    stops = native_stops(original, starts, local_names, kept,
                         tuple(range(start_at, index_at + 1)))
    if not stops:
        return ()
    result = []
    for stop in stops:
        at = gen.frame_position(code, original, stop.position)
        if at is None:
            return ()
        key = gen.ResumeKey(original, stop.position, stop.stack, stop.locals)
        result.append((at, Continuation(context.resume_call(key, glob), stop.stack,
                                            stop.locals, attribute="take")))
    return tuple(result)


def _live_at(code: types.CodeType, start: int) -> frozenset[str] | None:
    """The locals live at ``start`` (the native block's first instruction), computed on the
    original code so a function and its resume functions pass the same ones; None: all."""
    original = gen.original_position(code, start)
    if original is None:
        return None
    return live_locals(*original)


#: Values whose lifetime Python code can observe (weak references, ``__del__``, cycles they
#: hold): handed to the resume function even when dead at the break, since the user's frame
#: would hold them until the name is overwritten or the frame ends. Numbers, strings and other
#: constants are not (no one can tell when they die); nor arrays (guarded by shape, a dead
#: temporary would specialise the resume function for nothing).
_LIFETIME_KINDS = (UserObjectValue, ListValue, DictValue, SetValue)


def _outlives_break(value: Value) -> bool:
    """A local dead at the break that must still be handed over (see ``_LIFETIME_KINDS``)."""
    return isinstance(value, _LIFETIME_KINDS)


def _past_labels(instrs: list, index: int) -> int:
    """One position for a resume point however it was reached (a jump lands on a label, a
    fall-through just before it; a ``while`` loop's test at the bottom falls through to the
    jump back): labels mark no try range and an unconditional jump moves no stack slot, so
    skipping them changes nothing, and each loop side gets one resume function."""
    for _ in range(len(instrs)):  # a bound: jumps could form a cycle (``while True: pass``)
        while index < len(instrs) and isinstance(instrs[index], bc.Label):
            index += 1
        ins = instrs[index] if index < len(instrs) else None
        if not (isinstance(ins, bc.Instr) and ins.name in ("JUMP_FORWARD", "JUMP_BACKWARD")):
            break
        index = instrs.index(ins.arg)
    return index


def _is_conditional_jump(instrs: list, index: int) -> bool:
    ins = instrs[index] if index < len(instrs) else None
    return isinstance(ins, bc.Instr) and "POP_JUMP" in ins.name and "_IF_" in ins.name


def _frame_cell_positions(frame: Frame, code) -> dict[int, int]:
    """Where each of the frame's cells sits in the tuple the prologue hands the prefix."""
    names = gen.closure_names(code)
    return {id(frame.cells[name]): i for i, name in enumerate(names) if name in frame.cells}


def _check_breakable(ins) -> None:
    if not isinstance(ins, bc.Instr):
        raise CannotBreak("no instruction at the break point")
    if ins.name in NOT_BREAKABLE:
        raise CannotBreak(f"a graph break at {ins.name} cannot be resumed")
    if ins.name in MAYBE_NULL:
        arg = ins.arg
        method_form = ins.name == "LOAD_METHOD" or (
            isinstance(arg, tuple) and arg and arg[0] is True
        )
        if method_form or ins.name == "LOAD_SUPER_ATTR":
            raise CannotBreak(f"a graph break at {ins.name} may leave a NULL on the stack")
    if (
        ins.has_jump()
        and ins.name.startswith(("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP"))
        and "IF" not in ins.name
    ):
        raise CannotBreak("a graph break at an unconditional jump")


def _compile_callee(stack: list[Value], ins, context) -> None:
    """Replace a user function about to be called natively by its compiled wrapper."""
    nargs = ins.arg if isinstance(ins.arg, int) else 0
    extra = 1 if ins.name == "CALL_KW" else 0
    if ins.name == "CALL_FUNCTION_EX":
        nargs, extra = 1, ins.arg & 1
    below = len(stack) - nargs - extra - 2
    if below < 0:
        return
    # [NULL, callable] (3.11/3.12), [callable, NULL] (3.13) or [method, self]
    pos = below + 1 if isinstance(stack[below], NullValue) else below
    value = stack[pos]
    fn = None
    if isinstance(value, FunctionValue):
        fn = value.fn
    elif isinstance(value, BoundMethodValue) and value.func.fn is not None:
        fn = value.func.fn
    elif isinstance(value, UserObjectValue):
        call = class_attribute(value.obj, "__call__")
        if isinstance(call, types.FunctionType):  # obj(...) -> type(obj).__call__(obj, ...)
            fn = call
            value = BoundMethodValue(
                FunctionValue(call.__code__, call.__globals__, call.__name__, obj=call), value
            )
    if fn is None or (fn.__closure__ is not None and value.source is None):
        return
    if not all(name.isidentifier() for name in fn.__code__.co_varnames):
        return  # a comprehension's code (its argument is ".0"): it runs natively
    if is_library_file(fn.__code__.co_filename):
        return  # library code (json.dumps) runs natively, as the region hook leaves it
    if context.compile_callee is None:
        return  # a session that compiles no callees: it runs as plain Python
    wrapper = context.compile_callee(fn)
    if isinstance(value, BoundMethodValue):
        stack[pos] = BoundMethodValue(
            FunctionValue(fn.__code__, fn.__globals__, fn.__name__, obj=wrapper),
            value.self_value,
        )
    else:
        stack[pos] = FunctionValue(fn.__code__, fn.__globals__, fn.__name__, obj=wrapper)


def _runner(new_code: types.CodeType, ctx: CaptureContext, python, graph_failed):
    """Run the broken frame's code; if its prefix graph raises (nothing was written back yet),
    the frame reruns in Python, so the user sees exactly Python's state and exception. The
    prefix hands the frame's arguments back in the exception for that: a resume function's
    runner keeps none of them alive while the resumed code runs."""
    fn = ctx.fn
    glob, name = fn.__globals__, fn.__name__
    if not ctx.cells_as_argument:
        broken = types.FunctionType(new_code, glob, name, None, fn.__closure__)

        def run(*args):
            try:
                return broken(*args)
            except graph_failed as failed:
                rerun = failed.args  # rerun outside the handler: Python sees no GraphFailed
            return python(*rerun)

        return run
    # a resume function's broken frame: called with the cells first, run with its closure
    params = "".join(f", a{i}" for i in range(len(ctx.arg_names)))
    env = {"function": types.FunctionType, "CODE": new_code, "G": glob, "NAME": name,
           "failed": graph_failed, "python": python}
    if not new_code.co_freevars:  # the common case: no closure, one function serves every call
        env["shared"] = types.FunctionType(new_code, glob, name)
        call = f"shared({params[2:]})"
    else:
        call = f"function(CODE, G, NAME, None, C)({params[2:]})"
    source = (
        f"def run(C{params}):\n"
        "    try:\n"
        f"        return {call}\n"
        "    except failed as error:\n"
        "        rerun = error.args  # rerun outside the handler: Python sees no GraphFailed\n"
        "    return python(*rerun)\n"
    )
    run = define(source, "run", env, filename=f"<npdynamo-run-{name}>", lines=False)
    run.__code__ = hand_over(run.__code__)  # the resumed code owns its arguments
    mark_generated(run.__code__)
    if "shared" in env:
        run.shared_parts = (env["shared"], python, graph_failed)  # dispatchers inline it
    return run


def _log_bytecode(old: types.CodeType, new: types.CodeType) -> None:
    if logs.enabled("bytecode"):
        out = io.StringIO()
        dis.dis(old, file=out)
        before = out.getvalue()
        out = io.StringIO()
        dis.dis(new, file=out)
        logs.get_logger("bytecode").info(
            "Original bytecode of %s:\n%s\nTransformed:\n%s",
            old.co_qualname,
            before,
            out.getvalue(),
        )
