"""Train the MLP of train_mlp.py from a Grain pipeline into a step compiled by the numba backend.

The pipeline is Grain's (``pip install npdynamo[data]``): the sample indices are shuffled per
epoch, each sample is looked up and augmented with NumPy (brightness, faint noise), samples are
batched, and each batch gets a batch-level NumPy preprocessing whose
cost can be dialled (``--load-passes``). Three ways of feeding the step are timed per epoch:

* synchronous: the main thread loads a batch, then trains on it (load + step per batch);
* Grain threads: ``to_iter_dataset`` with reader threads and a prefetch buffer, loading the
  next batches while the step runs;
* Grain processes: ``mp_prefetch`` with worker processes.

Prefetching can only overlap the step if the step lets go of the GIL while it computes: the
compiled step holds it only in its guards and dispatch (``npdynamo.gil_held_fraction``
measures it and the example prints it). Each way trains a fresh copy of the same parameters
on the same batches (the pipeline is seeded), so their losses agree.

    python examples/train_grain.py [--epochs 2] [--load-passes 4] [--readers 1] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# One BLAS thread: the step takes one core, the loader the other.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mlp  # noqa: E402

import npdynamo  # noqa: E402

BATCH = train_mlp.BATCH


class Sample:
    """Index -> (image, label), augmented with NumPy: a brightness factor between 0.9 and 1.1,
    fixed per sample (a hash of its index), and faint noise from the sample's own generator."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __call__(self, index) -> tuple[np.ndarray, np.ndarray]:
        return augmented(self.x, index), self.y[index]


def augmented(x: np.ndarray, index) -> np.ndarray:
    """``x[index]`` brightened or dimmed per sample (``index``: one index or an array of them),
    with a fixed pattern of faint noise added."""
    index = np.asarray(index)
    factor = 0.9 + 0.2 * ((index * 2654435761) % 1009) / 1009.0
    noise = np.sin(np.arange(x.shape[1]) * 0.7)[None, :] * 0.001
    return x[index] * factor[..., None] + (noise if index.ndim else noise[0])


