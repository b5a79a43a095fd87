"""Compiled entries: capture a function for one set of arguments and build what runs it.

``build_entry`` is the capture stage's front door, called by the frame hook on a cache miss: it
runs the translator, finishes the graph (fx passes), hands it to the backend, and generates two
Python functions taking the frame's arguments positionally: ``check`` (the guards) and ``run``
(fetch the graph inputs from their sources, call the compiled graph, rebuild the return value).
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo.capture.errors import CaptureUnsupported, UserCodeRaises
from npdynamo.capture.guards import GuardSet
from npdynamo.capture.pysource import Namespace, literal, make_function
from npdynamo.capture.translator import CaptureContext, root_frame
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    DictValue,
    FunctionValue,
    ListValue,
    SetValue,
    TupleValue,
    UserObjectValue,
    Value,
)
from npdynamo.errors import Unsupported
from npdynamo.fx import GraphModule
from npdynamo.fx.passes import common_subexpression_elimination, dead_code_elimination


@dataclass
class CompiledEntry:
    """One cache entry: guards plus the code that runs when they hold."""

    check: Callable[..., bool]
    run: Callable[..., object]
    guard_set: GuardSet
    graph_module: GraphModule | None = None
    compiled: Callable | None = None
    fallback_reason: str | None = None
    compile_time_s: float = 0.0
    run_source: str = ""
    notes: list[str] = field(default_factory=list)

    def miss_reason(self, *frame_args) -> str:
        return self.guard_set.miss_reason(frame_args)


def build_entry(
    fn: types.FunctionType, frame_args: tuple, *, backend: Callable, fullgraph: bool = False
) -> CompiledEntry:
    """Capture ``fn`` for ``frame_args``; raise ``npdynamo.Unsupported`` if it cannot be."""
    start = time.perf_counter()
    ctx = CaptureContext(fn)
    try:
        result = root_frame(ctx, frame_args).run()
        outputs = _OutputBuilder(ctx)
        result_expr = outputs.expr(result)
    except CaptureUnsupported as exc:
        raise to_unsupported(exc) from None
    except UserCodeRaises as exc:
        # Python itself raises here: run the frame in Python so the user sees that exception.
        from npdynamo.capture.frames.dispatch import make_fallback

        ctx.guards.compile()
        return CompiledEntry(
            ctx.guards.check,
            make_fallback(fn, fn.__code__),
            ctx.guards,
            fallback_reason=f"{type(exc.error).__name__}: {exc.error}",
            compile_time_s=time.perf_counter() - start,
        )
    graph = ctx.graph
    graph.output(tuple(outputs.nodes))
    dead_code_elimination(graph)
    common_subexpression_elimination(graph)
    dead_code_elimination(graph)
    inputs = [(node, src) for node, src in ctx.placeholders if node.users]
    for node, _src in ctx.placeholders:
        if not node.users:
            graph.erase_node(node)
    graph.lint()
    ctx.guards.compile()
    ns = Namespace(ctx.guard_namespace())
    compiled = gm = None
    if outputs.nodes:
        gm = GraphModule(graph)
        example_inputs = [_read(src, frame_args, ns) for _node, src in inputs]
        compiled = backend(gm, example_inputs)
    run, source = _make_runner(ctx, compiled, inputs, result_expr, outputs.namespace, ns)
    return CompiledEntry(
        ctx.guards.check,
        run,
        ctx.guards,
        gm,
        compiled,
        compile_time_s=time.perf_counter() - start,
        run_source=source,
    )


def to_unsupported(exc: CaptureUnsupported) -> Unsupported:
    error = Unsupported(str(exc))
    error.reason = exc.reason
    error.hint = exc.hint
    error.location = exc.location
    error.user_stack = exc.user_stack
    return error


def _read(source, frame_args: tuple, ns: Namespace):
    scope = dict(ns.values)
    scope.update({f"a{i}": a for i, a in enumerate(frame_args)})
    return eval(source.expr(), scope)  # noqa: S307 (our own generated expression)


def _make_runner(
    ctx: CaptureContext, compiled, inputs, result_expr: str, out_ns: Namespace, ns: Namespace
):
    ns.values.update(out_ns.values)
    params = ", ".join(f"a{i}" for i in range(len(ctx.arg_names)))
    lines = [f"def run({params}):"]
    if compiled is not None:
        name = ns.bind(compiled, "COMPILED")
        args = ", ".join(src.expr() for _node, src in inputs)
        lines.append(f"    out = {name}({args})")
    lines.append(f"    return {result_expr}")
    source = "\n".join(lines) + "\n"
    return make_function(source, "run", ns, f"run-{ctx.fn.__name__}"), source


class _OutputBuilder:
    """Renders the returned tracked value as an expression over graph outputs and sources."""

    def __init__(self, ctx: CaptureContext) -> None:
        self.ctx = ctx
        self.nodes: list = []
        self.index: dict = {}
        self.namespace = Namespace()

    def expr(self, value: Value) -> str:
        if isinstance(value, ArrayValue):
            node = value.node
            if node.op == "placeholder" and value.source is not None:
                return value.source.expr()
            if node not in self.index:
                self.index[node] = len(self.nodes)
                self.nodes.append(node)
            return f"out[{self.index[node]}]"
        if getattr(value, "source", None) is not None and not getattr(value, "fresh", False):
            return value.source.expr()
        if isinstance(value, Const):
            text = literal(value.value)
            return text if text is not None else self.namespace.bind(value.value, "RET")
        if isinstance(value, TupleValue):
            return "(" + "".join(self.expr(v) + ", " for v in value.items) + ")"
        if isinstance(value, ListValue):
            return "[" + ", ".join(self.expr(v) for v in value.items) + "]"
        if isinstance(value, SetValue):
            return (
                "{" + ", ".join(self.expr(v) for v in value.items) + "}" if value.items else "set()"
            )
        if isinstance(value, DictValue):
            parts = [
                f"{self.namespace.bind(k, 'KEY') if literal(k) is None else literal(k)}: "
                f"{self.expr(v)}"
                for k, v in value.items.items()
            ]
            return "{" + ", ".join(parts) + "}"
        if isinstance(value, (UserObjectValue, FunctionValue)) and value.source is not None:
            return value.source.expr()
        raise self.ctx.unsupported(f"returning a {value.kind()} from a compiled function")
