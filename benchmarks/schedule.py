"""Serial against scheduled: independent ops side by side, and a loader beside the step.

Before part 1, a machine check: case (a) in plain NumPy on two plain threads, the speed-up
and the CPU time per branch alone and side by side (what this machine itself gives).

Part 1: each workload is compiled three times per backend: serial (``NPDYNAMO_SCHEDULE=never``),
scheduled (``always``: the scheduled form, not timed against anything) and as a user gets it
(``auto``: the tuner times both on the first warm calls and keeps the faster). Ratios are serial
time / that time (> 1: faster than serial). Workloads: (a) two independent branches of equal
cost, each single-threaded (BLAS limited to one thread with threadpoolctl, numba kernels
serial); (b) the training step of a two-layer MLP (forward and backward); (c) Adam updates of six
parameter arrays of mixed sizes; (d) an ensemble of four small MLPs on one batch.

Part 2: the MLP of ``examples/train_grain.py`` trained from its Grain pipeline, the loader's
per-batch cost dialled to about the step's: synchronous, Grain threads (one reader thread and
two), Grain processes. With prefetch an epoch should take about max(load, step) per batch,
synchronous their sum. The ways run in turns, a few epochs each, for several rounds; each row
prints the median epoch and the range, and the fractions of the step's and the loader's time
during which they hold the GIL.

    python benchmarks/schedule.py
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import types
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import npdynamo  # noqa: E402
from benchmarks.common import (  # noqa: E402
    fmt_time,
    interleaved,
    until_own_work_is_over,
    warm_up,
)
from npdynamo.autograd import value_and_grad  # noqa: E402

RNG = np.random.default_rng(0)


def branches(x1, w1, x2, w2):
    y1 = np.maximum(x1 @ w1, 0.0)
    y2 = np.maximum(x2 @ w2, 0.0)
    return y1, y2


def mlp_loss(params, x, y):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), y].mean()


def mlp_step(params, x, y):
    loss, grads = value_and_grad(mlp_loss)(params, x, y)
    for k in params:
        params[k] -= 0.01 * grads[k]
    return loss


def adam(params, grads, ms, vs, t):
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    for k in params:
        ms[k] *= b1
        ms[k] += (1 - b1) * grads[k]
        vs[k] *= b2
        vs[k] += (1 - b2) * grads[k] * grads[k]
        params[k] -= lr * (ms[k] / (1 - b1**t)) / (np.sqrt(vs[k] / (1 - b2**t)) + eps)


def ensemble(models, x):
    return [np.tanh(x @ m["w1"] + m["b1"]) @ m["w2"] + m["b2"] for m in models]


def _mlp(sizes, seed):
    rng = np.random.default_rng(seed)
    return {"w1": rng.standard_normal(sizes[:2]) / np.sqrt(sizes[0]), "b1": np.zeros(sizes[1]),
            "w2": rng.standard_normal(sizes[1:]) / np.sqrt(sizes[1]), "b2": np.zeros(sizes[2])}


def _adam_args():
    shapes = [(1024, 512), (512,), (512, 512), (512,), (512, 64), (64,)]
    params = {f"p{i}": RNG.standard_normal(s) for i, s in enumerate(shapes)}
    grads = {k: RNG.standard_normal(v.shape) for k, v in params.items()}
    return (params, grads, {k: np.zeros_like(v) for k, v in params.items()},
            {k: np.zeros_like(v) for k, v in params.items()}, 3)


CASES = [
    ("(a) two branches, 1 thread each", branches, True,
     lambda: tuple(RNG.standard_normal((384, 384)) for _ in range(4))),
    ("(b) MLP 784-512-10 step, batch 512", mlp_step, False,
     lambda: (_mlp((784, 512, 10), 1), RNG.standard_normal((512, 784)),
              RNG.integers(0, 10, 512))),
    ("(c) Adam, 6 arrays (1024x512 .. 64)", adam, False, _adam_args),
    ("(d) ensemble of 4 MLPs 256-256-10, batch 512", ensemble, False,
     lambda: ([_mlp((256, 256, 10), s) for s in range(4)], RNG.standard_normal((512, 256)))),
]


def _copy(fn, tag: str):
    """``fn`` with a code object of its own: its own cache entries, compiled under the mode
    in force when it is first called."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__,
                              fn.__closure__)


