"""Compiled entries: capture a function for one set of arguments and build what runs it.

``build_entry`` is the capture stage's front door, called by the frame hook (and by resume
functions) on a cache miss. It runs the translator over the whole function; if that succeeds the
entry calls the compiled graph and rebuilds the return value. If the translator stops at
something a graph cannot hold, the function is re-traced up to that instruction and the entry
runs the *broken* frame instead (``breaks.py``): the graph of everything before the break, the
instruction natively, then a resume function. Where no break is possible the frame runs in
Python, with the reason recorded.
"""

from __future__ import annotations

import logging
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo import config, logs, ops

# The handlers of opcodes and builtins and the autodiff calls register into ``capture.tables``
# when imported; a capture session needs them all.
from npdynamo.capture import autodiff, builtins_table, control_flow, opcodes  # noqa: F401
from npdynamo.capture.break_reasons import GraphBreakReason, reason_from
from npdynamo.capture.errors import CaptureUnsupported, UserCodeRaises
from npdynamo.capture.guards import GuardSet
from npdynamo.capture.guards.guard import frame_params
from npdynamo.capture.pysource import Namespace, make_function
from npdynamo.capture.rebuild import ValueRebuilder
from npdynamo.capture.resume import CompileContext, default_context
from npdynamo.capture.translator import CaptureContext, root_frame
from npdynamo.errors import Unsupported
from npdynamo.fx import GraphModule
from npdynamo.fx.passes import common_subexpression_elimination, dead_code_elimination
from npdynamo.fx.sizes import gives_symbol, symbols_used


class BackendFallbackWarning(UserWarning):
    """A backend raised while compiling a graph; the graph runs on the eager backend."""


@dataclass
class CompiledEntry:
    """One cache entry: guards plus the code that runs when they hold."""

    check: Callable[..., bool]
    run: Callable[..., object]
    guard_set: GuardSet
    graph_module: GraphModule | None = None
    compiled: Callable | None = None
    fallback_reason: str | None = None
    graph_break: GraphBreakReason | None = None
    compile_time_s: float = 0.0
    run_source: str = ""
    code: types.CodeType | None = None
    notes: list[str] = field(default_factory=list)

    def miss_reason(self, *frame_args) -> str:
        return self.guard_set.miss_reason(frame_args)


def build_entry(
    fn: types.FunctionType,
    frame_args: tuple,
    *,
    backend: Callable,
    fullgraph: bool = False,
    context: CompileContext | None = None,
    cells_as_argument: bool = False,
    opaque_iterators: bool = False,
    dynamic: bool | None = None,
) -> CompiledEntry:
    """Capture ``fn`` for ``frame_args``; with ``fullgraph`` a break raises ``Unsupported``.

    With ``opaque_iterators`` (a resume function continuing a loop that breaks in every
    iteration) the loop iterators among the arguments are stepped natively, not unrolled."""
    from npdynamo.capture.breaks import CannotBreak, build_break_entry

    context = context or default_context(backend, fullgraph, dynamic)
    start = time.perf_counter()
    ctx = CaptureContext(
        fn, cells_as_argument=cells_as_argument, opaque_iterators=opaque_iterators,
        dynamic=context.dynamic,
    )
    if config.force_fallback:
        return python_entry(ctx, "npdynamo.config.force_fallback is set")
    try:
        result = root_frame(ctx, frame_args).run()
        rebuilder = ValueRebuilder(ctx)
        result_expr = rebuilder.expr(result)
        rebuilder.record_side_effects()
        entry = finish_entry(ctx, frame_args, rebuilder, f"return {result_expr}", context)
    except UserCodeRaises as exc:
        entry = python_entry(ctx, f"{type(exc.error).__name__}: {exc.error}")
    except CaptureUnsupported as exc:
        reason = reason_from(exc)
        logs.get_logger("graph_breaks").info("Graph break in %s: %s", fn.__qualname__, reason)
        if fullgraph:
            raise to_unsupported(exc) from None
        try:
            entry = build_break_entry(ctx, frame_args, exc, reason, context)
        except (CannotBreak, CaptureUnsupported, UserCodeRaises) as why:
            entry = python_entry(ctx, f"{reason.reason} (the frame runs in Python: {why})")
            entry.graph_break = reason
    entry.compile_time_s = time.perf_counter() - start
    entry.code = fn.__code__
    _log_entry(entry)
    if context.recorder is not None:
        context.recorder(entry, fn)
    return entry


