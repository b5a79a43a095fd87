"""Run in a fresh process by the NumPy-only tests: with npdynamo and numba unimportable, import
each generated module named on the command line and run it on the inputs saved beside it."""

import importlib.abc
import importlib.util
import os
import sys

BLOCKED = ("npdynamo", "numba", "llvmlite", "onnx", "onnxruntime")


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the module must need only NumPy")
        return None


def flatten(value, out):
    if isinstance(value, dict):
        for k in value:
            flatten(value[k], out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten(v, out)
    else:
        out.append(value)
    return out


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
        outs = flatten(getattr(module, inputs["fn_name"].item())(*args), [])
        np.savez(path[:-3] + ".outputs.npz",
                 **{f"out{i}": np.asarray(v) for i, v in enumerate(outs)},
                 **{f"type{i}": np.asarray(type(v).__name__) for i, v in enumerate(outs)},
                 **{f"arg{i}": a for i, a in enumerate(args)})
    assert not any(m.split(".")[0] in BLOCKED for m in sys.modules)
    print("numpy-only ok")


if __name__ == "__main__":
    main(sys.argv[1:])
