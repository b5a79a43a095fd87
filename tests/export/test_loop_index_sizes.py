"""A size that depends on a rolled loop's index (``x[:i]`` in a ``fori_loop``): the program runs
it, ``to_onnx`` and ``to_python`` write it with NumPy's results, and ``save`` refuses it with an
``ExportError`` (an archive saved with it once failed only when loaded: a size symbol of 1)."""

import importlib.util

import numpy as np
import pytest

import npdynamo
from npdynamo.export import ExportError


def prefix_sums(x):
    y = np.zeros_like(x)
    for i in range(1, 20):  # one fori_loop node: x[:i] has a size that depends on i
        y[i] = np.cumsum(x[:i] * 2.0)[-1]
    return y


@pytest.fixture(scope="module")
def program():
    return npdynamo.export(prefix_sums, np.arange(20.0))


def test_the_program_and_its_numpy_module_give_numpys_results(program, tmp_path):
    x = np.linspace(-1.0, 1.0, 20)
    np.testing.assert_array_equal(program(x), prefix_sums(x))
    program.to_python(str(tmp_path / "prefix_np.py"))
    spec = importlib.util.spec_from_file_location("prefix_np", tmp_path / "prefix_np.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_array_equal(module.prefix_sums(x), prefix_sums(x))


def test_onnx_runs_it(program):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    model = program.to_onnx()
    session = ort.InferenceSession(model.SerializeToString())
    x = np.linspace(-1.0, 1.0, 20)
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, prefix_sums(x), rtol=1e-10)


def test_save_refuses_it_instead_of_writing_a_file_that_cannot_be_loaded(program, tmp_path):
    with pytest.raises(ExportError, match="depends on a loop index: it cannot be saved"):
        program.save(str(tmp_path / "p.npdx"))


def test_an_unbacked_size_runs_and_save_refuses_it(tmp_path):
    # a CSR product: slices bounded by array elements have sizes known only at run time
    from benchmarks.loop_kernels import csr_spmv
    from tests.capture.test_unbacked_slices import RNG, csr

    args = csr(RNG.integers(0, 5, 20), 12)
    program = npdynamo.export(csr_spmv, *args)
    np.testing.assert_array_equal(program(*args), csr_spmv(*args))
    with pytest.raises(ExportError, match="known only when the graph runs"):
        program.save(str(tmp_path / "csr.npdx"))
