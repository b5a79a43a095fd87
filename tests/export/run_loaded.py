"""Run in a fresh process by the archive tests: load each archive named on the command line,
run it on eager and numba on the inputs saved beside it (``<path>.inputs.npz``), and pickle
what each call returned and the arguments after it to ``<path>.outputs.pkl`` (a test harness
file, written and read by the test itself); then check that the capture stage was never
imported."""

import pickle
import sys

import numpy as np

import npdynamo


def main(paths):
    for path in paths:
        ep = npdynamo.load(path)
        inputs = np.load(path + ".inputs.npz", allow_pickle=False)
        results = {}
        for backend in ("eager", "numba"):
            args = [inputs[f"a{i}"].copy() for i in range(len(inputs.files))]
            results[backend] = (ep(*args, backend=backend), args)
        with open(path + ".outputs.pkl", "wb") as f:
            pickle.dump(results, f)
    assert "npdynamo.capture" not in sys.modules, "loading imported the capture stage"
    print("capture imported:", "npdynamo.capture" in sys.modules)


if __name__ == "__main__":
    main(sys.argv[1:])
