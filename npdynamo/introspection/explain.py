"""``npdynamo.explain``: run a function once under capture and report every graph and break.

The run uses a fresh ``CompileSession`` whose recorder sees every entry built along the way (the
function's own, its resume functions', and those of user functions called at a break), so the
report covers the whole call without touching any compiled function's cache.
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Iterator
from dataclasses import dataclass, field

from npdynamo import autograd, config
from npdynamo.autograd.aot import AOTReport
from npdynamo.autograd.api import grad_spec
from npdynamo.backends import lookup_backend
from npdynamo.capture.breaks.reasons import GraphBreakReason
from npdynamo.capture.breaks.resume import CompileSession
from npdynamo.capture.bytecode.generate import user_label
from npdynamo.capture.compile_frame import build_entry, new_session
from npdynamo.capture.hooks.cache import cache_of
from npdynamo.capture.hooks.dispatch import original_function
from npdynamo.errors import InvalidArgument, user_location
from npdynamo.introspection import render as explain_render


@dataclass
class ExplainOutput:
    """What one captured run of a function produced."""

    graphs: list = field(default_factory=list)
    break_reasons: list[GraphBreakReason] = field(default_factory=list)
    ops_per_graph: list[int] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    compile_time_s: float = 0.0
    python_frames: list[str] = field(default_factory=list)
    result: object = None
    #: graphs that ran as differentiable steps of an outer tape (AOT forward/backward pairs)
    aot_functions: list = field(default_factory=list)
    #: per graph, what the backend made of it (numba: kernels, or why it fell back to NumPy)
    backend_reports: list = field(default_factory=list)
    #: the function explained (its source heads the HTML page)
    function: object = None
    #: per loop or array branch met (once per text): in the graph as one node, or unrolled and why
    loops: list[str] = field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    def __str__(self) -> str:
        """The short report: counts, breaks, ops per graph, guard counts."""
        return explain_render.short_text(self)

    def verbose(self) -> str:
        """The full report: every break, graph, backend decision and guard."""
        return explain_render.verbose_text(self)

    def to_html(self, path: str | None = None) -> str:
        """One self-contained HTML page (source coloured by graph, breaks at their lines, ops
        and the kernels they became, guards per input); written to ``path`` when given."""
        page = explain_render.to_html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def to_dot(self) -> str:
        """Graphviz DOT source of the graphs, fusion groups as clusters."""
        return explain_render.to_dot(self)

    def render(self, path: str) -> str:
        """Draw the graphs with Graphviz into ``path`` (``.svg``, ``.png``, ...)."""
        return explain_render.render(self, path)


def frame_args_of(fn: types.FunctionType, args: tuple, kwargs: dict) -> tuple:
    """The frame's argument locals (co_varnames order) for a call ``fn(*args, **kwargs)``."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    positional, keyword_only, varargs, varkw = [], [], [], []
    for name, param in inspect.signature(fn).parameters.items():
        value = bound.arguments[name]
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional.append(value)
        elif param.kind is param.KEYWORD_ONLY:
            keyword_only.append(value)
        elif param.kind is param.VAR_POSITIONAL:
            varargs.append(tuple(value))
        else:
            varkw.append(dict(value))
    return tuple(positional + keyword_only + varargs + varkw)


class _Recorder:
    def __init__(self, output: ExplainOutput) -> None:
        self.output = output

    def __call__(self, entry, fn) -> None:
        out = self.output
        name = user_label(fn.__code__)  # "fit (from line 44)", not "__resume_at_..."
        report = entry.report
        if isinstance(report, AOTReport):  # shown as partitions, not as a backend report
            out.aot_functions.append(report.function)
            report = None
        if entry.graph_module is not None:
            out.graphs.append(entry.graph_module)
            out.backend_reports.append(report)
            out.ops_per_graph.append(
                sum(1 for n in entry.graph_module.graph.nodes if n.op == "call_function")
            )
        if entry.graph_break is not None:
            out.break_reasons.append(entry.graph_break)
        if entry.runs_python is not None:
            out.python_frames.append(f"{name}: {entry.runs_python}")
        out.guards += [f"{name}: {text}" for text in entry.guard_set.describe()]
        out.loops += [line for line in (f"{name}: {text}" for text in entry.loops)
                      if line not in out.loops]
        out.compile_time_s += entry.compile_time_s

    def python_from_now_on(self, name: str, reason: str) -> None:
        """A resume point reached the cache limit: its later cases run in Python."""
        self.output.python_frames.append(f"{name}: {reason}")


