"""The numba backend's first answer: a graph's eager tier, before numba is even imported.

Importing numba takes a good part of a second, and a graph's first call should cost what
NumPy costs. So with tiers on (``config.tiered``) and concrete example inputs, ``start``
returns the graph's ``Tiered`` callable at once, running its eager tier, and a background
thread of this process does the rest: it sends the graph to the compile workers first
(``jobs.send``, no numba needed), then imports the backend and builds the graph's program
(fusion, kernel sources, kernel modules: no compile) while the workers compile, and settles the
jobs with what the build found (``tiering.prepare``: parts with no kernel withdrawn, all of them
when every kernel is in the disk cache already). The switch to the compiled tier then waits for
the thread and the workers; with every kernel already on disk it comes at the next call (a
load).

The thread's own work waits until a worker has imported numba (``_prepare``), unless an
earlier graph's thread has imported the numba side here already: numba's import and the
backend's (about 0.4 s of a core, the GIL held) are most of that work, and the caller's calls
need the GIL between their NumPy operations (a thread importing numba made ten plain calls of
numpy-benchmarks' euclidean_distance_square take 1.4-2.5x their time, and a hundred of
check_mask 1.1-1.5x, on a busy machine). Until the worker is ready the build would only find
what the worker finds once it is, so the import comes later, beside the worker's compile, and
out of the first calls of a function called only a few times. Its cost: a program's first
graph, when its kernels are on disk already, switches after a worker's numba import (the
worker then skips the job), and one whose kernels compile faster than the thread builds
waits for the build.

The main thread's calls run meanwhile. While the thread works the interpreter's switch
interval is lowered (``_switching_often``): a caller's NumPy calls let go of the GIL inside
each large operation, and at the default 5 ms each of them then waited up to that long to get
it back from this thread (grouping's calls took ten times their plain time while its graph
compiled).

Whatever goes wrong in the thread (an error, a fork that left it behind in the parent) makes
the switch compile the graph in the caller's thread, as without tiers.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from npdynamo import config, progress
from npdynamo.backends import own_work, tiers
from npdynamo.backends.eager import eager_forward
from npdynamo.backends.numba import jobs, workers
from npdynamo.backends.numba.report import NumbaReport
from npdynamo.backends.report import Compiled
from npdynamo.fx.subgraphs import under_errstate
from npdynamo.ops.meta import ArrayMeta, ScalarMeta

_preparing: weakref.WeakSet = weakref.WeakSet()


class Pending:
    """One graph on its way to the compiled tier: prepared by the thread, then compiled by
    workers (``jobs``, or none when everything is on disk or cannot be sent)."""

    def __init__(self, gm: Any, example_inputs: list, report: NumbaReport,
                 eager: Callable[..., tuple]) -> None:
        self.gm, self.example_inputs, self.report, self.eager = gm, example_inputs, report, eager
        self.prepared = threading.Event()
        self.built: Any = None  # the backend's ``Built`` program
        self.jobs: jobs.Jobs | None = None
        self.error: str | None = None  # why preparing failed (then the switch compiles)
        self.begun = time.time()
        #: (time.time(), event) in the caller's process (``jobs.timeline``)
        self.events: list[tuple[float, str]] = [(self.begun, "captured")]

    def note(self, event: str) -> None:
        self.events.append((time.time(), event))

    def done(self) -> bool:
        return self.prepared.is_set() and (self.jobs is None or self.jobs.done())

    def wait(self, timeout: float | None = None) -> bool:
        start = time.monotonic()
        if not self.prepared.wait(timeout):
            return False
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
        return self.jobs is None or self.jobs.wait(left)

    def status(self) -> str:
        if self.jobs is not None:
            return self.jobs.status()
        return "loading" if self.prepared.is_set() else "preparing"


def start(gm: Any, example_inputs: list) -> Compiled | None:
    """The graph's eager tier (``Tiered``), compiled in the background; ``None``: compile it
    now."""
    if not (config.tiered and workers.available() and _concrete(example_inputs, gm)) or \
            under_errstate(gm.graph):  # runs on the eager backend anyway: nothing to compile
        return None
    report = NumbaReport()
    report.tier = "runs on the eager tier while its kernels compile in the background"
    eager = eager_forward(gm)
    pending = Pending(gm, example_inputs, report, eager)
    begun = time.perf_counter()
    holder: list[tiers.Tiered] = []
    shown = progress.background(progress.current_what(), pending.status,
                                lambda: holder[0].serving() if holder else "")

    def finish(job: Pending) -> Compiled | None:
        return _stages()[1](job, holder[0], begun, shown)

    tiered = tiers.Tiered(eager, pending, finish, report)
    holder.append(tiered)
    _preparing.add(pending)
    # (the workers start when ``_prepare`` submits the graph's parts, one per part: not at
    # ``compile()``, so a function that never captures a graph starts none, and not all at
    # once, so a graph that goes out whole does not warm up a second worker for nothing: its
    # set-up takes a core for seconds while the caller runs its calls)
    threading.Thread(target=_prepare, args=(pending,), name="npdynamo-prepare",
                     daemon=True).start()
    return tiered.compiled


#: (prepare, finish) of the numba side (``tiering``), installed when it is imported
_installed: list[tuple[Callable, Callable]] = []


def install(prepare: Callable[[Pending], None], finish: Callable[..., Any]) -> None:
    """Called by ``tiering`` at its import: the numba side of the tiers."""
    _installed[:] = [(prepare, finish)]


#: held while the preparing thread imports the numba side or builds a program (``tiering``):
#: a fork waits for that to end. A fork in the middle would leave the child's module locks, or
#: numba's compiler lock, held by a thread the child does not have: its own import of numba or
#: compile would wait for ever.
fork_guard = threading.Lock()


def numba_side_imported() -> bool:
    """Whether this process has imported the numba side (an earlier graph's thread did)."""
    return bool(_installed)


def _stages() -> tuple[Callable, Callable]:
    if not _installed:  # imported here, off the caller's thread: it imports numba
        with numba_step():
            importlib.import_module("npdynamo.backends.numba.tiering")
    return _installed[0]


class Exiting(Exception):
    """The interpreter exits: a preparing thread begins no step inside numba."""


_exiting = False


@contextlib.contextmanager
def numba_step() -> Iterator[None]:
    """``fork_guard`` held for one step of a preparing thread inside numba (an import, a build,
    a kernel's load); once the interpreter exits (``_at_exit``) none begins: ``Exiting``."""
    with fork_guard:
        if _exiting:
            raise Exiting("the interpreter is exiting")
        yield


#: the interpreter's switch interval while a preparing thread works (seconds; CPython's default
#: is 0.005): a thread waiting for the GIL gets it after this long at most
SWITCH_INTERVAL_S = 0.0005
_switching = threading.Lock()
_working = 0  # preparing threads at work
_interval_before = 0.0  # the switch interval the first of them found
# (a thread importing numba or building here holds a core, and the GIL most of the time: calls
# timed meanwhile are the thread's as much as their own)
own_work.register(lambda: _working)


def _switching_often(begin: bool) -> None:
    """Lower the switch interval as the first preparing thread starts; put it back as the last
    ends, unless someone else changed it meanwhile (theirs stays)."""
    global _working, _interval_before
    with _switching:
        _working += 1 if begin else -1
        if begin and _working == 1:
            _interval_before = sys.getswitchinterval()
            if _interval_before > SWITCH_INTERVAL_S:
                sys.setswitchinterval(SWITCH_INTERVAL_S)
        elif not begin and _working == 0 and sys.getswitchinterval() == SWITCH_INTERVAL_S:
            sys.setswitchinterval(_interval_before)


def _prepare(pending: Pending) -> None:
    _switching_often(True)
    try:
        # the workers first: they compile while this thread imports numba and builds
        pending.jobs = jobs.send(pending.gm, pending.example_inputs)
        if pending.jobs is not None:
            pending.note(f"sent to the compile workers ({len(pending.jobs.jobs)} parts)")
            if not numba_side_imported():  # the imports come after a worker's (docstring)
                _until_a_worker_is_ready(pending.jobs.jobs[0])
                pending.note("a compile worker has imported numba")
        _stages()[0](pending)
    except BaseException as exc:  # noqa: BLE001 - the switch compiles in the caller instead
        pending.error = f"{type(exc).__name__}: {exc}"
    finally:
        pending.prepared.set()
        _switching_often(False)


def prestart() -> None:
    """Start the compile workers now, ahead of any graph, and import the numba side here once
    one of them has imported numba (in a thread of its own, as a graph's preparing thread
    would): the state a program's later graphs find, so their compile is only theirs (a
    benchmark's warm pool, ``benchmarks/compile_cost.py``). The caller's own import, beside
    two workers on two cores, took a core from one of them for 0.1-0.2 s."""
    workers.pool().prestart()
    if not numba_side_imported():
        threading.Thread(target=_import_once_warm, name="npdynamo-prepare", daemon=True).start()


def _import_once_warm() -> None:
    deadline = time.monotonic() + PRESTART_WAIT_S
    while not (workers.pool().warm() or numba_side_imported()):
        if time.monotonic() > deadline:  # no worker came up: the first graph imports it
            return
        time.sleep(0.05)
    _stages()


#: seconds ``prestart``'s thread waits for a worker to import numba
PRESTART_WAIT_S = 120.0


def _until_a_worker_is_ready(job: workers.CompileJob) -> None:
    """Wait until the worker that took ``job`` has imported numba (its "ready"; or the job has
    ended: the worker died, none could start), or any worker has, or another graph's thread
    has imported the numba side here (graphs captured together, more than there are
    workers)."""
    while not (job.worker_ready.wait(0.05) or numba_side_imported() or workers.pool().warm()):
        pass


def _concrete(example_inputs: list, gm: Any) -> bool:
    # real values to run the kernels on (a subgraph's or an AOT graph's metas are not)
    return len(example_inputs) == len(gm.graph.placeholders) and not any(
        isinstance(x, (ArrayMeta, ScalarMeta)) for x in example_inputs)


def _after_fork_child() -> None:
    # the preparing thread stayed in the parent: the child's switch compiles these itself
    for pending in list(_preparing):
        if not pending.prepared.is_set():
            pending.error = "forked"
            pending.prepared = threading.Event()
            pending.prepared.set()
    _switch_back_in_child()


def _switch_back_in_child() -> None:
    """No preparing thread works in a forked child: its switch interval is put back."""
    global _switching, _working
    _switching = threading.Lock()  # (a parent's thread may have held it)
    if _working:
        _working = 1
        _switching_often(False)


def _after_fork_in_child() -> None:
    fork_guard.release()
    _after_fork_child()


#: seconds the interpreter's exit waits for a preparing thread to end the numba step it is in
EXIT_WAIT_S = 10.0


def _at_exit() -> None:
    """At interpreter exit: let a preparing thread end the step it is in (``numba_step``: an
    import of numba, a build, a kernel's load), and begin none after (the guard stays taken).
    Its thread is a daemon: stopped at finalization inside numba, with numba's or LLVM's locks
    held, it hung the finalizing garbage collector (Ctrl-C with compiles pending, about one
    run in twenty)."""
    global _exiting
    _exiting = True
    fork_guard.acquire(timeout=EXIT_WAIT_S)


atexit.register(_at_exit)

if hasattr(os, "register_at_fork"):
    # (the pool's own hook holds its lock through the fork: ``submit`` stays outside the guard)
    os.register_at_fork(before=fork_guard.acquire, after_in_parent=fork_guard.release,
                        after_in_child=_after_fork_in_child)
