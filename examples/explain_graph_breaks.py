"""What does npdynamo make of a realistic function? Ask ``npdynamo.explain``.

A least-squares fit by gradient descent, written the way people write it: it prints progress and
stops early when the loss is small enough (a branch on an array value). Each of those is a graph
break; the array work between them (``np.linalg.norm`` included) still runs as compiled graphs.
The report says where and why.

Run: ``python examples/explain_graph_breaks.py``
"""

from __future__ import annotations

import numpy as np

import npdynamo


def fit(x, y, w, lr=0.1, steps=4, tol=1e-3):
    """Gradient descent on the mean squared error of ``x @ w`` against ``y``."""
    for step in range(steps):
        err = x @ w - y
        loss = (err * err).mean()
        grad = 2 * x.T @ err / x.shape[0]
        print(f"step {step}: loss", loss)  # I/O: a graph break
        if loss < tol:  # a branch on an array value: a graph break
            break
        w = w - lr * grad / np.linalg.norm(grad)  # np.linalg.norm: in the graph
    return w, loss


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3))
    true_w = np.array([1.0, -2.0, 0.5])
    y = x @ true_w
    w0 = np.zeros(3)

    report = npdynamo.explain(fit)(x, y, w0)
    print("\n" + "=" * 72)
    print(report)

    compiled = npdynamo.compile(fit)
    w_compiled, _ = compiled(x, y, w0)
    w_plain, _ = fit(x, y, w0)
    print("\ncompiled result equals plain NumPy:", np.array_equal(w_compiled, w_plain))


if __name__ == "__main__":
    main()
