"""Run in a fresh process by ``test_deploy.py``: for each exported program of the job file,
load the archive and run it on eager and numba, run the ONNX model in ONNX Runtime and the
NumPy-only module, on every input set; pickle what each returned and the arguments after the
call (a test harness file, written and read by the test itself). Then check that the capture
stage was never imported."""

import copy
import importlib.util
import pickle
import sys

import onnxruntime as ort

import npdynamo
from npdynamo.export.onnx_pairs import to_model


def leaf(ep, args, path):
    value = args[ep.params.index(path[0])]
    for key in path[1:]:
        value = value[key]
    return value


def run_job(job):
    ep = npdynamo.load(job["archive"])
    session = ort.InferenceSession(job["onnx"], providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    spec = importlib.util.spec_from_file_location(job["module_name"], job["module"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = []
    for args in job["inputs"]:
        out = {}
        for backend in ("eager", "numba"):
            a = copy.deepcopy(args)
            out[backend] = (ep(*a, backend=backend), a)
        a = copy.deepcopy(args)
        out["python"] = (getattr(module, ep.name)(*a), a)
        feeds = {s.name: to_model(leaf(ep, args, s.path)) for s in ep.inputs
                 if s.kind == "input" and s.name in names}
        out["onnx"] = session.run(None, feeds)
        results.append(out)
    return results


def main(job_file, result_file):
    with open(job_file, "rb") as f:
        jobs = pickle.load(f)  # noqa: S301 (written by the test in its own temporary folder)
    results = {name: run_job(job) for name, job in jobs.items()}
    with open(result_file, "wb") as f:
        pickle.dump(results, f)
    assert "npdynamo.capture" not in sys.modules, "loading imported the capture stage"
    print("capture imported:", "npdynamo.capture" in sys.modules)


if __name__ == "__main__":
    main(*sys.argv[1:])