@contextlib.contextmanager
def _env(**values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _compiled(fn, backend: str, mode: str, args: tuple, one_thread: bool):
    """``fn`` compiled under ``NPDYNAMO_SCHEDULE=mode`` and warmed up there (the tuner's
    calls included)."""
    compiled = npdynamo.compile(_copy(fn, f"{backend}_{mode}"), backend=backend)
    extra = {"NPDYNAMO_NUMBA_PARALLEL": "never"} if one_thread else {}
    with _env(NPDYNAMO_SCHEDULE=mode, **extra):
        compiled(*args)
        # the numba graphs compile in the background and read the mode when they switch to
        # their kernels: wait for that inside the block, or they would switch after it under
        # the default mode (and the rows would time the tuner's choice three times)
        npdynamo.synchronize()
        until_own_work_is_over()
        for _ in range(80):  # the tuner's calls: at most 4 candidates x (1 + 2 x 8 rounds)
            compiled(*args)
    return compiled


def _choice(compiled) -> str:
    graphs = npdynamo.inspect(compiled).graphs
    text = str(graphs[0].report) if graphs and graphs[0].report is not None else ""
    if "scheduled form" not in text:
        return "serial (nothing to run side by side)"
    for line in text.splitlines():
        if "runs scheduled" in line:
            return "scheduled (not timed)"
        if "runs as" in line:
            return line.strip().split(" (")[0].replace("runs as ", "")
    return "?"


def _branch_turns(branch: Callable[[int], object], reps: int,
                  side_by_side: bool) -> tuple[float, list[float]]:
    """Wall seconds of ``reps`` calls of ``branch(i)`` for both branches i, one after another on
    this thread or each branch on a thread of its own (started together), and the thread CPU
    seconds per call of each branch."""
    import threading
    import time

    cpu = [0.0, 0.0]
    gate = threading.Barrier(2 if side_by_side else 1)

    def run(i: int) -> None:
        gate.wait()
        start = time.thread_time()
        for _ in range(reps):
            branch(i)
        cpu[i] = (time.thread_time() - start) / reps

    start = time.perf_counter()
    if side_by_side:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        run(0)
        run(1)
    return time.perf_counter() - start, cpu


def machine_check(turns: int = 9, reps: int = 8) -> dict:
    """Case (a) in plain NumPy on plain threads (no npdynamo): what this machine gives two
    single-threaded branches side by side. Per turn, serial wall time over side-by-side wall
    time; and each branch's thread CPU time per call, alone and side by side. CPU time that
    grows side by side means the two cores share something (a host's hyperthread siblings,
    memory bandwidth, a lower clock): no schedule can then reach 2x. A thread is not charged
    for the time it is preempted, but on a loaded machine its caches come back cold, so read
    the CPU times on a quiet one."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)  # (not ``RNG``: the cases' inputs stay what they were)
    a = [rng.standard_normal((384, 384)) for _ in range(2)]
    b = [rng.standard_normal((384, 384)) for _ in range(2)]

    def branch(i: int) -> None:
        np.maximum(a[i] @ b[i], 0.0)

    ratios, alone, together = [], [], []
    with threadpool_limits(1, user_api="blas"):
        _branch_turns(branch, 2, False)
        for _ in range(turns):
            serial, cpu_alone = _branch_turns(branch, reps, False)
            side, cpu_side = _branch_turns(branch, reps, True)
            ratios.append(serial / side)
            alone += cpu_alone
            together += cpu_side
    median = float(np.median(ratios))
    return {"ratio": median, "turns": (min(ratios), max(ratios)),
            "cpu_alone": float(np.median(alone)), "cpu_side": float(np.median(together))}


#: Turns of the three forms per case (each turn starts with the next form: ``interleaved``).
#: Where the tuner keeps the serial form, the tuned column times the same code as the serial
#: one: the ratio is then the noise of two timings, and 9 turns put it at 0.94-1.01x.
TURNS = 15


def _paired(times: dict, label: str) -> tuple[float, float, float]:
    """Serial time over ``label``'s, per turn (the two were timed in the same turn, so a drift
    of the machine's load touches both): the median over the turns, then the lowest and
    highest. A ratio of the two medians would pair a quiet turn of one with a busy one of the
    other."""
    ratios = sorted(a / b for a, b in zip(times["never"]["samples"], times[label]["samples"]))
    return statistics.median(ratios), ratios[0], ratios[-1]


def part_one() -> list[dict]:
    from threadpoolctl import threadpool_limits

    rows = []
    for name, fn, one_thread, make in CASES:
        limit = threadpool_limits(1, user_api="blas") if one_thread else contextlib.nullcontext()
        with limit:
            for backend in ("eager", "numba"):
                args = make()
                fns = {mode: _compiled(fn, backend, mode, args, one_thread)
                       for mode in ("never", "always", "auto")}
                times = interleaved(fns, args, samples=TURNS)
                scheduled, tuned = _paired(times, "always"), _paired(times, "auto")
                rows.append({"case": name, "backend": backend,
                             "serial": times["never"]["median"],
                             "scheduled": times["always"]["median"], "ratio": scheduled[0],
                             "turns": scheduled[1:], "serial_form": _form(fns["never"]),
                             "tuned": times["auto"]["median"], "tuned_ratio": tuned[0],
                             "tuned_turns": tuned[1:], "choice": _choice(fns["auto"]),
                             "others": times["never"]["others"]})
    return rows


def _tuning(compiled) -> str:
    """The numba tuner's line for the first graph of ``compiled`` (``""`` on eager)."""
    graphs = npdynamo.inspect(compiled).graphs
    return getattr(graphs[0].report, "tuning", "") if graphs else ""


def _form(compiled) -> str:
    """The form the tuner runs a numba graph as (``numba``, ``eager`` ...; ``""`` on eager)."""
    tuning = _tuning(compiled)
    return tuning.split(" (")[0].replace("runs as ", "") if "runs as" in tuning else ""


#: The loop's ways of loading: (how, Grain reader threads).
WAYS = (("sync", 1), ("threads", 1), ("threads", 2), ("processes", 1))
#: Rounds of the four ways in turns, and epochs per way and round (an epoch is 16 batches,
#: about 0.1 s: one preemption moves one epoch by 10%, so every epoch's time is kept and the
#: median is printed with the range).
ROUNDS, EPOCHS = 3, 4


def part_two() -> dict:
    """The Grain training loop with the loader's cost about the step's (BLAS on one thread:
    the step takes one core, the loader the other)."""
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "examples"))
    import train_grain
    import train_mlp

    x, y = train_mlp.make_data()
    with threadpool_limits(1, user_api="blas"):
        step = npdynamo.compile(train_mlp.step, backend="numba")
        train_grain.warm_up(step, x, y)
        # (its workers idle, the step's tuning ends: a race run beside a worker's numba import
        # is run again once the worker is done, at a call after this)
        warm_up(step, train_mlp.init_params(), x[:train_grain.BATCH], y[:train_grain.BATCH])
        load0, run = train_grain.per_batch_costs(step, x, y, 0, per_sample=False)
        load8, _ = train_grain.per_batch_costs(step, x, y, 8, per_sample=False)
        per_pass = max((load8 - load0) / 8, 1e-6)
        # Grain's own per-sample work (its shuffle looks each index up on its own) may already
        # cost about a step: then no preprocessing is added
        passes = min(64, max(0, round((run - load0) / per_pass)))
        params = train_mlp.init_params()
        ds = train_grain.dataset(x, y, 1, passes, per_sample=False)
        out = {"passes": passes, "form": _form(step), "tuning": _tuning(step),
               "held_step": npdynamo.gil_held_fraction(step, params, x[:train_grain.BATCH],
                                                       y[:train_grain.BATCH], seconds=0.6),
               "held_load": npdynamo.gil_held_fraction(ds.__getitem__, 0, seconds=0.6)}
        per_epoch = len(x) // train_grain.BATCH
        epochs: dict = {way: [] for way in WAYS}
        loads, steps = [], []
        for _ in range(ROUNDS):  # in turns: a drift of the machine's load touches each way alike
            load, run = train_grain.per_batch_costs(step, x, y, passes, per_sample=False)
            loads.append(load)
            steps.append(run)
            for how, readers in WAYS:
                _, seconds = train_grain.train(step, x, y, EPOCHS, passes, how,
                                               per_sample=False, readers=readers)
                epochs[how, readers] += [s / per_epoch for s in seconds]
        out.update(load=statistics.median(loads), step=statistics.median(steps))
        out["ways"] = {way: (statistics.median(t), min(t), max(t)) for way, t in epochs.items()}
    return out


