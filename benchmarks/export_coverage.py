"""Export coverage on kernels nobody on this project wrote: which of the public numpy-benchmarks
kernels export as one graph, and which targets then reproduce plain NumPy.

For each kernel (``#setup:``/``#run:`` lines, as ``benchmarks/external.py`` reads them; the
folder is read at run time and never copied here) the script exports the kernel with dimension
0 of every array argument dynamic (or with static shapes when that is refused), then compares
plain NumPy with: the program on the eager backend (bitwise), the program saved and loaded
again (bitwise), ONNX Runtime (float32 rtol 1e-5, float64 1e-10) and the NumPy-only module
(bitwise), on the setup's inputs and, for a dynamic export, on inputs one row shorter. It
prints one row per kernel, the totals per target, and warm milliseconds of npdynamo numba and
ONNX Runtime where both run (rough: medians of a few calls on a shared machine).

    python -m benchmarks.export_coverage [DIR] [--only a,b]
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import npdynamo

DEFAULT_FOLDER = Path(__file__).resolve().parents[1].parent / "shared/external/numpy-benchmarks"
TARGETS = ("eager", "archive", "onnx", "python")


def load_kernel(path: Path):
    source = path.read_text()
    setup = run = None
    for line in source.splitlines():
        if line.startswith("#setup:"):
            setup = line.split(":", 1)[1].strip()
        elif line.startswith("#run:"):
            run = line.split(":", 1)[1].strip()
    call = ast.parse(run, mode="eval").body
    ns = {"__name__": "kernel"}
    exec(compile(source, str(path), "exec"), ns)  # noqa: S102 (the benchmark's own setup)
    exec(setup, ns)  # noqa: S102
    args = []
    for a in call.args:
        node = a.value if isinstance(a, ast.Starred) else a
        value = eval(compile(ast.Expression(node), "<run>", "eval"), ns)  # noqa: S307
        args.extend(value) if isinstance(a, ast.Starred) else args.append(value)
    return ns[call.func.id], args


def flatten(value, out):
    if isinstance(value, dict):
        for v in value.values():
            flatten(v, out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten(v, out)
    else:
        out.append(value)
    return out


def same(expected, got, exact: bool) -> bool:
    e, g = flatten(expected, []), flatten(got, [])
    if len(e) != len(g):
        return False
    for a, b in zip(e, g):
        a2, b2 = np.asarray(a), np.asarray(b)
        if a2.shape != b2.shape or a2.dtype != b2.dtype:
            return False
        if exact or a2.dtype.kind not in "fc":
            if not np.array_equal(a2, b2, equal_nan=a2.dtype.kind in "fc"):
                return False
        else:
            rtol = 1e-5 if a2.dtype.itemsize <= 4 else 1e-10
            if not np.allclose(b2, a2, rtol=rtol, atol=rtol * 1e-2, equal_nan=True):
                return False
    return True


def export(fn, args):
    dims = [({0: npdynamo.Dim(f"n{i}")} if isinstance(a, np.ndarray) and a.ndim and
             a.shape[0] >= 3 else None) for i, a in enumerate(args)]
    if any(dims):
        try:
            return npdynamo.export(fn, *copy.deepcopy(args), dynamic_shapes=dims), True
        except npdynamo.NpdynamoError:
            pass
    return npdynamo.export(fn, *copy.deepcopy(args)), False


def shorter(args):
    return [a[:-1] if isinstance(a, np.ndarray) and a.ndim and a.shape[0] >= 3 else a
            for a in args]


def _ms(fn, repeat: int = 5) -> float:
    fn()
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def check(fn, args, folder: str):
    row = {"dynamic": False, "error": ""}
    try:
        ep, row["dynamic"] = export(fn, args)
    except Exception as exc:  # noqa: BLE001 (a row, not a crash)
        row["error"] = f"export: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
        return row, None
    inputs = [args]
    if row["dynamic"]:
        try:  # other sizes along the dynamic dims, when the kernel itself accepts them
            fn(*copy.deepcopy(shorter(args)))
            inputs.append(shorter(args))
        except Exception:  # noqa: BLE001
            pass
    path = os.path.join(folder, f"{fn.__name__}.npdx")
    module = os.path.join(folder, f"exported_{fn.__name__}.py")
    runners = {"eager": lambda a: ep(*a)}
    try:
        ep.save(path)
        loaded = npdynamo.load(path)
        runners["archive"] = lambda a: loaded(*a)
    except Exception as exc:  # noqa: BLE001
        row["archive"] = f"{type(exc).__name__}: {str(exc)[:60]}"
    session = None
    try:
        import onnxruntime as ort

        session = ort.InferenceSession(ep.to_onnx().SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        specs = [s for s in ep.inputs if s.kind == "input"]

        def run_onnx(a):
            feeds = {s.name: np.asarray(a[ep.params.index(s.path[0])]) for s in specs
                     if s.name in names}
            outs = session.run(None, feeds)
            return outs[:len(outs) - len(ep.mutations)]
        runners["onnx"] = run_onnx
    except Exception as exc:  # noqa: BLE001
        row["onnx"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
    try:
        ep.to_python(module)
        spec = importlib.util.spec_from_file_location(Path(module).stem, module)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        runners["python"] = lambda a: getattr(mod, ep.name)(*a)
    except Exception as exc:  # noqa: BLE001
        row["python"] = f"{type(exc).__name__}: {str(exc)[:60]}"
    for target, run in runners.items():
        ok = True
        for a in inputs:
            try:
                expected = fn(*copy.deepcopy(a))
                got = run(copy.deepcopy(a))
                if target == "onnx":
                    expected = [v for v in flatten(expected, []) if isinstance(
                        v, (np.ndarray, np.generic))]
                ok = ok and same(expected, got, exact=target != "onnx")
            except Exception as exc:  # noqa: BLE001
                row[target] = f"{type(exc).__name__}: {str(exc)[:60]}"
                ok = None
                break
        if ok is not None:
            row[target] = "ok" if ok else "DIFFERS"
    timing = None
    if row.get("onnx") == "ok":
        timing = (_ms(lambda: ep(*copy.deepcopy(args), backend="numba")),
                  _ms(lambda: runners["onnx"](args)))
    return row, timing


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(DEFAULT_FOLDER))
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    folder = Path(opts.folder)
    if not folder.is_dir():
        print(f"no kernels at {folder} (the external folder is not part of the repository)")
        return
    only = set(filter(None, opts.only.split(",")))
    totals = dict.fromkeys(TARGETS, 0)
    exported = 0
    paths = sorted(p for p in folder.glob("*.py") if not only or p.stem in only)
    warnings.simplefilter("ignore")
    print(f"{'kernel':<28} {'dims':<7} " + " ".join(f"{t:<8}" for t in TARGETS)
          + "  numba ms   ORT ms")
    with tempfile.TemporaryDirectory(prefix="npdynamo-export-cov-") as tmp:
        for path in paths:
            try:
                fn, args = load_kernel(path)
            except Exception as exc:  # noqa: BLE001
                print(f"{path.stem:<28} setup failed: {exc}")
                continue
            row, timing = check(fn, args, tmp)
            if row["error"]:
                print(f"{path.stem:<28} {row['error']}")
                continue
            exported += 1
            cells = []
            for t in TARGETS:
                value = row.get(t, "-")
                totals[t] += value == "ok"
                cells.append(f"{value if value in ('ok', 'DIFFERS') else 'error':<8}")
            times = f"{timing[0]:9.3f} {timing[1]:8.3f}" if timing else ""
            print(f"{path.stem:<28} {'dynamic' if row['dynamic'] else 'static':<7} "
                  + " ".join(cells) + f"  {times}")
            for t in TARGETS:
                if row.get(t) not in ("ok", "DIFFERS", None):
                    print(f"    {t}: {row[t]}")
    print(f"\nexported as one graph: {exported}/{len(paths)} kernels")
    for t in TARGETS:
        print(f"  {t:<8} matches NumPy: {totals[t]}/{exported}")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
