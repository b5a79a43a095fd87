"""The scheduled form of a graph: one generated function per stream, run side by side.

``scheduled_function(schedule, ...)`` generates, for each stream, a function that runs its
steps' lines in program order. Before a step that reads a value another stream computes, it
waits for that step's event and takes the value from the call's shared dict; after a step whose
values another stream (or the result) needs, it stores them there and sets its event. The
entry function runs stream 0 on the calling thread and the others on the scheduler's workers,
each in a copy of the caller's context (NumPy's error state lives in a context variable), then
returns the outputs. Kernels and big NumPy calls release the GIL, so the streams really overlap.

The scheduled form never changes a result:

* it runs only on calls where NumPy's error state is the default one and no warnings filter
  raises, or where every error is ignored (``fp_state``); otherwise, and when another scheduled
  call is running (``threads.busy``), the serial form runs;
* under the default state its streams run with floating-point errors raising (``np.errstate``):
  a step that would warn raises instead. Any exception in any stream stops every stream at its
  next wait; the random generators the graph draws from are put back as they were, and the call
  is rerun by the serial form, which then warns or raises exactly as it always does. This is
  exact because a scheduled run has no other visible effect before it completes: steps that
  write an input come after every step that may raise (``plan.dependencies``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextvars import copy_context

import numpy as np

from npdynamo.backends import fp_state
from npdynamo.backends.scheduler import threads
from npdynamo.backends.scheduler.plan import Schedule
from npdynamo.fx.node import Node
from npdynamo.generated import define
from npdynamo.ops.random import restore_states, saved_states


class _Abort(Exception):
    """Another stream failed: this one stops at its next wait."""


def calm() -> bool:
    """NumPy's default error state with no warnings filter raising a ``RuntimeWarning``, or
    every floating-point error ignored: the states a scheduled call runs under."""
    return fp_state.ufuncs_cannot_raise()


def _raising() -> contextlib.AbstractContextManager:
    """In a stream: errors that would warn raise instead (the default state), or stay ignored
    (a caller's ``np.errstate(all="ignore")``, inherited through the copied context)."""
    if fp_state.error_state_kind() == "ignore":
        return contextlib.nullcontext()
    return np.errstate(divide="raise", over="raise", invalid="raise")


#: Tests only: called before every step of a scheduled form generated while it is set (random
#: pauses there make the streams interleave in every order).
STEP_HOOK: Callable[[], None] | None = None


def _release(events: list[threading.Event]) -> None:
    for event in events:
        event.set()


def scheduled_function(
    schedule: Schedule,
    params: list[str],
    outputs: tuple,
    render_output: Callable[[tuple], str],
    namespace: dict,
    serial: Callable[..., tuple],
    *,
    limit_blas: bool,
    generators: Callable[[tuple], list] | None = None,
    may_schedule: Callable[[], bool] = calm,
) -> tuple[Callable[..., tuple], str, list[int]]:
    """The scheduled callable of ``schedule`` (see the module docstring), its source, and a
    one-item list counting the calls it reran serially after a failed stream.

    ``params``: the graph's input names; ``outputs``/``render_output``: the graph's outputs and
    the expression returning them; ``namespace``: the globals the steps' lines use;
    ``serial``: the serial form (same inputs, same outputs); ``limit_blas``: one BLAS thread
    while the streams run; ``generators(args)``: the random generators the call draws from;
    ``may_schedule()``: whether this call may run scheduled (else ``serial`` runs it)."""
    source = _source(schedule, params, outputs, render_output)
    pool = threads.workers(len(schedule.streams) - 1)
    names = dict(namespace)
    names.update(
        _Abort=_Abort, _Event=threading.Event, _raising=_raising, _release=_release,
        _may_schedule=may_schedule, _busy=threads.busy, _submit=pool.submit, _context=copy_context,
        _serial=serial, _limit=threads.BLAS.limit_to_one if limit_blas else list,
        _unlimit=threads.BLAS.restore, _generators=generators or (lambda args: []),
        _save=saved_states, _restore=restore_states, _hook=STEP_HOOK, _reruns=[0],
        __name__="npdynamo.backends.scheduler.generated",
    )
    forward = define(source, "forward", names, label="schedule", lines=False)
    return forward, source, names["_reruns"]


def _source(schedule: Schedule, params: list[str], outputs: tuple,
            render_output: Callable[[tuple], str]) -> str:
    steps = schedule.steps
    defined_by = {node: s.index for s in steps for node in s.defines}
    out_nodes = {n for n in _flatten(outputs) if isinstance(n, Node) and n in defined_by}
    # the event of each step another stream waits for
    events: dict[int, int] = {}
    for producer, _ in schedule.cross_edges():
        events.setdefault(producer, len(events))
    # values read on another stream than their step's, or returned
    shared: dict[int, list[Node]] = {}
    for step in steps:
        for used in step.uses:
            at = defined_by.get(used)
            if at is not None and schedule.stream_of[at] != schedule.stream_of[step.index]:
                shared.setdefault(at, []).append(used)
    for node in out_nodes:
        shared.setdefault(defined_by[node], []).append(node)
    args = ", ".join(params)
    head = f"_env, _ev, _fail{', ' if params else ''}{args}"
    lines: list[str] = []
    for k, members in enumerate(schedule.streams):
        lines += [f"def _stream_{k}({head}):", "    try:", "        with _raising():"]
        body: list[str] = []
        waited: set[int] = set()
        loaded: set[Node] = set()
        # each value this stream computes or takes, freed after its last use here (the serial
        # forms free their temporaries the same way: the next allocation reuses the memory)
        last_use = {node: i for i in members for node in (*steps[i].uses, *steps[i].defines)
                    if node in defined_by}
        freed: dict[int, list[str]] = {}
        for node, i in last_use.items():
            freed.setdefault(i, []).append(node.name)
        for i in members:
            step = steps[i]
            for p in sorted(schedule.preds[i]):
                if schedule.stream_of[p] != k and p not in waited:
                    waited.add(p)
                    body += [f"_ev[{events[p]}].wait()", "if _fail:", "    raise _Abort"]
            for used in step.uses:
                at = defined_by.get(used)
                if at is not None and schedule.stream_of[at] != k and used not in loaded:
                    loaded.add(used)
                    body.append(f"{used.name} = _env[{used.name!r}]")
            if STEP_HOOK is not None:
                body.append("_hook()")
            body += step.lines
            for node in dict.fromkeys(shared.get(i, ())):
                body.append(f"_env[{node.name!r}] = {node.name}")
            if i in events:
                body.append(f"_ev[{events[i]}].set()")
            if freed.get(i):
                body.append(f"del {', '.join(sorted(freed[i]))}")
        lines += ["            " + line for line in body or ["pass"]]
        lines += ["    except BaseException as exc:", "        _fail.append(exc)",
                  "        _release(_ev)", ""]
    call = f"({args},)" if len(params) == 1 else f"({args})"
    lines += [
        f"def forward({args}):",
        "    if not _may_schedule() or not _busy.acquire(False):",
        f"        return _serial({args})",
        "    _fail = []",
        "    try:",
        "        _env = {}",
        f"        _ev = [_Event() for _ in range({len(events)})]",
        f"        _gens = _generators({call})",
        "        _states = _save(_gens) if _gens else None",
        "        _blas = _limit()",
        "        try:",
        *(f"            _future_{k} = _submit(_context().run, _stream_{k}, {head})"
          for k in range(1, len(schedule.streams))),
        f"            _stream_0({head})",
        *(f"            _future_{k}.result()" for k in range(1, len(schedule.streams))),
        "        finally:",
        "            _unlimit(_blas)",
        "    finally:",
        "        _busy.release()",
        "    if _fail:",
        "        for exc in _fail:",
        "            if not isinstance(exc, Exception):",  # Ctrl-C, exit: never swallowed
        "                raise exc",
        "        _reruns[0] += 1",
        "        if _states is not None:",
        "            _restore(_gens, _states)",
        f"        return _serial({args})",
        *(f"    {node.name} = _env[{node.name!r}]" for node in sorted(
            out_nodes, key=lambda n: defined_by[n])),
        f"    return {render_output(outputs)}",
    ]
    return "\n".join(lines) + "\n"


#: Names the generated code uses: a graph whose values are named so is not scheduled.
RESERVED = frozenset({
    "_env", "_ev", "_fail", "_Abort", "_Event", "_raising", "_release", "_may_schedule", "_busy",
    "_submit", "_context", "_serial", "_limit", "_unlimit", "_generators", "_save", "_restore",
    "_gens", "_states", "_blas", "_hook", "_reruns", "forward", "exc",
})


def reserved(name: str) -> bool:
    return name in RESERVED or name.startswith(("_stream_", "_future_"))


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for item in value for x in _flatten(item)]
    if isinstance(value, dict):
        return [x for item in value.values() for x in _flatten(item)]
    return [value]