def to_unsupported(exc: CaptureUnsupported) -> Unsupported:
    error = Unsupported(str(exc))
    error.reason = exc.reason
    error.hint = exc.hint
    error.location = exc.location
    error.user_stack = exc.user_stack
    return error


class GraphFailed(Exception):
    """A compiled graph raised at run time; nothing was written back yet."""


def python_runner(ctx: CaptureContext):
    """The frame's original code, run in Python, called like the entry's ``run``."""
    fn = ctx.fn
    if ctx.cells_as_argument:
        code, glob, name = fn.__code__, fn.__globals__, fn.__name__

        def run(cells, *args):
            return types.FunctionType(code, glob, name, None, cells or None)(*args)

        return run
    from npdynamo.capture.frames.dispatch import make_fallback

    return make_fallback(fn, fn.__code__)


def python_entry(ctx: CaptureContext, reason: str) -> CompiledEntry:
    """An entry that runs the frame in plain Python (under the guards seen so far)."""
    ctx.finish_guards()
    return CompiledEntry(ctx.guards.check, python_runner(ctx), ctx.guards, fallback_reason=reason)


def finish_graph(
    ctx: CaptureContext, frame_args: tuple, rebuilder: ValueRebuilder, context: CompileContext
):
    """Close the graph over the values the rebuilder needs; compile it with the backend.

    Returns (graph module or None, compiled callable or None, [(node, source)] graph inputs)."""
    check_written_arrays(ctx)
    graph = ctx.graph
    graph.output(tuple(rebuilder.nodes))
    dead_code_elimination(graph)
    common_subexpression_elimination(graph)
    dead_code_elimination(graph)
    _distinct_outputs(graph)
    # an input nothing reads may still give a size the graph computes with (np.arange(n))
    sizes = symbols_used(graph)
    kept = [(node, src) for node, src in ctx.placeholders
            if node.users or gives_symbol(node, sizes)]
    inputs = kept
    for node, _src in ctx.placeholders:
        if (node, _src) not in kept:
            graph.erase_node(node)
    graph.lint()
    if not rebuilder.nodes:
        return None, None, inputs
    gm = GraphModule(graph)
    example_inputs = [_read(src, frame_args, ctx) for _node, src in inputs]
    compiler = context.backend
    from npdynamo.autograd.tracer import is_tracer

    if any(is_tracer(x) for x in example_inputs):
        # inside an outer grad: forward and backward graphs, one step on the enclosing tape
        from npdynamo.autograd.aot import aot_backend

        compiler = aot_backend(compiler)
    try:
        compiled = compiler(gm, example_inputs)
    except Exception as exc:  # never worse than Python: the graph runs on the eager backend
        name = getattr(context.backend, "__name__", repr(context.backend))
        warnings.warn(
            f"npdynamo: backend {name} failed to compile a graph of {ctx.fn.__qualname__} "
            f"({type(exc).__name__}: {exc}); that graph runs on the eager backend instead",
            BackendFallbackWarning,
            stacklevel=2,
        )
        compiled = gm.forward
    return gm, compiled, inputs


def _distinct_outputs(graph) -> None:
    """Every graph output the rebuilder asked for stands for a distinct array object: where CSE
    merged two of them (``P0 = np.zeros(n); P1 = np.zeros(n)``) or one became an input, the later
    ones become copies, or the user would get one object under two names."""
    output = graph.output_node
    seen = set()
    outs = []
    for node in output.args[0]:
        meta = node.meta.get("val")
        scalar = meta is None or getattr(meta, "scalar", False)
        if (node in seen or node.op == "placeholder") and not scalar:
            with graph.inserting_before(output):
                node = graph.call_function(ops.REGISTRY["copy"], (node,))
            node.meta["val"] = meta
        seen.add(node)
        outs.append(node)
    output.args = (tuple(outs),)


