"""Build an entry for one frame: a whole graph, else a graph break, else plain Python.

The top of the capture stage: what the frame hook's cache and a resume function call on a miss,
through the session they were made for (``CompileSession.build_entry``: ``new_session`` binds
it, and the composition root, ``npdynamo/api.py``, makes a session per ``compile()``). It runs
the translator over the whole frame; if that succeeds the entry runs the compiled graph
(``entry.finish_entry``). If the translator stops at something a graph cannot hold, the frame is
re-traced up to that instruction and the entry runs the broken frame instead
(``breaks.build_break_entry``). Where no break is possible the frame runs in Python, with the
reason recorded.
"""

from __future__ import annotations

import logging
import time
import types
from collections.abc import Callable

from npdynamo import config, logs

# The handlers of opcodes and builtins and the autodiff calls register into ``capture.registry``
# when imported; every capture needs them all.
from npdynamo.capture import (  # noqa: F401
    autodiff,
    builtin_calls,
    opcodes,
    random_calls,
)
from npdynamo.capture.breaks.broken_frame import build_break_entry
from npdynamo.capture.breaks.reasons import reason_from
from npdynamo.capture.breaks.resume import CompileSession
from npdynamo.capture.bytecode.generate import user_label
from npdynamo.capture.entry import CompiledEntry, finish_entry, python_entry
from npdynamo.capture.errors import CaptureUnsupported, RollRefused, UserCodeRaises
from npdynamo.capture.flow import errstate_blocks, higher_order  # noqa: F401
from npdynamo.capture.hooks.cache import gc_paused
from npdynamo.capture.hooks.region import is_library_file
from npdynamo.capture.rebuild import ValueRebuilder
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.translator import root_frame
from npdynamo.errors import NpdynamoError, Unsupported
from npdynamo.ops.nonzero_indices import COUNT_READ, refusing


def build_entry(
    fn: types.FunctionType,
    frame_args: tuple,
    *,
    backend: Callable,
    fullgraph: bool = False,
    context: CompileSession | None = None,
    cells_as_argument: bool = False,
    opaque_iterators: bool = False,
    dynamic: bool | None = None,
) -> CompiledEntry:
    """Capture ``fn`` for ``frame_args``; with ``fullgraph`` a break raises ``Unsupported``.

    ``context`` is the session (``new_session``); without one (a test's direct call) a session
    of its own is made. With ``opaque_iterators`` (a resume function continuing a loop that
    breaks in every iteration) the loop iterators among the arguments are stepped natively, not
    unrolled."""
    context = context or new_session(backend, fullgraph, dynamic)
    with gc_paused():
        return _build_entry(fn, frame_args, fullgraph, context, cells_as_argument,
                            opaque_iterators)


def _build_entry(fn, frame_args, fullgraph, context, cells_as_argument, opaque_iterators):
    """``build_entry`` with the garbage collector paused: a capture allocates many objects
    that live on (values, graphs, decoded bytecode), so CPython's collector would run often and
    now and then walk the user's whole heap, a third of a capture's time in a test suite's
    process. Nothing of the user's runs in between; garbage waits until the capture ends."""
    start = time.perf_counter()
    unrolled: dict[tuple, str] = {}
    steps = 0
    counts_refused: str | None = None
    while True:  # again from the top for each for loop that could not be formed
        ctx = CaptureContext(
            fn, cells_as_argument=cells_as_argument, opaque_iterators=opaque_iterators,
            dynamic=context.dynamic, unrolled_loops=unrolled,
        )
        if config.force_python:
            return python_entry(ctx, "npdynamo.config.force_python is set")
        try:
            with refusing(counts_refused):
                entry = _capture(ctx, fn, frame_args, fullgraph, context)
        except RollRefused as refused:
            unrolled[refused.key] = refused.note
            steps += ctx.steps
            continue
        if entry.runs_python and not counts_refused and _counted_nonzero(ctx):
            # Python code needed a run-time count and no break could hand it over: again,
            # with the graph breaking at the nonzero call (``ops.nonzero_indices``)
            counts_refused = COUNT_READ
            steps += ctx.steps
            continue
        break
    entry.loops = [*unrolled.values(), *ctx.loop_notes]
    entry.compile_time_s = time.perf_counter() - start
    entry.steps = steps + ctx.steps
    entry.code = fn.__code__
    _log_entry(entry)
    if context.recorder is not None:
        context.recorder(entry, fn)
    return entry


