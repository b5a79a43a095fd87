"""Train an MLP classifier (784 -> 256 -> 10) with plain NumPy, then with npdynamo.compile.

The training step is ordinary NumPy: ``value_and_grad`` of the loss, then in-place SGD on a
dict of parameters. The baseline is the same step written by hand in NumPy (forward, then the
backward worked out on paper); the step with ``value_and_grad`` runs uncompiled (npdynamo's tape)
and compiled with the ``eager`` and ``numba`` backends. Every variant starts from the same
parameters and sees the same batches, so their losses must agree. Prints the loss per epoch, the
median milliseconds per step, and what ``npdynamo.explain`` sees in the step.

    python examples/train_mlp.py
"""

from __future__ import annotations

import copy
import os
import time
import traceback

# One BLAS thread: steadier step timings when other processes share the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import npdynamo  # noqa: E402
from npdynamo import value_and_grad  # noqa: E402

SIZES = (784, 256, 10)
SAMPLES = 2048
BATCH = 128
EPOCHS = 3
LR = 0.5
TIMED_STEPS = 60  # timed one by one; the median is printed (steady under a busy machine)


def make_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Ten noisy clusters in 784 dimensions: class k is centred on its own random image."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((SIZES[2], SIZES[0]))
    y = rng.integers(0, SIZES[2], SAMPLES)
    x = centres[y] + 1.5 * rng.standard_normal((SAMPLES, SIZES[0]))
    return x / np.sqrt(SIZES[0]), y


def init_params(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    d_in, d_hidden, d_out = SIZES
    return {
        "w1": rng.standard_normal((d_in, d_hidden)) * np.sqrt(2.0 / d_in),
        "b1": np.zeros(d_hidden),
        "w2": rng.standard_normal((d_hidden, d_out)) * np.sqrt(1.0 / d_hidden),
        "b2": np.zeros(d_out),
    }


def loss_fn(params, x, y):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    logits = h @ params["w2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), y].mean()


def step(params, x, y):
    loss, grads = value_and_grad(loss_fn)(params, x, y)
    for k in params:
        params[k] -= LR * grads[k]
    return loss


def step_by_hand(params, x, y):
    """The baseline: the same step with its backward written out by hand, plain NumPy."""
    z1 = x @ params["w1"] + params["b1"]
    h = np.maximum(z1, 0.0)
    logits = h @ params["w2"] + params["b2"]
    logits = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    total = e.sum(axis=1, keepdims=True)
    rows = np.arange(x.shape[0])
    loss = -(logits - np.log(total))[rows, y].mean()
    dlogits = e / total  # d loss / d logits: softmax minus the one-hot labels, over the batch
    dlogits[rows, y] -= 1.0
    dlogits /= x.shape[0]
    dh = dlogits @ params["w2"].T
    dh[z1 <= 0.0] = 0.0
    grads = {"w1": x.T @ dh, "b1": dh.sum(axis=0), "w2": h.T @ dlogits, "b2": dlogits.sum(axis=0)}
    for k in params:
        params[k] -= LR * grads[k]
    return loss


def batches(x, y, epoch: int):
    order = np.random.default_rng(100 + epoch).permutation(len(x))
    for start in range(0, len(x), BATCH):
        idx = order[start:start + BATCH]
        yield x[idx], y[idx]


def train(step_fn, x, y) -> list[float]:
    """Mean loss of each epoch, training a fresh copy of the initial parameters."""
    params = init_params()
    losses = []
    for epoch in range(EPOCHS):
        epoch_losses = [float(step_fn(params, xb, yb)) for xb, yb in batches(x, y, epoch)]
        losses.append(float(np.mean(epoch_losses)))
    return losses


def ms_per_step(step_fn, x, y) -> float:
    params = init_params()
    # a batch as training makes them (arrays of their own, not views of x: a view is another
    # entry of the compiled step, with compiles of its own)
    xb, yb = next(batches(x, y, 0))
    for _ in range(3):  # warm up (compiles)
        step_fn(params, xb, yb)
    npdynamo.synchronize()  # numba's kernels compile in the background: time them, not NumPy
    step_fn(params, xb, yb)
    times = []
    for _ in range(TIMED_STEPS):
        start = time.perf_counter()
        step_fn(params, xb, yb)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def variants() -> dict[str, object]:
    found: dict[str, object] = {"numpy (by hand)": step_by_hand, "numpy (tape)": step}
    for backend in ("eager", "numba"):
        try:
            found[f"compiled ({backend})"] = npdynamo.compile(step, backend=backend)
        except npdynamo.NpdynamoError as exc:
            found[f"compiled ({backend})"] = exc
    return found


def main() -> None:
    x, y = make_data()
    print(f"MLP {SIZES[0]}->{SIZES[1]}->{SIZES[2]}, {SAMPLES} samples, batch {BATCH}, "
          f"{EPOCHS} epochs, SGD lr={LR}")
    reference = None
    timings = {}
    for name, fn in variants().items():
        if isinstance(fn, Exception):
            print(f"\n{name}: unavailable ({type(fn).__name__}: {fn})")
            continue
        try:
            losses = train(fn, x, y)
            timings[name] = ms_per_step(fn, x, y)
        except Exception as exc:  # a variant that fails is reported, the demo goes on
            print(f"\n{name}: failed with {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=3)
            continue
        print(f"\n{name}:")
        for epoch, value in enumerate(losses):
            print(f"  epoch {epoch}: loss {value:.6f}")
        if reference is None:
            reference = losses
        else:
            worst = max(abs(a - b) for a, b in zip(losses, reference))
            verdict = "match" if worst <= 1e-6 else "DIFFER"
            print(f"  losses {verdict} plain NumPy (max difference {worst:.1e})")
    print(f"\nmilliseconds per step (median of {TIMED_STEPS}):")
    base = timings.get("numpy (by hand)")
    for name, ms in timings.items():
        ratio = f"  ({base / ms:.2f}x the hand-written NumPy step)" if base else ""
        print(f"  {name:<18} {ms:8.2f} ms{ratio}")
    try:
        params = init_params()
        report = npdynamo.explain(step)(copy.deepcopy(params), x[:BATCH], y[:BATCH])
        print("\nexplain(step):")
        print(report)
    except Exception as exc:
        print(f"\nexplain(step) failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
