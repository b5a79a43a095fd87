"""Run every benchmark (``make bench``)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import overhead, small_functions, train_step  # noqa: E402

if __name__ == "__main__":
    overhead.main()
    print()
    small_functions.main()
    print()
    train_step.main()
    # Loops in the graph: capture time against the trip count, a solver loop. Before the
    # benchmarks that import torch: once torch is imported (and torch.compile has run) in this
    # process, plain NumPy and the eager rolled loops here move by up to 1.8x, each its own way.
    from benchmarks import control_flow

    print()
    control_flow.main()
    # The numba backend: what kernels compute themselves, when threads pay, the
    # workloads against NumPy and hand-written numba, and start-up from the disk cache.
    from benchmarks import kmeans, numba_backend, startup, threads, transcendentals

    transcendentals.main()
    threads.main()
    numba_backend.main()
    numba_backend.main(one_thread=True)
    from benchmarks import loaded

    loaded.main()  # quiet against one core taken by another process
    # The scheduler: independent ops side by side, a Grain loader beside the compiled step.
    from benchmarks import schedule

    print()
    schedule.main()
    kmeans.main()  # np.linalg.norm as a fused reduction
    startup.main()
    # Dynamic shapes: a training step fed 20 batch sizes, graphs and kernels compiled.
    from benchmarks import dynamic_shapes

    dynamic_shapes.main()
    # Never worse than Python: the worst cases, plain against compiled.
    from benchmarks import worst_case

    print()
    worst_case.main()
    # Code nobody here wrote: the numpy-benchmarks kernels, when the folder is there.
    from benchmarks import external

    print()
    external.main()
    # The first calls end to end (tiers, workers), each kernel in a fresh process.
    from benchmarks import first_call

    print()
    first_call.main()
    # What numba compiles cost per kernel and per op, and one graph on 1 and 2 compile workers.
    from benchmarks import compile_cost

    print()
    compile_cost.main()
    # Loop nests against hand-written numba (each kernel in its own process, under a time limit),
    # and what exports: coverage per target and ONNX Runtime against numba.
    from benchmarks import export_coverage, loop_corpus

    print()
    loop_corpus.main(["--size", "small", "--timeout", "120"])
    print()
    export_coverage.main([])

