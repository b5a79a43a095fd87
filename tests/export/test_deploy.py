"""Deployment, end to end: every workload of ``make bench`` and every numpy-benchmarks kernel
that compiles as one graph is exported (its batch or first dimension dynamic), saved as an
archive, an ONNX model and a NumPy-only module, then loaded in a fresh process that never
imports the capture stage and run there on eager, numba, ONNX Runtime and the module, on new
inputs of other sizes along the dynamic dimensions; each result (and each argument the program
writes) is compared with plain NumPy's: bitwise on eager and the module, within rtol 1e-9 on
numba, float32 rtol 1e-5 / float64 rtol 1e-10 on ONNX Runtime. The kernels are read at run time
from ``../shared/external`` (or ``NPDYNAMO_EXTERNAL``) and the test is skipped without them.
Under ``.ci/run`` with all three Pythons each version deploys its third of the kernels
(``tests/shards.py``): together the run deploys every kernel; a local run deploys them all."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import pytest

from benchmarks import export_coverage as cov
from tests.shards import version_shard

pytest.importorskip("onnxruntime")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: one-graph kernels ONNX cannot hold, and why (checked: exporting them still raises); complex
#: numbers and speculated choices have an ONNX form
NO_ONNX: dict[str, str] = {
    "wave": "an assert on graph data (assert dist != 0) is checked when the graph runs; a "
            "failing one must raise AssertionError, which an ONNX model cannot",
}


def _deploy(cases, tmp_path):
    jobs, expected, refused = {}, {}, {}
    for case in cases:
        try:
            ep, dynamic = cov.export(case)
        except Exception as exc:  # noqa: BLE001 - a graph break: not a one-graph kernel
            refused[case.name] = f"export: {exc}"
            continue
        inputs = case.inputs[1:] if dynamic else case.inputs[:1]
        base = str(tmp_path / case.name)
        ep.save(base + ".npdx")
        try:
            ep.to_onnx(base + ".onnx")
        except Exception as exc:  # noqa: BLE001
            refused[case.name] = f"onnx: {exc}"
            continue
        ep.to_python(base + "_np.py")
        jobs[case.name] = {"archive": base + ".npdx", "onnx": base + ".onnx",
                           "module": base + "_np.py", "module_name": f"{case.name}_np",
                           "inputs": inputs}
        expected[case.name] = []
        for args in inputs:
            plain = copy.deepcopy(args)
            expected[case.name].append(((case.fn(*plain), plain),
                                        cov.onnx_expected(ep, case.fn, args)))
    job_file, result_file = tmp_path / "jobs.pkl", tmp_path / "results.pkl"
    job_file.write_bytes(pickle.dumps(jobs))
    env = dict(os.environ, PYTHONPATH=ROOT, NPDYNAMO_PROGRESS="0")
    done = subprocess.run([sys.executable, "-m", "tests.export.run_deployed", str(job_file),
                           str(result_file)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "capture imported: False" in done.stdout
    results = pickle.loads(result_file.read_bytes())  # noqa: S301 (this test's own file)
    wrong = []
    for name, runs in results.items():
        for (plain, onnx_plain), got in zip(expected[name], runs):
            for target in ("eager", "numba", "python"):
                if not cov.same(plain, got[target], cov.EXACT[target]):
                    wrong.append((name, target))
            if not cov.same(onnx_plain, got["onnx"], exact=False):
                wrong.append((name, "onnx"))
    return jobs, refused, wrong


def test_every_bench_workload_deploys(tmp_path):
    cases = cov.workload_cases()
    jobs, refused, wrong = _deploy(cases, tmp_path)
    assert refused == {} and wrong == []
    assert len(jobs) == len(cases) == 10


#: kernels that are not one exported graph (a one-argument np.where, one graph when compiled,
#: whose count an exported program could not save; an argument that is a function)
NOT_ONE_GRAPH = {"grouping", "local_maxima"}
PARTS = 2  # the kernels in two halves, each its own fresh process: pytest-xdist runs both at once


@pytest.mark.skipif(not cov.DEFAULT_FOLDER.is_dir(),
                    reason="../shared/external/numpy-benchmarks is not next to this checkout")
@pytest.mark.parametrize("part", range(PARTS))
def test_every_one_graph_kernel_deploys(tmp_path, part):
    cases = [c for c in cov.kernel_cases(cov.DEFAULT_FOLDER) if not isinstance(c, tuple)]
    cases = version_shard(cases)[part::PARTS]
    names = {c.name for c in cases}
    jobs, refused, wrong = _deploy(cases, tmp_path)
    assert wrong == []
    assert {name for name, why in refused.items() if why.startswith("export")} == (
        names & NOT_ONE_GRAPH), refused
    assert {name for name, why in refused.items() if why.startswith("onnx")} == (
        names & set(NO_ONNX)), refused
    assert set(jobs) == names - NOT_ONE_GRAPH - set(NO_ONNX)  # deployed on every target
