"""A graph's compile jobs: its payload, split into parts, sent to the workers at capture.

Part of the tiered numba backend: ``front`` sends a new graph's jobs (``send``) from its
preparing thread *before* that thread imports numba and builds the graph's program, so the
workers compile while the caller's process does both (a good part of a second each; most of
the time to the compiled tier was these two, one after the other, before any worker had the
graph). ``tiering`` then settles the jobs with what the build found (``Jobs.keep``) and
switches once they are done. No numba here.

Parts: a graph goes out in ``workers.max_workers()`` parts, one job each, which the pool deals
to its workers as they come free; the part ``p`` of ``n`` compiles the fusion groups whose
index is ``p`` modulo ``n`` (``backend.kernel_shares``), so one graph's independent kernels
compile side by side. A graph with control flow goes out whole (its loop programs and
subgraphs would compile in every part). The workers run the same backend on the same graph,
so they generate the same kernel sources and cache keys as the caller's build. Once the build
knows the groups, parts with no kernel are withdrawn; all of them when the graph has nothing
to compile or all its kernels are on disk already. A withdrawn job ends at once, whether or not
a worker has taken it (``workers.Pool.withdraw``: the worker skips it if it has not begun it).

Symbolic sizes refuse to pickle in general (their identity belongs to a capture); a payload's
graph is only compiled, so they are pickled by structure (``dumps``).

Each job's answer carries the worker's log (its pid, when it received the job, built the
program, compiled each kernel); ``timeline`` merges them with the caller's own events into
the graph's report (``NumbaReport.timeline``: where the seconds to the compiled tier went).
"""

from __future__ import annotations

import io
import pickle
import time
from typing import Any

from npdynamo import config, progress
from npdynamo.backends.numba import cache_location, workers
from npdynamo.fx.graph_module import GraphModule
from npdynamo.fx.subgraphs import nodes_with_subgraphs
from npdynamo.logs import get_logger
from npdynamo.ops.symbolic import SymInt


class Jobs:
    """The jobs of one graph's parts, seen as one."""

    def __init__(self, jobs: list[workers.CompileJob]) -> None:
        self.jobs = jobs

    def done(self) -> bool:
        return all(job.done() for job in self.jobs)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in self.jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not job.wait(left):
                return False
        return True

    def keep(self, parts: set[int]) -> None:
        """Withdraw the jobs of the other parts (``workers.Pool.withdraw``)."""
        for part, job in enumerate(self.jobs):
            if part not in parts:
                workers.pool().withdraw(job)

    def live(self) -> list[workers.CompileJob]:
        """The jobs not withdrawn."""
        return [job for job in self.jobs if job.status != workers.WITHDRAWN]

    def status(self) -> str:
        jobs = self.live()
        done = sum(job.kernels[0] for job in jobs)
        total = sum(job.kernels[1] for job in jobs)
        text = f"kernels {done}/{total}" if total else "kernels 0/?"
        return f"{text} ({len(jobs)} parts)" if len(jobs) > 1 else text


def send(gm: GraphModule, example_inputs: list) -> Jobs | None:
    """Send ``gm``'s parts to the compile workers now; ``None`` when no worker can take them
    (no writable cache for their kernels, or a payload that does not pickle)."""
    if cache_location.cache_dir() is None:
        return None
    parts = 1 if any(True for _ in nodes_with_subgraphs(gm.graph)) else workers.max_workers()
    try:
        payloads = [dumps(gm, example_inputs, part, parts) for part in range(parts)]
    except Exception as exc:  # an input or constant that does not pickle: compile here
        get_logger("tiers").debug("graph compiled in the caller's process: its payload does "
                                  "not pickle (%s: %s)", type(exc).__name__, exc)
        return None
    return submit(payloads)


def submit(payloads: list[bytes]) -> Jobs:
    what = progress.current_what()
    return Jobs([workers.pool().submit(payload, what) for payload in payloads])


def parts_with_kernels(names: list[str], parts: int) -> set[int]:
    """The parts (of ``parts``) that have kernels among a program's kernel ``names``: one per
    fusion group at most (a group's serial and parallel versions share a part)."""
    groups = len({name.removesuffix("_parallel") for name in names})
    return set(range(min(groups, parts)))


#: the knobs copied into the worker (capture's knobs do not matter to a backend)
_CONFIG = ("verbose",)


def _symint(terms: Any, hint: Any) -> SymInt:
    value = object.__new__(SymInt)
    value.terms, value.hint = terms, hint
    return value


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is SymInt:
            return _symint, (obj.terms, obj.hint)
        if type(obj) is GraphModule:  # its generated function is made again on the other side
            return GraphModule, (obj.graph, obj.name)
        return NotImplemented


def dumps(gm: GraphModule, example_inputs: list, part: int = 0, parts: int = 1) -> bytes:
    """The payload of one job (raises whatever pickling raises: then there is no job)."""
    buffer = io.BytesIO()
    settings = {name: getattr(config, name) for name in _CONFIG}
    # the environment as it is now (a warm worker was started under an earlier one): where the
    # cache is, the thread policy
    settings["environ"] = config.worker_environment()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
        (gm, example_inputs, settings, part, parts))
    return buffer.getvalue()


def timeline(events: list[tuple[float, str]], jobs: Jobs | None,
             begun: float) -> list[tuple[float, str, str]]:
    """(seconds after ``begun``, where, what) of the caller's ``events`` and of every job's
    worker log, in order of time (all times are ``time.time()``)."""
    rows = [(t - begun, "caller", what) for t, what in events]
    for job in jobs.live() if jobs is not None else []:
        answer = job.result if job.status == workers.DONE else None
        if not isinstance(answer, dict):
            continue
        part, parts = answer.get("part", (0, 1))
        where = f"worker {answer.get('pid')} (part {part + 1}/{parts})"
        rows += [(t - begun, where, what) for t, what in answer.get("log", ())]
    return sorted(rows, key=lambda row: row[0])