def explain(fn, backend="eager"):
    """``explain(fn)(*args, **kwargs)`` runs ``fn`` once under capture and returns the report."""
    spec = grad_spec(fn)
    if spec is not None:  # explain(grad(compile(f))): the AOT forward/backward of each graph
        return _explain_gradient(spec, lookup_backend(backend))
    target = original_function(fn) or fn
    if isinstance(fn, types.MethodType) and original_function(fn.__func__) is not None:
        target = types.MethodType(original_function(fn.__func__), fn.__self__)  # obj.compiled
    if not isinstance(target, (types.FunctionType, types.MethodType)) or (
        isinstance(target, types.MethodType) and not isinstance(target.__func__, types.FunctionType)
    ):
        raise InvalidArgument(
            f"{user_location()}: npdynamo.explain(fn) needs a Python function or method (as "
            f"npdynamo.compile does), not {fn!r} of type {type(fn).__name__}; write "
            "npdynamo.explain(my_function)(*args)"
        )
    if isinstance(target, types.MethodType):
        bound_self, target = target.__self__, target.__func__
    else:
        bound_self = None
    compiler = lookup_backend(backend)
    cache = cache_of(fn)  # a compiled function: explain it with its own dynamic= setting
    dynamic = cache.dynamic if cache is not None else None

    def run(*args, **kwargs) -> ExplainOutput:
        output = ExplainOutput(function=target)
        context = recording_context(compiler, output, dynamic)
        call_args = (bound_self, *args) if bound_self is not None else args
        frame_args = frame_args_of(target, call_args, kwargs)
        with _compiled_now():
            entry = build_entry(target, frame_args, backend=compiler, context=context)
            output.result = entry.run(*frame_args)
        return output

    return run


@contextlib.contextmanager
def _compiled_now() -> Iterator[None]:
    """The report is of what the backend compiles, not of the eager tier that would run while
    its kernels compile in the background: explain's graphs compile before its run (so the
    numba report lists kernels, the schedule and the tuning line). ``config.tiered`` is
    process-wide: a graph another thread captures meanwhile compiles before its call too."""
    saved = config.tiered
    config.tiered = False
    try:
        yield
    finally:
        config.tiered = saved


def _explain_gradient(spec, compiler):
    inner = original_function(spec.fn) or spec.fn
    make = autograd.value_and_grad if spec.with_value else autograd.grad
    argnums = spec.argnums[0] if spec.single_argnum else spec.argnums

    def run(*args, **kwargs) -> ExplainOutput:
        output = ExplainOutput(function=inner)
        context = recording_context(compiler, output)
        traced = make(call_through_context(inner, context), argnums=argnums, has_aux=spec.has_aux)
        with _compiled_now():
            output.result = traced(*args, **kwargs)
        return output

    return run


def recording_context(
    compiler, output: ExplainOutput, dynamic: bool | None = None
) -> CompileSession:
    """A session whose recorder sees every entry built, including those of user functions
    called natively at a break (they are captured in the same session, not compiled apart)."""
    def compile_callee(fn: types.FunctionType):
        return call_through_context(fn, context)

    context = new_session(compiler, dynamic=dynamic, recorder=_Recorder(output),
                          compile_callee=compile_callee)
    return context


def call_through_context(fn: types.FunctionType, context: CompileSession):
    """A callable capturing ``fn`` in ``context`` on every call (used by explain's runs)."""
    def call(*args, **kwargs):
        frame_args = frame_args_of(fn, args, kwargs)
        entry = build_entry(fn, frame_args, backend=context.backend, context=context)
        return entry.run(*frame_args)

    return call
