"""The compile step: one captured graph in, one callable out.

The only place a captured graph meets a backend. Capture hands over the graph it built (its
output node set, placeholders in input order) and a way to read each input's example value;
``compile_graph`` runs the passes every graph gets (dead code, common subexpressions, distinct
outputs, unused inputs: ``fx.passes.PIPELINES["compile"]``), picks the backend for the inputs
(autograd's AOT wrap when tracers flow in, via ``registry.backend_for_inputs``), closes the
capture's progress line, calls the backend, and checks what it returns: a ``Compiled``
(``backends/report``; a plain callable is wrapped as one without a report).

A backend that raises is never worse than Python: the graph runs on the eager backend and one
``BackendFallbackWarning`` says so, unless ``fullgraph=True`` asked for no silent fallback, in
which case ``BackendCompilerFailed`` is raised. A backend that returns something that cannot be
called is a broken backend: ``BackendCompilerFailed`` at compile time, whatever the setting.
A graph holding random draws (``ops.random``) runs even with no outputs (it moves the
generators), and its callable puts the generators back if it raises (also after the backend
retargets it: the tuner's winner is wrapped the same way).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from npdynamo import progress
from npdynamo.backends.eager import eager
from npdynamo.backends.fp_state import is_plain_ufunc_call, ufuncs_cannot_raise
from npdynamo.backends.registry import Backend, backend_for_inputs, backend_name
from npdynamo.backends.report import Compiled, as_compiled
from npdynamo.errors import BackendCompilerFailed, BackendFallbackWarning
from npdynamo.fx import Graph, GraphModule
from npdynamo.fx.node import Node
from npdynamo.fx.passes import run_pipeline
from npdynamo.ops.random import GENERATOR_TYPES, GeneratorMeta, restore_states, saved_states


@dataclass
class CompiledGraph:
    """What ``compile_graph`` made of one graph."""

    #: the graph after the passes (``None``: it computes nothing the caller needs)
    graph_module: GraphModule | None
    #: ``compiled.run`` is called with the values of ``inputs`` and returns the tuple of
    #: outputs; ``compiled.report`` is what the backend reports (``explain``)
    compiled: Compiled | None
    #: the placeholders kept, in call order (the caller reads their values)
    inputs: list[Node]
    #: why the graph runs on the eager backend instead of the one asked for (it raised)
    backend_failure: str | None = None


def compile_graph(
    graph: Graph,
    read_input: Callable[[Node], object],
    backend: Backend,
    *,
    owner: str,
    fullgraph: bool = False,
) -> CompiledGraph:
    """Run the graph passes and compile ``graph`` with ``backend``.

    ``read_input(placeholder)`` gives the example value of one input (called only for the
    inputs kept); ``owner`` names the user's function in messages."""
    run_pipeline(graph, "compile")
    graph.lint()
    inputs = list(graph.placeholders)
    if not graph.output_node.args[0] and not any(  # a graph whose only effect is a draw runs
            n.op == "call_function" and n.is_impure() for n in graph.nodes):
        return CompiledGraph(None, None, inputs)
    gm = GraphModule(graph)
    example_inputs = [read_input(node) for node in inputs]
    compiler = backend_for_inputs(backend, example_inputs)
    name = backend_name(backend)  # its registered name, else its own
    progress.end_capture()
    try:
        compiled = compiler(gm, example_inputs)
    except Exception as exc:
        if fullgraph:
            raise BackendCompilerFailed(
                f"backend {name} failed to compile a graph of {owner}: "
                f"{type(exc).__name__}: {exc}. Without fullgraph=True the graph would run on "
                "the eager backend instead."
            ) from exc
        reason = f"backend {name} raised {type(exc).__name__}: {exc}"
        warnings.warn(
            f"npdynamo: backend {name} failed to compile a graph of {owner} "
            f"({type(exc).__name__}: {exc}); that graph runs on the eager backend instead",
            BackendFallbackWarning,
            stacklevel=2,
        )
        forward = _keeping_states(graph, inputs, Compiled(gm.forward), exact_backend=True)
        return CompiledGraph(gm, forward, inputs, reason)
    if not callable(compiled):
        raise BackendCompilerFailed(
            f"backend {name} returned {type(compiled).__name__} {compiled!r:.80} for a graph of "
            f"{owner}; a backend must return a callable that takes the graph's inputs and "
            "returns its outputs as a tuple (see npdynamo.register_backend)"
        )
    # the eager backend runs the graph's ops in graph order (a numba program may run a NumPy call
    # that comes before a draw in the graph after it)
    in_order = compiler is eager
    kept = _keeping_states(graph, inputs, as_compiled(compiled), exact_backend=in_order)
    return CompiledGraph(gm, kept, inputs)


def _keeping_states(graph: Graph, inputs: list[Node], compiled: Compiled, *,
                    exact_backend: bool) -> Compiled:
    """``compiled`` with its ``run`` wrapped by ``keep_states_on_error``, now and whenever the
    backend retargets it (the wrapper then wraps the new ``run``: the entry keeps following)."""
    run = keep_states_on_error(graph, inputs, compiled.run, exact_backend=exact_backend)
    if run is compiled.run:
        return compiled
    kept = Compiled(run, compiled.report)
    compiled.on_retarget(lambda new: kept.retarget(
        keep_states_on_error(graph, inputs, new, exact_backend=exact_backend)))
    return kept


def keep_states_on_error(graph: Graph, inputs: list[Node], compiled: Callable, *,
                         exact_backend: bool = False) -> Callable:
    """``compiled``, putting every random generator it draws from back as it was if it raises
    (the frame then reruns in Python and draws the same numbers again, once).

    Saving a generator's state costs about 1.5 us per call. It is skipped when nothing can
    raise once the numbers are drawn: one draw, followed only by ufunc calls, run in graph
    order (``exact_backend``: the eager backend), on a call where no ufunc can raise
    (``fp_state``). A draw validates its arguments before it draws."""
    calls = [n for n in graph.nodes if n.op == "call_function"]
    draws = [n for n in calls if getattr(n.target, "draws", False)]
    if not draws:
        return compiled
    positions = [i for i, node in enumerate(inputs)
                 if isinstance(node.meta.get("val"), GeneratorMeta)]
    embedded = list({id(n.args[0]): n.args[0] for n in draws
                     if isinstance(n.args[0], GENERATOR_TYPES)}.values())
    after = calls[calls.index(draws[0]) + 1:]
    nothing_raises_after = (exact_backend and len(draws) == 1
                            and all(is_plain_ufunc_call(n) for n in after))

    def run(*args):
        if nothing_raises_after and ufuncs_cannot_raise():
            return compiled(*args)
        states = [args[i] for i in positions] + embedded
        saved = saved_states(states)
        try:
            return compiled(*args)
        except BaseException:
            restore_states(states, saved)
            raise

    run.__wrapped__ = compiled
    return run
