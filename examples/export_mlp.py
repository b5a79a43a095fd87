"""Export the MLP of train_mlp.py: train it, export its predict function and its training step,
reload both in a fresh process, and run them there on npdynamo (eager, numba), ONNX Runtime and
as a module that needs only NumPy, side by side with timings.

    python examples/export_mlp.py

The parent process trains a few epochs with the compiled step, then exports:
  * ``predict(x)``: class probabilities, the trained weights kept as constants (a closure);
  * ``step(params, x, y)``: one SGD step (``value_and_grad`` inside: the joint forward/backward
    graph), the parameters as inputs that the step writes.
Both have a dynamic batch dimension (``npdynamo.Dim("batch")``). Each is saved three ways: an
archive (``.npdx``, read by ``npdynamo.load`` without the capture front end), an ONNX model and
a NumPy-only module. A child process (this script with ``--child DIR``) loads them all, runs them
on a batch size the export never saw and prints the results and milliseconds per call.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # steadier timings on a shared machine

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH_SEEN, BATCH_NEW = 128, 200


def make_predict(params):
    """``predict(x)`` reading the trained weights from its closure (they become constants)."""
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]

    def predict(x):
        h = np.maximum(x @ w1 + b1, 0.0)
        logits = h @ w2 + b2
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return predict


def export_all(folder: str) -> None:
    import npdynamo

    sys.path.insert(0, HERE)
    import train_mlp as mlp

    x, y = mlp.make_data()
    params = mlp.init_params()
    compiled = npdynamo.compile(mlp.step)
    for epoch in range(2):
        losses = [float(compiled(params, xb, yb)) for xb, yb in mlp.batches(x, y, epoch)]
        print(f"trained epoch {epoch}: mean loss {np.mean(losses):.4f}")
    batch = npdynamo.Dim("batch")
    predict = npdynamo.export(make_predict(params), x[:BATCH_SEEN],
                              dynamic_shapes={"x": {0: batch}})
    step = npdynamo.export(mlp.step, params, x[:BATCH_SEEN], y[:BATCH_SEEN],
                           dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    print(f"\n{predict}\n")
    for name, ep in (("predict", predict), ("step", step)):
        ep.save(os.path.join(folder, f"{name}.npdx"))
        ep.to_python(os.path.join(folder, f"{name}_numpy.py"))
        try:
            ep.to_onnx(os.path.join(folder, f"{name}.onnx"))
        except ImportError:
            print("onnx is not installed (pip install npdynamo[onnx]): no ONNX models")
    xb, yb = x[-BATCH_NEW:], y[-BATCH_NEW:]
    np.savez(os.path.join(folder, "data.npz"), x=xb, y=yb, **{f"p_{k}": v for k, v in
                                                              params.items()})
    reference = make_predict(params)(xb)
    np.save(os.path.join(folder, "reference.npy"), reference)


def _ms(fn, repeat: int = 30) -> float:
    fn()  # warm (compiles on the numba backend, builds ORT's session state)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def _module(path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_child(folder: str) -> None:
    import npdynamo

    data = np.load(os.path.join(folder, "data.npz"))
    x, y = data["x"], data["y"]
    fresh = {k[2:]: data[k] for k in data.files if k.startswith("p_")}
    reference = np.load(os.path.join(folder, "reference.npy"))
    rows = []
    predict = npdynamo.load(os.path.join(folder, "predict.npdx"))
    step = npdynamo.load(os.path.join(folder, "step.npdx"))
    for backend in ("eager", "numba"):
        probs = predict(x, backend=backend)
        params = {k: v.copy() for k, v in fresh.items()}
        loss = float(step(params, x, y, backend=backend))
        rows.append((f"npdynamo.load ({backend})", probs, loss,
                     _ms(lambda b=backend: predict(x, backend=b)),
                     _ms(lambda b=backend: step({k: v.copy() for k, v in fresh.items()}, x, y,
                                                backend=b))))
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None and os.path.exists(os.path.join(folder, "predict.onnx")):
        sessions = {n: ort.InferenceSession(os.path.join(folder, f"{n}.onnx"),
                                            providers=["CPUExecutionProvider"])
                    for n in ("predict", "step")}
        feeds = {"x": x, "y": y, **{f"params_{k}": v for k, v in fresh.items()}}

        def run(name):
            session = sessions[name]
            return session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})

        rows.append(("ONNX Runtime", run("predict")[0], float(run("step")[0]),
                     _ms(lambda: run("predict")), _ms(lambda: run("step"))))
    plain_predict = _module(os.path.join(folder, "predict_numpy.py"))
    plain_step = _module(os.path.join(folder, "step_numpy.py"))
    params = {k: v.copy() for k, v in fresh.items()}
    loss = float(plain_step.step(params, x, y))
    rows.append(("NumPy-only module", plain_predict.predict(x), loss,
                 _ms(lambda: plain_predict.predict(x)),
                 _ms(lambda: plain_step.step({k: v.copy() for k, v in fresh.items()}, x, y))))
    print(f"fresh process, batch of {len(x)} (exported with {BATCH_SEEN}); "
          f"npdynamo.capture imported: {'npdynamo.capture' in sys.modules}")
    print(f"{'runtime':<24} {'max |p - ref|':>13} {'classes 0-4':>12} {'step loss':>10} "
          f"{'predict ms':>11} {'step ms':>8}")
    for name, probs, loss, t_pred, t_step in rows:
        err = float(np.abs(probs - reference).max())
        classes = "".join(str(c) for c in probs.argmax(axis=1)[:5])
        print(f"{name:<24} {err:13.1e} {classes:>12} {loss:10.6f} {t_pred:11.3f} {t_step:8.3f}")
    print("(timings are medians of 30 calls; rough on a shared machine)")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        run_child(sys.argv[2])
        return
    with tempfile.TemporaryDirectory(prefix="npdynamo-export-") as folder:
        export_all(folder)
        print("files:", ", ".join(sorted(os.listdir(folder))))
        subprocess.run([sys.executable, os.path.abspath(__file__), "--child", folder],
                       check=True)


if __name__ == "__main__":
    main()
