"""A graph's scheduled form, for the eager backend (its ops) and the numba backend (its program).

``eager_candidate(graph, serial, aliases, temps)`` cuts a graph into one step per op, each spelt
as the eager backend's generated code spells it (``fx.codegen.Emitter``), run functionally
(every op makes its own result or reuses a temporary only it reads; nothing else is written in
place, so no step can see another's writes).
``program_candidate(program, graph, partition, kernels, aliases)`` cuts a numba program into its
own steps (a kernel with its buffers, a NumPy call), with the same lines the serial program
runs: its kernels run serially (a kernel using every core gains nothing beside another), and a
kernel that computes into an input keeps doing so only when no NumPy call follows it in the
program (else it computes into a copy: a NumPy call after it could raise once the input is
written).

Either gives ``None`` when the plan has one stream, or (``mode() == "auto"``) when its estimated
gain is below ``MIN_GAIN_NS``: the serial form then runs as before, untimed. Otherwise the
backend lets the tuner time both forms on the first warm calls and keep the faster
(``NPDYNAMO_SCHEDULE=always`` skips the timing: tests).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo import config
from npdynamo.backends.report import BackendReport
from npdynamo.backends.scheduler import threads
from npdynamo.backends.scheduler.plan import (
    CALL_NS,
    HANDOVER_NS,
    Schedule,
    Step,
    assign_streams,
    dependencies,
    op_cost,
)
from npdynamo.backends.scheduler.runner import RESERVED, calm, reserved, scheduled_function
from npdynamo.fx.codegen import Emitter
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import under_errstate
from npdynamo.ops.random import GENERATOR_TYPES, GeneratorMeta

#: A plan must save at least this much (estimated ns per call) to be offered to the tuner.
MIN_GAIN_NS = 40_000.0
#: ... and finish within this fraction of the serial estimate.
MIN_SPEEDUP = 0.85


def mode() -> str:
    """``NPDYNAMO_SCHEDULE``: ``auto`` (default: measured), ``never``, or ``always``."""
    return config.switch("NPDYNAMO_SCHEDULE")


@dataclass
class ScheduleReport(BackendReport):
    """The schedule of one graph and what the tuner chose (shown by ``explain``)."""

    plan: list[str] = field(default_factory=list)
    decision: str = "not decided yet (timed on the first warm calls)"
    backend: str = "eager"
    run: Callable | None = field(default=None, repr=False)  # the scheduled form itself
    source: str = field(default="", repr=False)  # its generated code
    #: one item: how many calls the scheduled form reran serially after a stream failed
    reruns: list[int] = field(default_factory=lambda: [0], repr=False)

    def __str__(self) -> str:
        head = f"{self.backend} backend, scheduled form: {self.plan[0] if self.plan else ''}"
        decision = [f"  {self.decision}"] if self.decision else []
        return "\n".join([head, *(f"  {line}" for line in self.plan[1:]), *decision])


@dataclass
class Candidate:
    """A scheduled form ready for the tuner."""

    run: Callable[..., tuple]
    schedule: Schedule
    report: ScheduleReport


def worth_it(schedule: Schedule) -> bool:
    if len(schedule.streams) < 2:
        return False
    if mode() == "always":
        return True
    gain = schedule.serial_ns - schedule.makespan_ns
    return gain >= MIN_GAIN_NS and schedule.makespan_ns <= MIN_SPEEDUP * schedule.serial_ns


def _plan(steps: list[Step], aliases: dict[Node, frozenset[Node]]) -> Schedule:
    # (``always``: every independent step goes side by side, however small: tests)
    handover = 0.0 if mode() == "always" else HANDOVER_NS
    return assign_streams(steps, dependencies(steps, aliases), threads.stream_count(), handover)


def _generators(graph: Graph, inputs: list[Node]) -> Callable[[tuple], list] | None:
    draws = [n for n in graph.nodes if getattr(n.target, "impure", False)]
    if not draws:
        return None
    positions = [i for i, node in enumerate(inputs)
                 if isinstance(node.meta.get("val"), GeneratorMeta)]
    embedded = list({id(n.args[0]): n.args[0] for n in draws
                     if n.args and isinstance(n.args[0], GENERATOR_TYPES)}.values())
    return lambda args: [args[i] for i in positions] + embedded


def _outputs(graph: Graph) -> tuple:
    out = graph.output_node.args[0] if graph.output_node.args else ()
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _names_free(graph: Graph) -> bool:
    return not any(reserved(n.name) for n in graph.nodes)


def eager_candidate(graph: Graph, serial: Callable[..., tuple],
                    aliases: dict[Node, frozenset[Node]],
                    temps: dict[Node, Node] | None = None) -> Candidate | None:
    """The scheduled form of ``graph`` on the eager backend, or None (see the docstring).
    ``aliases``: which arrays each value may share memory with (``inplace.may_alias``);
    ``temps``: ufunc calls that may compute into an operand's buffer (``inplace.temporary_plan``:
    the operand is a temporary the graph made, read for the last time there). The scheduled form
    does so where that call is the operand's only reader, so that no stream can still be reading
    the buffer: it saves the serial form's allocation (a large array's page faults) too."""
    if (mode() == "never" or not _names_free(graph) or graph.output_node is None
            or under_errstate(graph)):
        return None  # (ops in a user's np.errstate block: their own state, in the serial form)
    emitter = Emitter({n.name for n in graph.nodes} | RESERVED)
    steps = []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        into = (temps or {}).get(node)
        if into is not None and list(into.users) == [node]:
            operands = [emitter.expr(a) for a in node.args] + [f"out={into.name}"]
            line = f"{node.name} = {emitter.target(node.target)}({', '.join(operands)})"
        else:
            line = f"{node.name} = {emitter.call(node)}"
        steps.append(Step(
            index=len(steps), label=f"{node.name}", lines=[line],
            defines=(node,), uses=tuple(node.all_input_nodes), cost=op_cost(node),
            impure=getattr(node.target, "impure", False),
            blas=getattr(node.target, "blas", False)))
    outputs = _outputs(graph)
    render = emitter.expr(outputs)  # (before the symbols check: it may read sizes too)
    if emitter.symbols or len(steps) < 2:
        return None  # sizes read per call: not planned (their costs are unknown anyway)
    schedule = _plan(steps, aliases)
    if not worth_it(schedule):
        return None
    run, source, reruns = scheduled_function(
        schedule, [p.name for p in graph.placeholders], outputs, lambda _: render,
        emitter.values, serial, limit_blas=any(s.blas for s in steps),
        generators=_generators(graph, list(graph.placeholders)))
    report = ScheduleReport(schedule.describe(), backend="eager", run=run, source=source,
                            reruns=reruns)
    return Candidate(run, schedule, report)


_FALLBACK = re.compile(r"return _fallback\(exc, \$ARGS, \d+\)")


def program_candidate(program, graph: Graph, partition, kernels: dict,
                      aliases: dict[Node, frozenset[Node]],
                      calm_only: set[int]) -> Candidate | None:
    """The scheduled form of a numba ``Program`` (see the module docstring), or None.
    ``kernels``: fusion group -> its kernel entry; ``calm_only``: the groups followed by a NumPy
    call (``program.needs_calm_state``)."""
    if (mode() == "never" or not _names_free(graph) or program.symbols or under_errstate(graph)
            or len(program.step_lines) != len(partition.steps)
            or any(name in RESERVED for name in program.globals if name != "forward")):
        return None
    steps = []
    for i, (item, lines) in enumerate(zip(partition.steps, program.step_lines)):
        lines = [_FALLBACK.sub("raise", line) for line in lines]
        if item in kernels:  # a fusion group
            into = kernels[item][0].into
            size = item.size if type(item.size) is int else 0
            steps.append(Step(
                index=i, label=f"kernel{item.index}({', '.join(item.op_names[:4])}"
                               f"{', ...' if len(item.op_names) > 4 else ''})",
                lines=lines, defines=tuple(item.outputs),
                uses=tuple(dict.fromkeys([*item.inputs, *into.values()])),
                cost=CALL_NS + 0.5 * size * max(1, len(item.nodes)),
                may_raise=any("raise" == line.strip() for line in lines),
                writes=() if item.index in calm_only else tuple(into.values())))
        else:
            steps.append(Step(
                index=i, label=item.name, lines=lines, defines=(item,),
                uses=tuple(item.all_input_nodes), cost=op_cost(item),
                impure=getattr(item.target, "impure", False),
                blas=getattr(item.target, "blas", False)))
    if len(steps) < 2:
        return None
    schedule = _plan(steps, aliases)
    if not worth_it(schedule):
        return None
    namespace = dict(program.globals)
    # serial kernels; a kernel followed by a NumPy call computes into a copy of its input
    namespace.update(_parallel_from=sys.maxsize, _direct=True, _calm=_never)
    fell_back = program.globals

    def may_schedule() -> bool:
        return not fell_back["_fell_back"] and calm()

    outputs = _outputs(graph)
    run, source, reruns = scheduled_function(
        schedule, [p.name for p in graph.placeholders], outputs, program.render,
        namespace, program.fn, limit_blas=any(s.blas for s in steps),
        generators=_generators(graph, list(graph.placeholders)), may_schedule=may_schedule)
    report = ScheduleReport(schedule.describe(), backend="numba", run=run, source=source,
                            reruns=reruns)
    return Candidate(run, schedule, report)


def _never() -> bool:
    return False
