"""Compiled entries: what a capture produces and the generated code that runs it.

Between the translator (which leaves a ``CaptureContext`` holding the graph, guards and side
effects) and the compile step (``backends/compile.py``). ``finish_entry`` closes the graph over
the values the rebuilder needs, has it compiled, and generates the entry's runner: call the
compiled graph, rebuild the return value, replay side effects, return. ``python_entry`` is the
entry of a frame that runs in plain Python under the guards seen so far. The broken frame's
entry (``breaks/broken_frame.py``) is built from the same pieces; ``compile_frame.py`` decides
which applies.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from npdynamo import config
from npdynamo.backends import tiers
from npdynamo.backends.compile import CompiledGraph, compile_graph
from npdynamo.backends.report import GUARDED, BackendReport, Compiled, GuardedInput
from npdynamo.capture.bytecode.liveness import hand_over
from npdynamo.capture.guards import (
    GuardKind,
    GuardSet,
    LocalSource,
    Owners,
    Source,
    SourceTuple,
)
from npdynamo.capture.guards.guard import frame_params
from npdynamo.capture.hooks.dispatch import make_python_call
from npdynamo.capture.pysource import Namespace, make_function
from npdynamo.capture.rebuild import ValueRebuilder
from npdynamo.capture.session import CaptureContext
from npdynamo.capture.side_effects import write_back_targets
from npdynamo.fx import GraphModule
from npdynamo.generated import define, evaluate

if TYPE_CHECKING:
    # graph breaks sit above the entry they build (breaks/ imports this module)
    from npdynamo.capture.breaks.reasons import GraphBreakReason
    from npdynamo.capture.breaks.resume import CompileSession


@dataclass
class CompiledEntry:
    """One cache entry: guards plus the code that runs when they hold."""

    check: Callable[..., bool]
    run: Callable[..., object]
    guard_set: GuardSet
    graph_module: GraphModule | None = None
    #: what the backend returned for the graph (``backends.report.Compiled``)
    compiled: Compiled | None = None
    runs_python: str | None = None
    graph_break: GraphBreakReason | None = None
    compile_time_s: float = 0.0
    #: instructions the capture stepped through, retries included (capture time per instruction)
    steps: int = 0
    run_source: str = ""
    code: types.CodeType | None = None
    notes: list[str] = field(default_factory=list)
    #: what became of each loop of the frame: in the graph, or unrolled and why (``explain``)
    loops: list[str] = field(default_factory=list)
    #: the frame run as plain Python (``python_runner``): what may run while the graph's
    #: compiled tier is not ready (``serve``)
    python: Callable[..., object] | None = None

    def serve(self, rebind: Callable[[Callable[..., object]], None]) -> Callable[..., object]:
        """What a frame's cache calls for this entry: ``run``, or while the graph waits for its
        compiled tier, ``run`` or plain Python, whichever measured faster
        (``tiers.WhileCompiling``; ``rebind(run)`` puts ``run`` back at the switch)."""
        tier = tiers.waiting(self.compiled)
        if tier is None or self.python is None or not config.plain_while_compiling:
            return self.run
        return tiers.WhileCompiling(tier, self.run, self.python, rebind)

    @property
    def report(self) -> BackendReport | None:
        """What the backend reports about this entry's graph (``explain``, ``inspect``)."""
        return self.compiled.report if self.compiled is not None else None

    def miss_reason(self, *frame_args) -> str:
        return self.guard_set.miss_reason(frame_args)


class GraphFailed(Exception):
    """A compiled graph raised at run time; nothing was written back yet. Its ``args`` are the
    frame's arguments as the runner takes them, for the rerun in Python: the prefix that
    raises it holds them, so no caller has to keep them alive for that case."""