def gil_bound(loop: dict) -> float:
    """The least a batch can take with reader threads: the loader and the step take turns with
    the GIL, so the times each holds it add up (worker processes have a GIL of their own)."""
    return loop["load"] * loop["held_load"] + loop["step"] * loop["held_step"]


def main() -> None:
    check = machine_check()
    print("Machine check, case (a) in plain NumPy on two plain threads (BLAS one thread each): "
          f"side by side {check['ratio']:.2f}x one after another "
          f"({check['turns'][0]:.2f}-{check['turns'][1]:.2f}x per turn); CPU time per branch "
          f"{fmt_time(check['cpu_alone']).strip()} alone, {fmt_time(check['cpu_side']).strip()} "
          f"side by side ({check['cpu_side'] / check['cpu_alone']:.2f}x: above 1 the two cores "
          f"share something, and no schedule reaches 2x)\n")
    print("Scheduler: serial against scheduled (ratio = serial time / time; > 1 is faster)")
    print(f"  {'workload':<46} {'backend':<7} {'serial':>11} {'scheduled':>11} "
          f"{'ratio':>6} {'tuned':>11} {'ratio':>6}  tuner's choice")
    print(f"  (times: medians of {TURNS} turns; ratios: the median over the turns of serial / "
          f"that form, both timed in the same turn, with their range)")
    for r in part_one():
        serial_form = f", serial runs as {r['serial_form']}" if r["serial_form"] else ""
        print(f"  {r['case']:<46} {r['backend']:<7} {fmt_time(r['serial'])} "
              f"{fmt_time(r['scheduled'])} {r['ratio']:5.2f}x "
              f"{fmt_time(r['tuned'])} {r['tuned_ratio']:5.2f}x  {r['choice']}"
              f"  (per turn: scheduled {r['turns'][0]:.2f}-{r['turns'][1]:.2f}x, tuned "
              f"{r['tuned_turns'][0]:.2f}-{r['tuned_turns'][1]:.2f}x{serial_form}; "
              f"others used {r['others']:.1f} cores)")
    loop = part_two()
    best = max(loop["load"], loop["step"])
    print(f"\nTraining loop from Grain (numba step, runs as {loop['form'] or 'numba'}): per batch "
          f"load {fmt_time(loop['load'])} ({loop['passes']} preprocessing passes), step "
          f"{fmt_time(loop['step'])}; the GIL is held {loop['held_step']:.0%} of the step's "
          f"time and {loop['held_load']:.0%} of the loader's (upper bounds on a busy machine)")
    print(f"  the step's tuning: {loop['tuning']}")
    bound = gil_bound(loop)
    print(f"  with threads no batch takes less than the time the two hold the GIL: load x "
          f"{loop['held_load']:.0%} + step x {loop['held_step']:.0%} = {fmt_time(bound).strip()}"
          f" = {bound / best:.2f}x max(load, step) (the held fractions are upper bounds)")
    print(f"  per batch: the median of {ROUNDS * EPOCHS} epochs ({ROUNDS} rounds of the ways in "
          f"turns), then the range of the epochs")
    for (how, readers), (median, low, high) in loop["ways"].items():
        label = f"{how} x{readers}" if how == "threads" else how
        print(f"  {label:<11} {fmt_time(median)} per batch = {median / best:.2f}x "
              f"max(load, step) ({low / best:.2f}-{high / best:.2f}x), "
              f"{median / (loop['load'] + loop['step']):.2f}x their sum")

if __name__ == "__main__":
    main()