def check_written_arrays(ctx: CaptureContext) -> None:
    """An array written in place must not share memory with another input array, or the
    functional graph would miss the write: refuse if it does, guard that it still does not.

    Two distinct arrays that both own their memory cannot overlap, so the input arrays that own
    theirs get ONE guard (still distinct, still owners); only pairs involving a view are checked
    and guarded one by one. A step updating 2,000 parameters in place costs 2,000 checks, not
    2,000 squared."""
    import numpy as np

    from npdynamo.capture.guards import GuardKind, SourceTuple

    written = [a for a in ctx.side_effects.arrays if a.node.op != "placeholder"]
    if not written:
        return
    inputs = ctx.builder.arrays_read()
    objects = {src: obj for src, obj in inputs}
    owners = [src for src, obj in inputs if obj.base is None]
    views = [(src, obj) for src, obj in inputs if obj.base is not None]
    group = False
    done = set()
    for array in written:
        mine = objects.get(array.source)
        if mine is None:  # not an input ndarray: nothing outside can alias it
            continue
        group = group or (mine.base is None and len(owners) > 1)
        for src, other in views if mine.base is None else inputs:
            pair = frozenset((src, array.source))
            if src == array.source or other is mine or pair in done:
                continue
            done.add(pair)
            if np.may_share_memory(mine, other):
                raise ctx.unsupported(
                    f"{array.source.short()} is written in place and shares memory with "
                    f"{src.short()} (overlapping arguments)",
                    "pass separate arrays, or copy one of them",
                    kind="side_effect",
                )
            ctx.guard(array.source, GuardKind.NO_OVERLAP, src)
    if group:
        ctx.guard(SourceTuple(tuple(owners)), GuardKind.OWNERS, tuple(s.short() for s in owners))


def generated_function(
    ctx: CaptureContext,
    name: str,
    compiled,
    inputs,
    rebuilder,
    tail: str,
    frame_cells: bool = False,
):
    """``def name([C,] a0, ...): out = COMPILED(inputs...); <tail>`` as one generated function.

    ``C`` (the frame's cells) leads for resume functions, and for a prefix (``frame_cells``)."""
    ns = Namespace(ctx.guard_namespace())
    ns.values.update(rebuilder.namespace.values)
    cell_count = ctx.guards.cell_count
    params, unpack = frame_params(len(ctx.arg_names), cell_count)
    if frame_cells and cell_count is None:
        params = ", ".join(["C", *filter(None, [params])])
    lines = [f"def {name}({params}):"]
    if unpack:
        lines.append(f"    {unpack}")
    if compiled is not None:
        callee = ns.bind(compiled, "COMPILED")
        args = ", ".join(src.expr() for _node, src in inputs)
        # a graph that raises (an index out of range found at run time) has written nothing:
        # rerun the frame in Python so state and exception are exactly Python's
        if name == "run":
            call_args = ", ".join(
                filter(
                    None,
                    [
                        "C" if cell_count is not None else "",
                        *(f"a{i}" for i in range(len(ctx.arg_names))),
                    ],
                )
            )
            on_error = f"return {ns.bind(python_runner(ctx), 'PYTHON')}({call_args})"
        else:
            on_error = f"raise {ns.bind(GraphFailed, 'GraphFailed')}() from None"
        lines += [
            "    try:",
            f"        out = {callee}({args})",
            "    except Exception:",
            f"        {on_error}",
        ]
    lines += [f"    {statement}" for statement in rebuilder.prelude]
    lines += [f"    {statement}" for statement in rebuilder.effects]
    lines.append(f"    {tail}")
    source = "\n".join(lines) + "\n"
    return make_function(source, name, ns, f"{name}-{ctx.fn.__name__}"), source


def finish_entry(
    ctx: CaptureContext,
    frame_args: tuple,
    rebuilder: ValueRebuilder,
    tail: str,
    context: CompileContext,
) -> CompiledEntry:
    """The entry of a fully captured frame: guards, graph, and the runner returning its value."""
    gm, compiled, inputs = finish_graph(ctx, frame_args, rebuilder, context)
    ctx.finish_guards()
    run, source = generated_function(ctx, "run", compiled, inputs, rebuilder, tail)
    return CompiledEntry(ctx.guards.check, run, ctx.guards, gm, compiled, run_source=source)


def _read(source, frame_args: tuple, ctx: CaptureContext):
    scope = dict(ctx.guard_namespace())
    if ctx.cells_as_argument:
        scope.update({f"CELL{i}": c for i, c in enumerate(ctx.cells)})
    scope.update({f"a{i}": a for i, a in enumerate(frame_args)})
    return eval(source.expr(), scope)  # noqa: S307 (our own generated expression)


def _log_entry(entry: CompiledEntry) -> None:
    if logs.enabled("guards"):
        logs.get_logger("guards").info(
            "Guards of %s:\n%s", entry.code.co_qualname, entry.guard_set.source
        )
    if entry.graph_module is not None and logs.enabled("graph_code"):
        logs.get_logger("graph_code").info(
            "Graph of %s:\n%s", entry.code.co_qualname, entry.graph_module.code
        )
    if entry.fallback_reason and logs.get_logger("graph_breaks").isEnabledFor(logging.INFO):
        logs.get_logger("graph_breaks").info(
            "%s runs in Python: %s", entry.code.co_qualname, entry.fallback_reason
        )
