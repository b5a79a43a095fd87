"""Run in a fresh process by the archive tests: load each archive named on the command line,
run it on eager and numba on the inputs saved beside it, save the outputs; then check that
the capture stage was never imported."""

import sys

import numpy as np

import npdynamo


def flatten(value, out):
    if isinstance(value, dict):
        for k in value:
            flatten(value[k], out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten(v, out)
    else:
        out.append(np.asarray(value))
    return out


def main(paths):
    for path in paths:
        ep = npdynamo.load(path)
        inputs = np.load(path + ".inputs.npz", allow_pickle=False)
        results = {}
        for backend in ("eager", "numba"):
            args = [inputs[f"a{i}"].copy() for i in range(len(inputs.files))]
            outs = flatten(ep(*args, backend=backend), [])
            results.update({f"{backend}_out{i}": v for i, v in enumerate(outs)})
            results.update({f"{backend}_arg{i}": v for i, v in enumerate(args)})
        np.savez(path + ".outputs.npz", **results)
    assert "npdynamo.capture" not in sys.modules, "loading imported the capture stage"
    print("capture imported:", "npdynamo.capture" in sys.modules)


if __name__ == "__main__":
    main(sys.argv[1:])
