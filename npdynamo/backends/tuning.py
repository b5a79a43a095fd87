"""Each compiled graph checks, on its first warm calls, which way of running it is fastest here.

The last step of the numba backend, and of the eager backend for a graph the scheduler could run
on several threads (``backends/scheduler``). Whether a graph is fastest as fused kernels with
parallel loops, as serial kernels, or as plain NumPy calls (the eager graph) depends on this
machine, its load and the sizes: a parallel kernel whose thread loses its core waits for it, so
with one core kept busy by another process the parallel version can be many times slower than
the serial one, and a graph of a few tiny ops may run faster as NumPy calls than through a
program. The graph is functional, so running the same call through either candidate is safe:
every candidate returns what the eager backend returns (numba's within floating-point
tolerance).

So the callable returned to the entry runs each warm call through ONE candidate, in turn: a first
round per candidate that is not counted (it may load a kernel or start numba's thread pool), then
``TIMED_ROUNDS`` rounds (``EXTRA_ROUNDS`` more when every call took microseconds, or when the
two best are within ``CLOSE`` of each other) in which each
candidate runs twice in a row and only the second call is timed: the first brings back what the
other candidates' calls took away (a parallel kernel's threads have gone to sleep during a
3 ms NumPy call; its buffers and data have left the cache), as a graph called again and again
has them. After each timed round a candidate more than ``LOSER_FACTOR`` times slower than the
best (and slower than ``FAST_CALL_S``) is dropped: it cannot win, and a NumPy graph's
allocations slow the kernels that run after it for a few calls. The candidate with the smallest
best time (a side-by-side form: after ``PROBATION_CALLS`` calls whose median confirms it; a
form that holds the GIL, such as the eager graph against numba kernels: only when it is faster
by ``GIL_MARGIN``, see there) runs every later call,
through one closure variable (no timing, no lookup). The choice and the times go to the graph's
report (``explain``) and to the ``npdynamo.tuning`` log. A candidate already timed on these
sizes before the tuning began (the eager graph, on the eager tier while the kernels compiled:
``measured``) is not run again unless its time shows it might win.
A candidate timed while this process's own background work ran (a compile worker importing
numba or compiling, a thread here importing it: ``own_work.busy``) was timed on a core it did not
have: the choice then stands only until that work is over, and the race is run again once
(``RETIME_POLL_S``). ``NPDYNAMO_NUMBA_TUNE=0`` turns it off: the numba program then always runs
as the thread policy decided.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from npdynamo import config
from npdynamo.backends import own_work
from npdynamo.backends.report import BackendReport, Compiled
from npdynamo.logs import get_logger

#: Timed rounds per candidate after the uncounted first one.
TIMED_ROUNDS = 2
#: A graph whose candidates all ran faster than this (seconds) gets ``EXTRA_ROUNDS`` more timed
#: rounds before the choice: one preemption decides a 2-round choice between microsecond calls on
#: a busy machine, and more rounds of such calls cost next to nothing.
FAST_CALL_S = 1e-4
EXTRA_ROUNDS = 6
#: Candidates whose best times are this close after ``TIMED_ROUNDS`` get ``EXTRA_ROUNDS`` more.
CLOSE = 1.25
#: After a timed round, a candidate slower than this many times the best one (and than
#: ``FAST_CALL_S``) is not run again.
LOSER_FACTOR = 2.0
#: A candidate running on several threads at once (the scheduler's form) is as fast as it can
#: be only while another core is free. On a shared machine one call of it can lose that core
#: (a descheduled stream holds the others up at their next wait), so it is never dropped on
#: one timed call: it runs every timed round. And it is kept only when its best call beats the
#: best single-threaded candidate by this factor: when two forms are this close, the serial one
#: is as fast and does not depend on a free core.
SIDE_BY_SIDE_MARGIN = 0.95
#: A side-by-side form that wins on its best call then runs this many calls on probation: it
#: is kept only if their median beats the best single-threaded candidate's best call by
#: ``SIDE_BY_SIDE_MARGIN``. One fast call among slow ones (a stream that found BLAS's pool
#: idle) made a schedule 1.7x slower than serial win on its best call.
PROBATION_CALLS = 9
#: A candidate that holds the GIL between its operations (the eager graph: one NumPy call after
#: another) wins over one that releases it while its kernels run (a numba program) only when
#: its best call beats that one's by this factor (calls of more than ``FAST_CALL_S``: a call of
#: microseconds holds the GIL about as long as the Python code around it does, either way).
#: Closer than that, the two are within the noise of the tuner's timed calls, and the form
#: that releases the GIL lets the caller's other threads run meanwhile (a data loader's reader
#: threads beside a training step: in two quiet runs of ``benchmarks.schedule``, the Grain loop
#: took 1.07x max(load, step) per batch beside the numba MLP step and 1.22x beside its eager
#: form, which held the GIL 49% of its time).
GIL_MARGIN = 0.95

#: A choice made from calls timed while this process's own background work ran is provisional:
#: its calls check, at most this often (seconds), whether that work is over, and then the race
#: is run again, once. In a fresh process whose kernels are all on disk, the graph switches to
#: them after one compile worker has imported numba, while the second worker still imports it
#: (a core's worth of work for a second or more on this 2-core machine): the MLP step's race ran
#: beside it.
RETIME_POLL_S = 0.01

#: Calls that went through a tuning step (a candidate's trial or probation call), over all
#: graphs of the process: a benchmark warms a function up until its calls stop adding to it.
_tuning_calls = 0


def tuning_calls() -> int:
    """How many calls so far ran a tuning step (timed or not) instead of the chosen form."""
    return _tuning_calls


@dataclass
class Candidate:
    """One way of running a graph: ``activate()`` then ``run(*inputs)``."""

    label: str
    run: Callable[..., tuple]
    activate: Callable[[], None] = lambda: None
    #: ``run`` runs on several threads at once (a scheduled form): its speed needs a free core
    side_by_side: bool = False
    #: ``run`` holds the GIL between its operations (NumPy calls one after another), where
    #: another candidate releases it for most of the call (compiled ``nogil`` kernels)
    holds_gil: bool = False


def tuning_enabled() -> bool:
    return config.environment("NPDYNAMO_NUMBA_TUNE", "1").strip().lower() not in (
        "0", "false", "off", "no", "never")


def calls_in_order(candidates: list[Candidate], rounds: int,
                   first: bool) -> list[tuple[Candidate, bool]]:
    """The tuning calls, (candidate, timed): with ``first``, one untimed call of each, in reverse
    order; then per round each candidate twice in a row, the second call timed.

    The untimed calls go last to first because the first of them is the graph's first call, its
    start-up: the backend lists the eager graph first (for the timed rounds' sake) and the
    program it has just compiled and run after it, so the first call runs the loaded kernels
    rather than the NumPy calls (a GELU's ``x**3``: 0.5 ms against 65 ms)."""
    calls = [(c, False) for c in reversed(candidates)] if first else []
    for _ in range(rounds):
        for c in candidates:
            calls += [(c, False), (c, True)]
    return calls


def fastest_of(
    candidates: list[Candidate],
    record: Callable[[str], None],
    clock: Callable[[], float] = time.perf_counter,
    report: BackendReport | None = None,
    measured: dict[str, float] | None = None,
    busy: Callable[[], bool] | None = None,
) -> Compiled:
    """The graph (with ``report``) timing ``candidates`` on its first warm calls, then running
    the fastest: it retargets to the winner once chosen, so its followers (an entry's
    generated code) skip the timing function's frame from then on.

    ``record(text)`` receives the decision (candidate times and the one chosen).
    ``measured`` (label -> best seconds a call) holds what some candidates' calls took before
    the tuning began, on these inputs' sizes: the eager graph's calls on the eager tier while
    the kernels compiled (``tiers.Tiered``). Those candidates are not run for timing: after
    the first timed round of the others, one whose measured time is within ``LOSER_FACTOR``
    of the best (it might win: its calls ran beside the compile, so they may have been
    slowed) joins the rounds as any other candidate; one further behind is out, without
    running the calls that would only show it again.

    ``busy()`` (default ``own_work.busy``) says whether this process's background work runs:
    a choice timed while it did is run again once it is over (``RETIME_POLL_S``)."""
    busy = own_work.busy if busy is None else busy
    if len(candidates) == 1:
        candidates[0].activate()
        return Compiled(candidates[0].run, report)
    measured = measured or {}
    seeded = [c for c in candidates if c.label in measured]
    if len(seeded) == len(candidates):  # nothing to compare them with here: time them all
        seeded = []
    best: dict[str, float] = {}
    alive = [c for c in candidates if c not in seeded]
    queue = deque(calls_in_order(alive, 0, first=True))
    rounds_left = TIMED_ROUNDS
    out: list[Candidate] = []  # measured before, and too slow to be timed again
    chosen: Callable[..., tuple] | None = None
    extended = False
    disturbed = retimed = False  # a call timed while busy(); the race run again already

    def single_threaded() -> list[Candidate]:
        return [c for c in alive if not c.side_by_side]

    def gil_free_contender(single: list[Candidate]) -> Candidate | None:
        """While the fastest of ``single`` holds the GIL: the fastest of them that does not
        (``None`` when there is none, when the fastest releases the GIL, or when the calls
        take microseconds)."""
        if not single or not min(single, key=lambda c: best[c.label]).holds_gil:
            return None
        free = [c for c in single if not c.holds_gil]
        other = min(free, key=lambda c: best[c.label]) if free else None
        return other if other is not None and best[other.label] >= FAST_CALL_S else None

    def next_round() -> bool:
        """Queue the next timed round of the candidates that can still win; False when the
        choice can be made."""
        nonlocal alive, rounds_left, extended
        if best:
            # a candidate this much slower cannot win, and its calls would disturb the others'
            # (a NumPy graph's allocations slow the next kernels for a few calls)
            # (a microsecond call may just have lost its core: it stays, see FAST_CALL_S)
            # (while a form holding the GIL leads, the fastest form that releases it stays
            # too: GIL_MARGIN decides between the two, on their best of every round, and one
            # call of a 2.5 ms numba step that lost its core or the GIL took 10 ms)
            top = min(best.values())
            contender = gil_free_contender(single_threaded())
            alive = [c for c in alive if c.side_by_side or c is contender
                     or best[c.label] <= max(LOSER_FACTOR * top, FAST_CALL_S)]
            times = sorted(best[c.label] for c in alive)
            # a side-by-side form in the lead also gets the extra rounds: two timed calls of
            # the serial form that both lost the core made a 2x slower schedule win once;
            # and so does a form holding the GIL, against its contender
            leader = min(alive, key=lambda c: best.get(c.label, float("inf")))
            if not rounds_left and not extended and len(times) > 1 and (
                    times[-1] < FAST_CALL_S or times[1] < CLOSE * times[0]
                    or leader.side_by_side or contender is not None):
                extended, rounds_left = True, EXTRA_ROUNDS
            if seeded:
                revive(top)
        if not rounds_left or (len(alive) == 1 and not seeded):
            return False
        rounds_left -= 1
        queue.extend(calls_in_order(alive, 1, first=False))
        return True

    def revive(top: float) -> None:
        """After the first timed round: a measured candidate that might win joins the rounds
        (untimed first, as every candidate's first call)."""
        nonlocal rounds_left
        for c in seeded:
            if measured[c.label] <= max(LOSER_FACTOR * top, FAST_CALL_S):
                alive.append(c)
                queue.append((c, False))
                rounds_left = max(rounds_left, TIMED_ROUNDS)
            else:
                best[c.label] = measured[c.label]
                out.append(c)
        seeded.clear()

    def settle(winner: Candidate, note: str) -> Callable[..., tuple]:
        winner.activate()
        times = ", ".join(f"{c.label} {best[c.label] * 1e3:.3f} ms"
                          + (" (its calls while compiling)" if c in out else "")
                          for c in candidates if c.label in best)
        if retimed:
            note += "; timed again once this process's compile work was over"
        elif disturbed:
            note += "; timed while this process's compile work ran: until it is over"
        text = f"runs as {winner.label} (best warm call: {times}{note})"
        record(text)
        get_logger("tuning").info("graph %s", text)
        run = provisional(winner) if disturbed and not retimed else winner.run
        tuned.retarget(run)
        return run

    def provisional(winner: Candidate) -> Callable[..., tuple]:
        """``winner.run``, until this process's background work is over: then the race again."""
        next_check = clock() + RETIME_POLL_S

        def provisional_call(*inputs):
            nonlocal next_check
            if clock() >= next_check:
                next_check = clock() + RETIME_POLL_S
                if not busy():
                    race_again()
                    return call(*inputs)
            return winner.run(*inputs)

        return provisional_call

    def race_again() -> None:
        nonlocal chosen, alive, rounds_left, extended, disturbed, retimed
        kept = {c.label: best[c.label] for c in out}  # (measured before: never run again)
        best.clear()
        best.update(kept)
        alive = [c for c in candidates if c not in out and c not in seeded]
        chosen, extended, disturbed, retimed = None, False, False, True
        rounds_left = TIMED_ROUNDS - 1
        queue.clear()
        queue.extend(calls_in_order(alive, 1, first=False))
        tuned.retarget(call)

    def releasing(single: list[Candidate]) -> tuple[Candidate, str]:
        """The fastest of ``single``, or the fastest of them that releases the GIL when the
        fastest holds it and beats that one by less than ``GIL_MARGIN`` (with the why)."""
        fastest = min(single, key=lambda c: best[c.label])
        other = gil_free_contender(single)
        if other is not None and best[fastest.label] > GIL_MARGIN * best[other.label]:
            return other, (f"; {fastest.label} was less than {1 - GIL_MARGIN:.0%} faster and "
                           f"holds the GIL between its operations")
        return fastest, ""

    def decide() -> Callable[..., tuple]:
        winner = min(alive, key=lambda c: best[c.label])
        single = single_threaded()
        if winner.side_by_side and single:
            runner_up, _ = releasing(single)
            if best[winner.label] > SIDE_BY_SIDE_MARGIN * best[runner_up.label]:
                return settle(runner_up, f"; {winner.label} was less than "
                                         f"{1 - SIDE_BY_SIDE_MARGIN:.0%} faster")
            return on_probation(winner, runner_up)
        return settle(*releasing(single)) if single else settle(winner, "")

    def on_probation(winner: Candidate, runner_up: Candidate) -> Callable[..., tuple]:
        winner.activate()
        seen: list[float] = []

        def probation_call(*inputs):
            nonlocal chosen
            global _tuning_calls
            _tuning_calls += 1
            start = clock()
            result = winner.run(*inputs)
            seen.append(clock() - start)
            if len(seen) == PROBATION_CALLS:
                median = sorted(seen)[len(seen) // 2]
                if median > SIDE_BY_SIDE_MARGIN * best[runner_up.label]:
                    chosen = settle(runner_up, f"; {winner.label}'s median over its next "
                                               f"{PROBATION_CALLS} calls: {median * 1e3:.3f} ms")
                else:
                    chosen = settle(winner, "")
            return result

        return probation_call

    def call(*inputs):
        nonlocal chosen, disturbed
        global _tuning_calls
        if chosen is not None:
            return chosen(*inputs)
        _tuning_calls += 1
        try:
            candidate, timed = queue.popleft()
        except IndexError:  # another thread took the last tuning call meanwhile
            return alive[0].run(*inputs)
        candidate.activate()
        busy_before = timed and busy()
        start = clock()
        result = candidate.run(*inputs)
        if timed:
            elapsed = clock() - start
            best[candidate.label] = min(best.get(candidate.label, elapsed), elapsed)
            disturbed = disturbed or busy_before or busy()
        if not queue and not next_round():
            chosen = decide()
        return result

    tuned = Compiled(call, report)
    return tuned