def _counted_nonzero(ctx: CaptureContext) -> bool:
    return any(getattr(n.target, "name", None) == "nonzero" for n in ctx.graph.nodes)


def _capture(ctx: CaptureContext, fn: types.FunctionType, frame_args: tuple, fullgraph: bool,
             context: CompileSession) -> CompiledEntry:
    """One capture of the frame: its graph, else a graph break, else plain Python."""
    try:
        result = root_frame(ctx, frame_args).run()
        rebuilder = ValueRebuilder(ctx)
        result_expr = rebuilder.expr(result)
        rebuilder.record_side_effects()
        return finish_entry(ctx, frame_args, rebuilder, f"return {result_expr}", context)
    except UserCodeRaises as exc:
        return python_entry(ctx, f"{type(exc.error).__name__}: {exc.error}")
    except RecursionError:
        # the capture's own recursion (values nested a thousand deep, a container that holds
        # itself, deep inlined recursion) ran out of stack: Python runs the frame as written
        return python_entry(ctx, "the capture recursed too deeply (deeply nested values or calls)")
    except CaptureUnsupported as exc:
        reason = reason_from(exc, is_library_file)
        logs.get_logger("graph_breaks").info("Graph break in %s: %s", user_label(fn.__code__),
                                             reason)
        if fullgraph:
            raise to_unsupported(exc) from None
        try:
            return build_break_entry(ctx, frame_args, exc, reason, context)
        except Exception as why:  # CannotBreak, a refusal, or npdynamo's own failure
            if isinstance(why, NpdynamoError):
                raise
            entry = python_entry(ctx, f"{reason.reason} (the frame runs in Python: {why})")
            entry.graph_break = reason
            return entry
    except (RollRefused, NpdynamoError):
        raise
    except Exception as exc:
        # npdynamo's own failure after the frame's capture (rebuilding its values, making the
        # entry): never the user's traceback; the frame runs in Python, or Unsupported
        why = f"npdynamo failed to build the compiled entry ({type(exc).__name__}: {exc})"
        if fullgraph:
            raise Unsupported(why) from exc
        return python_entry(ctx, why)


def new_session(
    backend: Callable,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    *,
    recorder: Callable | None = None,
    compile_callee: Callable | None = None,
    on_compile: Callable[[], None] | None = None,
) -> CompileSession:
    """A compile session whose captures run through ``build_entry``: made once per
    ``compile()`` (or ``enable()`` block, or ``explain`` run) with everything bound here."""
    return CompileSession(backend, build_entry, fullgraph, dynamic, recorder, compile_callee,
                          on_compile)


def to_unsupported(exc: CaptureUnsupported) -> Unsupported:
    error = Unsupported(str(exc))
    error.reason = exc.reason
    error.hint = exc.hint
    error.location = exc.location
    error.user_stack = exc.user_stack
    return error


def _log_entry(entry: CompiledEntry) -> None:
    if logs.enabled("guards"):
        logs.get_logger("guards").info(
            "Guards of %s:\n%s", user_label(entry.code), entry.guard_set.source
        )
    if entry.graph_module is not None and logs.enabled("graph_code"):
        logs.get_logger("graph_code").info(
            "Graph of %s:\n%s", user_label(entry.code), entry.graph_module.code
        )
    if entry.runs_python and logs.get_logger("graph_breaks").isEnabledFor(logging.INFO):
        logs.get_logger("graph_breaks").info(
            "%s runs in Python: %s", user_label(entry.code), entry.runs_python
        )

