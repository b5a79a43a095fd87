"""Run in a fresh process by the NumPy-only tests: with npdynamo and numba unimportable, import
each generated module named on the command line, run it on the inputs saved beside it and
pickle what it returned and the arguments after the call to ``<module>.outputs.pkl`` (a test
harness file, written and read by the test itself)."""

import importlib.abc
import importlib.util
import os
import pickle
import sys

BLOCKED = ("npdynamo", "numba", "llvmlite", "onnx", "onnxruntime")


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the module must need only NumPy")
        return None


def main(paths):
    sys.meta_path.insert(0, _Block())
    import numpy as np

    for path in paths:
        name = os.path.basename(path)[:-3]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        inputs = np.load(path[:-3] + ".inputs.npz", allow_pickle=False)
        args = [inputs[f"a{i}"] for i in range(len(inputs.files) - 1)]
        result = getattr(module, inputs["fn_name"].item())(*args)
        with open(path[:-3] + ".outputs.pkl", "wb") as f:
            pickle.dump((result, args), f)
    assert not any(m.split(".")[0] in BLOCKED for m in sys.modules)
    print("numpy-only ok")


if __name__ == "__main__":
    main(sys.argv[1:])