class Preprocess:
    """Batch-level NumPy work: each row standardised (scaled to the data's 1/sqrt(784) spread).
    It is computed ``passes`` times, a stand-in for heavier work (decoding, resizing): NumPy's
    loops over the batch release the GIL, so it can overlap the step."""

    def __init__(self, passes: int) -> None:
        self.passes = passes

    def __call__(self, batch: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        images, labels = batch
        out = images
        for _ in range(self.passes):
            centred = images - images.mean(axis=1, keepdims=True)
            spread = np.sqrt((centred * centred).mean(axis=1, keepdims=True)) + 1e-6
            out = centred / (spread * np.sqrt(images.shape[1]))
        return out, labels


def dataset(x: np.ndarray, y: np.ndarray, epochs: int, passes: int, per_sample: bool = True):
    """The Grain ``MapDataset``: shuffle -> augment -> batch -> preprocess, ``epochs`` times
    (``shuffle`` then ``repeat`` draws a new order for each epoch). With ``per_sample=False``
    the augmentation runs on each batch of indices instead (shuffle -> batch -> augment ->
    preprocess, the same values): one NumPy call per batch rather than a Python call per
    sample, which holds the GIL (``benchmarks/schedule.py`` uses it so that the loader's time
    is NumPy's, which threads can overlap)."""
    import grain

    ds = grain.MapDataset.range(len(x)).shuffle(seed=100)
    if per_sample:
        ds = ds.map(Sample(x, y)).batch(BATCH, drop_remainder=True)
    else:
        ds = ds.batch(BATCH, drop_remainder=True).map(Sample(x, y))
    return ds.map(Preprocess(passes)).repeat(epochs)


def batches(x, y, epochs: int, passes: int, how: str, per_sample: bool = True,
            readers: int = 1):
    """Every epoch's batches in one stream, loaded ``how``: ``sync`` (on demand, in this
    thread), ``threads`` (prefetched by ``readers`` reader threads, each loading whole batches;
    Grain hands them over in order) or ``processes`` (worker processes)."""
    import grain

    ds = dataset(x, y, epochs, passes, per_sample)
    if how == "sync":
        return (ds[i] for i in range(len(ds)))
    if how == "threads":
        return iter(ds.to_iter_dataset(grain.ReadOptions(num_threads=readers,
                                                         prefetch_buffer_size=4)))
    return iter(ds.to_iter_dataset().mp_prefetch(grain.MultiprocessingOptions(num_workers=1)))


def train(step, x, y, epochs: int, passes: int, how: str, per_sample: bool = True,
          readers: int = 1) -> tuple[list[float], list[float]]:
    """(mean loss per epoch, seconds per epoch) training fresh parameters ``how`` (``readers``:
    Grain's reader threads for ``threads``). An epoch's
    time runs from the end of the previous one (the first from the first batch's arrival: the
    worker processes' start-up is not an epoch's)."""
    params = train_mlp.init_params()
    per_epoch = len(x) // BATCH
    losses, seconds, values = [], [], []
    source = batches(x, y, epochs, passes, how, per_sample, readers)
    try:
        xb, yb = next(source)
        start = time.perf_counter()
        while True:
            values.append(step(params, xb, yb))
            if len(values) == per_epoch:
                seconds.append(time.perf_counter() - start)
                losses.append(float(np.mean(values)))
                values = []
                start = time.perf_counter()
            try:
                xb, yb = next(source)
            except StopIteration:
                return losses, seconds
    finally:
        getattr(source, "close", lambda: None)()  # Grain's threads and processes stop here


def warm_up(step, x, y, calls: int = 60) -> None:
    """Compile the step and let the tuner choose its form (its first warm calls time them)."""
    params = train_mlp.init_params()
    step(params, x[:BATCH], y[:BATCH])
    npdynamo.synchronize()  # the kernels compile in the background: time them, not the eager tier
    for _ in range(calls):
        step(params, x[:BATCH], y[:BATCH])


def per_batch_costs(step, x, y, passes: int, repeats: int = 30,
                    per_sample: bool = True) -> tuple[float, float]:
    """Median seconds to load one batch and to run one step, each alone."""
    ds = dataset(x, y, 1, passes, per_sample)
    params = train_mlp.init_params()
    loads, steps = [], []
    for i in range(repeats):
        start = time.perf_counter()
        xb, yb = ds[i % len(ds)]
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        step(params, xb, yb)
        steps.append(time.perf_counter() - start)
    return float(np.median(loads)), float(np.median(steps))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--load-passes", type=int, default=4)
    parser.add_argument("--readers", type=int, default=1,
                        help="Grain's reader threads (2 on a 2-core machine lets the loader use "
                             "the core the step leaves idle)")
    parser.add_argument("--quick", action="store_true", help="one epoch, processes skipped")
    args = parser.parse_args(argv)
    epochs = 1 if args.quick else args.epochs
    x, y = train_mlp.make_data()
    step = npdynamo.compile(train_mlp.step, backend="numba")
    warm_up(step, x, y)
    load, run = per_batch_costs(step, x, y, args.load_passes)
    params = train_mlp.init_params()
    held = npdynamo.gil_held_fraction(step, params, x[:BATCH], y[:BATCH], seconds=0.3)
    print(f"MLP {'->'.join(map(str, train_mlp.SIZES))}, {len(x)} samples, batch {BATCH}, "
          f"{epochs} epoch(s); per batch: load {load * 1e3:.2f} ms, step {run * 1e3:.2f} ms; "
          f"the compiled step holds the GIL {held:.0%} of its time")
    hows = ["sync", "threads"] if args.quick else ["sync", "threads", "processes"]
    results = {}
    reference = None
    for how in hows:
        losses, seconds = train(step, x, y, epochs, args.load_passes, how,
                                readers=args.readers)
        results[how] = (losses, seconds)
        per_batch = min(seconds) / (len(x) // BATCH)
        agree = "" if reference is None else (
            "  losses match the synchronous loop" if np.allclose(losses, reference, rtol=1e-9,
                                                                   atol=0) else "  LOSSES DIFFER")
        reference = reference or losses
        print(f"  {how:<10} epoch {min(seconds) * 1e3:7.1f} ms  ({per_batch * 1e3:.2f} ms per "
              f"batch; max(load, step) {max(load, run) * 1e3:.2f}, sum "
              f"{(load + run) * 1e3:.2f}){agree}  loss {losses[-1]:.4f}")
    return {"load": load, "step": run, "gil_held": held, "results": results}


if __name__ == "__main__":
    main()