def python_runner(ctx: CaptureContext):
    """The frame's original code, run in Python, called like the entry's ``run``."""
    fn = ctx.fn
    if ctx.cells_as_argument:
        params = "".join(f", a{i}" for i in range(len(ctx.arg_names)))
        source = (f"def run(C{params}):\n"
                  f"    return function(CODE, G, NAME, None, C or None)({params[2:]})\n")
        env = {"function": types.FunctionType, "CODE": fn.__code__, "G": fn.__globals__,
               "NAME": fn.__name__}
        run = define(source, "run", env, filename=f"<npdynamo-python-{fn.__name__}>",
                     lines=False)
        run.__code__ = hand_over(run.__code__)  # the resumed code owns its arguments
        return run
    return make_python_call(fn, fn.__code__)


def python_entry(ctx: CaptureContext, reason: str) -> CompiledEntry:
    """An entry that runs the frame in plain Python (under the guards seen so far).

    It is the last resort of a capture that failed, so it must not fail itself: where the
    guards cannot be generated (npdynamo's own bug in one of them, the very failure that may
    have brought the capture here) the entry holds no guard and runs Python for every call,
    which is right for any input."""
    try:
        ctx.finish_guards()
        check, guards = ctx.guards.check, ctx.guards
    except Exception as exc:
        old = ctx.guards
        guards = GuardSet(arg_count=old.arg_count, namespace_base=old.namespace_base,
                          cell_count=old.cell_count)
        check = _always
        reason = (f"{reason}; its guards could not be generated ({type(exc).__name__}: {exc}),"
                  " so it runs in Python for every call")
    return CompiledEntry(check, python_runner(ctx), guards, runs_python=reason)


def _always(*_args) -> bool:
    """The check of an entry with no guard."""
    return True


def finish_graph(
    ctx: CaptureContext, frame_args: tuple, rebuilder: ValueRebuilder, context: CompileSession
) -> tuple[CompiledGraph, list]:
    """Close the graph over the values the rebuilder needs and compile it.

    Returns what the compile step made of it and its inputs as ``[(placeholder, source)]``."""
    check_written_arrays(ctx)
    output = ctx.graph.output(tuple(rebuilder.nodes))
    output.meta["write_back"] = write_back_targets(ctx, rebuilder)
    sources = dict(ctx.placeholders)
    mark_guarded_inputs(ctx)
    graph = compile_graph(
        ctx.graph,
        lambda node: read_source(sources[node], frame_args, ctx),
        context.backend,
        owner=ctx.fn.__qualname__,
        fullgraph=context.fullgraph,
    )
    return graph, [(node, sources[node]) for node in graph.inputs]


def mark_guarded_inputs(ctx: CaptureContext) -> None:
    """Tell the backend what the guards prove about each graph input (``GuardedInput``).

    Only frame arguments (``LocalSource``): the dispatcher calls the guard function and then
    the entry's runner with the same argument objects, and the runner passes ``a<i>`` to the
    graph as it is (``generated_function``), so what the guard checked holds for the very
    object the graph gets. An attribute or item is read again by the runner (a property could
    give another object), so it gets no mark. The guards taken here are never dropped later
    (``finish_guards`` only adds the symbolic sizes' guard)."""
    guards = ctx.guards
    for node, source in ctx.placeholders:
        if type(source) is not LocalSource:
            continue
        kind = guards.expected(source, GuardKind.TYPE)
        if not isinstance(kind, type):  # (a type defined in a function is held as ``Seen``)
            continue
        shape = guards.expected(source, GuardKind.SHAPE)
        node.meta[GUARDED] = GuardedInput(
            kind, guards.expected(source, GuardKind.DTYPE),
            len(shape) if isinstance(shape, tuple) else None)


