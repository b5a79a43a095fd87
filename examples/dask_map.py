"""A compiled step mapped over the chunks of a Dask array, on a local cluster of worker processes.

    python examples/dask_map.py        (needs Dask: pip install -e '.[dask]')

The compiled function travels to the workers by pickle (Dask uses cloudpickle): it carries the
user's function and its settings, never compiled code. Each worker captures it once, on its first
chunk, and takes the numba kernels from the on-disk kernel cache that this process filled when it
ran the step once, so no worker compiles a kernel. Results are checked against plain NumPy.
"""

import os
import tempfile

import numpy as np

import npdynamo


def standardise(block):
    """Each row scaled to mean 0 and variance 1, then squashed: a typical per-chunk step."""
    centred = block - block.mean(axis=1, keepdims=True)
    scaled = centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + 1e-6)
    return np.tanh(scaled) * 0.5 + 0.5


step = npdynamo.compile(standardise, backend="numba")


def worker_report(step):
    """What one process did: its id, the entries its copy of ``step`` holds, its kernel loads."""
    report = npdynamo.inspect(step)
    return {"pid": os.getpid(), "entries": len(report.entries), **report.kernels}


def main(rows: int = 8000, columns: int = 64, chunk_rows: int = 1000) -> dict:
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    rng = np.random.default_rng(0)
    data = rng.standard_normal((rows, columns))
    step(data[:chunk_rows])  # fills the kernel cache the workers read
    here = worker_report(step)
    print(f"this process (pid {here['pid']}): {here['entries']} entry, kernels compiled: "
          f"{here['compiled']}, loaded from disk: {here['from_disk']}")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        chunks = da.from_array(data, chunks=(chunk_rows, columns))
        result = chunks.map_blocks(step, dtype=data.dtype).compute()
        reports = client.run(worker_report, step)
    for report in reports.values():
        print(f"worker (pid {report['pid']}): {report['entries']} entry, kernels compiled: "
              f"{report['compiled']}, loaded from disk: {report['from_disk']}")
    error = float(np.max(np.abs(result - standardise(data))))
    print(f"{rows // chunk_rows} chunks on {len(reports)} workers; largest difference from "
          f"plain NumPy: {error:.1e}")
    return {"here": here, "workers": list(reports.values()), "error": error}


if __name__ == "__main__":
    # A fresh kernel cache, so what the workers load from disk is what this run wrote; the
    # workers inherit the setting.
    os.environ.setdefault("NPDYNAMO_CACHE_DIR", tempfile.mkdtemp(prefix="npdynamo-dask-"))
    main()