def check_written_arrays(ctx: CaptureContext) -> None:
    """An array written in place must not share memory with another input array, or the
    functional graph would miss the write: refuse if it does, guard that it still does not.

    Two distinct arrays that both own their memory cannot overlap, so the input arrays that own
    theirs get ONE guard (still distinct, still owners); only pairs involving a view are checked
    and guarded one by one. A step updating 2,000 parameters in place costs 2,000 checks, not
    2,000 squared."""
    written = [a for a in ctx.side_effects.arrays if a.node.op != "placeholder"]
    if not written:
        return
    inputs = ctx.builder.arrays_read()
    objects = {src: obj for src, obj in inputs}
    owners = [src for src, obj in inputs if obj.base is None]
    views = [(src, obj) for src, obj in inputs if obj.base is not None]
    group = False
    done = set()
    writeable = []
    for array in written:
        mine = objects.get(array.source)
        if mine is None:  # not an input ndarray: nothing outside can alias it
            continue
        if not mine.flags.writeable:
            # Python raises at the write, after what ran before it: the frame runs in Python
            # while the array stays read-only, and is captured again once it is writeable
            ctx.guard(array.source, GuardKind.READ_ONLY, None)
            raise ctx.unsupported(
                f"{array.source.short()} is written in place but is read-only",
                "pass a writeable array (or a copy: a.copy())", kind="side_effect")
        writeable.append(array.source)
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
        # the writeable owners are checked by the owners' one guard
        written = tuple(i for i, src in enumerate(owners) if src in writeable)
        ctx.guard(SourceTuple(tuple(owners)), GuardKind.OWNERS,
                  Owners(tuple(s.short() for s in owners), written))
        writeable = [src for src in writeable if src not in owners]
    if writeable:
        ctx.guard(SourceTuple(tuple(writeable)), GuardKind.WRITEABLE,
                  tuple(s.short() for s in writeable))


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
        callee = ns.bind(compiled.run, "COMPILED")
        args = ", ".join(src.expr() for _node, src in inputs)
        # a graph that raises (an index out of range found at run time) has written nothing:
        # rerun the frame in Python so state and exception are exactly Python's (a prefix
        # hands the frame's arguments back to its runner for that)
        call_args = ", ".join(
            ["C"] * (cell_count is not None) + [f"a{i}" for i in range(len(ctx.arg_names))]
        )
        if name == "run":
            on_error = f"return {ns.bind(python_runner(ctx), 'PYTHON')}({call_args})"
        else:
            on_error = f"raise {ns.bind(GraphFailed, 'GraphFailed')}({call_args}) from None"
        lines += [
            "    try:",
            f"        out = {callee}({args})",
            "    except Exception:",
            f"        {on_error}",
        ]
    lines += [f"    {statement}" for statement in rebuilder.source_reads]
    lines += [f"    {statement}" for statement in rebuilder.prelude]
    lines += [f"    {statement}" for statement in rebuilder.effects]
    lines.append(f"    {tail}")
    source = "\n".join(lines) + "\n"
    fn = make_function(source, name, ns, f"{name}-{ctx.fn.__name__}")
    if compiled is not None:  # a backend that settles on what it runs later (tuner, tiers)
        compiled.on_retarget(lambda run, scope=fn.__globals__: scope.__setitem__(callee, run))
    return fn, source


def finish_entry(
    ctx: CaptureContext,
    frame_args: tuple,
    rebuilder: ValueRebuilder,
    tail: str,
    context: CompileSession,
) -> CompiledEntry:
    """The entry of a fully captured frame: guards, graph, and the runner returning its value."""
    graph, inputs = finish_graph(ctx, frame_args, rebuilder, context)
    ctx.finish_guards()
    run, source = generated_function(ctx, "run", graph.compiled, inputs, rebuilder, tail)
    return CompiledEntry(
        ctx.guards.check, run, ctx.guards, graph.graph_module, graph.compiled, run_source=source,
        # (the frame's plain run is made only for a graph that waits for its compiled tier)
        python=python_runner(ctx) if tiers.waiting(graph.compiled) else None,
    )


def read_source(source: Source, frame_args: tuple, ctx: CaptureContext) -> Any:
    """The object ``source`` names for a call with ``frame_args``, read again outside the warm
    path (a graph input's value for the backend's compile, a constant at export)."""
    scope = dict(ctx.guard_namespace())
    if ctx.cells_as_argument:
        scope.update({f"CELL{i}": c for i, c in enumerate(ctx.cells)})
    scope.update({f"a{i}": a for i, a in enumerate(frame_args)})
    return evaluate(source.expr(), scope)
