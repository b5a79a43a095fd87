"""Export coverage on the ``make bench`` workloads and on kernels nobody on this project wrote:
which export as one graph, which targets then reproduce plain NumPy, and ONNX Runtime's warm
speed against npdynamo's numba backend.

Two sets of programs: the workloads of ``benchmarks/workloads.py`` (the batch dimension
dynamic, checked on two other batch sizes) and the public numpy-benchmarks kernels
(``#setup:``/``#run:`` lines, as ``benchmarks/external.py`` reads them; the folder is read at
run time and never copied here), exported with dimension 0 of every array argument dynamic
(static shapes when that is refused) and checked on the setup's inputs and on inputs one row
shorter. Each exported program is compared with plain NumPy on every target: ``eager`` (the
program, bitwise), ``numba`` (rtol 1e-9), ``archive`` (saved and loaded again, eager,
bitwise), ``onnx`` (ONNX Runtime, float32 rtol 1e-5, float64 1e-10; the returned arrays and
the new values of the written ones) and ``python`` (the NumPy-only module, bitwise). It prints
one row per program, the totals per target (programs matching / programs exported), and the
warm milliseconds of npdynamo numba and ONNX Runtime (medians of a few calls on copies of the
inputs: rough on a shared machine; re-run on a quiet one for figures).

    python -m benchmarks.export_coverage [DIR] [--only a,b] [--no-time] [--no-kernels]
"""

from __future__ import annotations

import os

os.environ.setdefault("NPDYNAMO_TIERED", "0")  # numba compiles before the first timed call
os.environ.setdefault("NPDYNAMO_PROGRESS", "0")

import argparse  # noqa: E402
import copy  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import npdynamo  # noqa: E402
from benchmarks import workloads as W  # noqa: E402
from benchmarks.common import numpy_benchmark_kernel  # noqa: E402
from npdynamo.export.onnx_pairs import to_model  # noqa: E402

#: ``../shared/external/numpy-benchmarks`` next to the checkout (absent in a user's clone), or
#: the folder named by ``NPDYNAMO_EXTERNAL`` (a checkout elsewhere)
DEFAULT_FOLDER = Path(os.environ.get("NPDYNAMO_EXTERNAL") or Path(__file__).resolve().parents[
    1].parent / "shared/external") / "numpy-benchmarks"
TARGETS = ("eager", "numba", "archive", "onnx", "python")
EXACT = {"eager": True, "archive": True, "python": True, "numba": False, "onnx": False}


@dataclass
class Case:
    """A program to export: its example arguments first, then arguments of other sizes."""

    name: str
    fn: Callable
    inputs: list[list]
    dims: Any = None  # dynamic_shapes, or None to try dimension 0 of every array
    notes: list[str] = field(default_factory=list)
    timed: list | None = None  # the arguments timed (the example's by default)


# -- the programs --------------------------------------------------------------------------------
def _adam_args(n: int, rng) -> list:
    def state(scale: Callable = lambda a: a) -> dict:
        return {"w": scale(rng.standard_normal((n, 4))), "b": scale(rng.standard_normal(4))}
    return [state(), state(), state(), state(np.abs), 3]  # v, the second moment, is >= 0


def workload_cases() -> list[Case]:
    """The workloads of ``make bench`` (``benchmarks/workloads.py``), batch dimension dynamic."""
    n = npdynamo.Dim("batch")
    row = {0: n}
    state = {"w": row, "b": None}
    makers: list[tuple[str, Callable, Callable, Any]] = [
        ("gelu", W.gelu, lambda k, r: [r.standard_normal((k, 64))], [row]),
        ("gelu_cubed", W.gelu_cubed, lambda k, r: [r.standard_normal((k, 64))], [row]),
        ("softmax", W.softmax, lambda k, r: [r.standard_normal((k, 32))], [row]),
        ("layernorm", W.layernorm, lambda k, r: [r.standard_normal((k, 32)),
                                                 r.standard_normal(32), r.standard_normal(32)],
         [row, None, None]),
        ("adam", W.adam, _adam_args, [state, state, state, state, None]),
        ("adam_in_place", W.adam_in_place, _adam_args, [state, state, state, state, None]),
        ("mlp_forward", W.mlp_forward, lambda k, r: [
            r.standard_normal((k, 16)), r.standard_normal((16, 32)) * 0.3, np.zeros(32),
            r.standard_normal((32, 4)) * 0.3, np.zeros(4)], [row, None, None, None, None]),
        ("mlp_sgd_step", W.mlp_sgd_step, lambda k, r: [
            r.standard_normal((k, 16)), np.eye(4)[r.integers(0, 4, k)],
            r.standard_normal((16, 32)) * 0.3, np.zeros(32), r.standard_normal((32, 4)) * 0.3,
            np.zeros(4)], [row, row, None, None, None, None]),
        ("tiny_chain", W.tiny_chain, lambda k, r: [r.standard_normal(k)], [row]),
        ("diffusion_3d", W.diffusion_3d, lambda k, r: [r.standard_normal((k, 12, 4)), 0.05],
         [row, None]),
    ]
    return [Case(name, fn, [make(k, np.random.default_rng(k)) for k in (64, 37, 5)], dims,
                 timed=make(4096, np.random.default_rng(1))) for name, fn, make, dims in makers]


def kernel_cases(folder: Path, only: set[str] = frozenset()) -> list[Case | tuple[str, str]]:
    """The numpy-benchmarks kernels (a (name, error) pair for one whose setup fails)."""
    cases: list = []
    for path in sorted(folder.glob("*.py")):
        if only and path.stem not in only:
            continue
        try:
            fn, args = numpy_benchmark_kernel(str(path))
        except Exception as exc:  # noqa: BLE001 (a row, not a crash)
            cases.append((path.stem, f"setup failed: {exc}"))
            continue
        inputs = [args]
        try:  # inputs one row shorter, when the kernel itself accepts them
            fn(*copy.deepcopy(shorter(args)))
            inputs.append(shorter(args))
        except Exception:  # noqa: BLE001
            pass
        cases.append(Case(path.stem, fn, inputs))
    return cases


def shorter(args: list) -> list:
    return [a[:-1] if isinstance(a, np.ndarray) and a.ndim and a.shape[0] >= 3 else a
            for a in args]


# -- exporting and running -----------------------------------------------------------------------
def export(case: Case):
    """The program and whether it has dynamic dimensions (then ``case.inputs`` all apply)."""
    dims = case.dims
    if dims is None:
        dims = [({0: npdynamo.Dim(f"n{i}")} if isinstance(a, np.ndarray) and a.ndim and
                 a.shape[0] >= 3 else None) for i, a in enumerate(case.inputs[0])]
        if not any(dims):
            dims = None
    if dims is not None:
        try:
            return npdynamo.export(case.fn, *copy.deepcopy(case.inputs[0]),
                                   dynamic_shapes=dims), True
        except npdynamo.NpdynamoError as exc:
            case.notes.append(f"static shapes: {str(exc).splitlines()[0][:80]}")
    return npdynamo.export(case.fn, *copy.deepcopy(case.inputs[0])), False


def flatten(value: Any, out: list) -> list:
    if isinstance(value, dict):
        for v in value.values():
            flatten(v, out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten(v, out)
    else:
        out.append(value)
    return out


def leaf(ep, args: list, path: tuple) -> Any:
    """The argument leaf at ``path`` (parameter name, then keys) of positional ``args``."""
    value = args[ep.params.index(path[0])]
    for key in path[1:]:
        value = value[key]
    return value


def onnx_feeds(ep, session, args: list) -> dict:
    names = {i.name for i in session.get_inputs()}
    return {s.name: to_model(leaf(ep, args, s.path)) for s in ep.inputs
            if s.kind == "input" and s.name in names}


def onnx_expected(ep, fn: Callable, args: list) -> list:
    """What the ONNX model returns for ``args``: NumPy's returned arrays, then the new values of
    the arrays the program writes (ONNX has no in-place writes); complex ones as the model
    gives them, (real, imag) along a trailing axis."""
    args = copy.deepcopy(args)
    result = [v for v in flatten(fn(*args), []) if isinstance(v, (np.ndarray, np.generic))]
    specs = {s.name: s for s in ep.inputs}
    return [to_model(v) for v in result] + [to_model(leaf(ep, args, specs[name].path))
                                             for _, name in sorted(ep.mutations.items())]


def same(expected: Any, got: Any, exact: bool) -> bool:
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
            rtol = 1e-5 if a2.dtype.itemsize <= 4 * (1 + (a2.dtype.kind == "c")) else 1e-9
            if not np.allclose(b2, a2, rtol=rtol, atol=rtol * 1e-2, equal_nan=True):
                return False
    return True


def runners(ep, folder: str) -> tuple[dict[str, Callable], dict[str, str]]:
    """Each target as a function of positional arguments returning (result, arguments after)."""
    runs: dict[str, Callable] = {
        "eager": lambda a: (ep(*a), a),
        "numba": lambda a: (ep(*a, backend="numba"), a),
    }
    errors: dict[str, str] = {}
    path = os.path.join(folder, f"{ep.name}.npdx")
    try:
        ep.save(path)
        loaded = npdynamo.load(path)
        runs["archive"] = lambda a: (loaded(*a), a)
    except Exception as exc:  # noqa: BLE001
        errors["archive"] = f"{type(exc).__name__}: {str(exc)[:70]}"
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # idle ORT threads spin by default, taking the cores from numba's threads between calls
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(ep.to_onnx().SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        runs["onnx"] = lambda a: (session.run(None, onnx_feeds(ep, session, a)), a)
    except Exception as exc:  # noqa: BLE001
        errors["onnx"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    module = os.path.join(folder, f"exported_{ep.name}.py")
    try:
        ep.to_python(module)
        spec = importlib.util.spec_from_file_location(Path(module).stem, module)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        runs["python"] = lambda a: (getattr(mod, ep.name)(*a), a)
    except Exception as exc:  # noqa: BLE001
        errors["python"] = f"{type(exc).__name__}: {str(exc)[:70]}"
    return runs, errors


def _ms(fn: Callable, args: list, repeat: int = 7) -> float:
    for _ in range(2):
        fn(copy.deepcopy(args))
    times = []
    for _ in range(repeat):
        a = copy.deepcopy(args)
        t0 = time.perf_counter()
        fn(a)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def check(case: Case, folder: str, timing: bool = True) -> tuple[dict, tuple | None]:
    row: dict[str, str] = {"dynamic": "", "error": ""}
    try:
        ep, dynamic = export(case)
    except Exception as exc:  # noqa: BLE001 (a row, not a crash)
        row["error"] = f"export: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
        return row, None
    row["dynamic"] = "dynamic" if dynamic else "static"
    inputs = case.inputs if dynamic else case.inputs[:1]
    runs, errors = runners(ep, folder)
    row.update(errors)
    for target, run in runs.items():
        ok = True
        for args in inputs:
            try:
                if target == "onnx":
                    expected = onnx_expected(ep, case.fn, args)
                else:
                    plain = copy.deepcopy(args)
                    expected = (case.fn(*plain), plain)
                got = run(copy.deepcopy(args))
                got = got[0] if target == "onnx" else got
                ok = ok and same(expected, got, EXACT[target])
            except Exception as exc:  # noqa: BLE001
                row[target] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
                ok = None
                break
        if ok is not None:
            row[target] = "ok" if ok else "DIFFERS"
    times = None
    if timing and row.get("onnx") == "ok" and row.get("numba") == "ok":
        timed = case.timed if case.timed is not None and dynamic else case.inputs[0]
        times = (_ms(runs["numba"], timed), _ms(runs["onnx"], timed))
    return row, times


def table(title: str, cases: list, folder: str, timing: bool) -> str:
    """Check and print every program of ``cases``; returns the coverage row (markdown)."""
    print(f"\n== {title}")
    print(f"{'program':<26} {'dims':<7} " + " ".join(f"{t:<8}" for t in TARGETS)
          + "  numba ms    ORT ms  ORT/numba")
    totals, exported, ratios = dict.fromkeys(TARGETS, 0), 0, []
    for case in cases:
        if isinstance(case, tuple):
            print(f"{case[0]:<26} {case[1][:100]}")
            continue
        row, times = check(case, folder, timing)
        if row["error"]:
            print(f"{case.name:<26} {row['error']}")
            continue
        exported += 1
        cells = []
        for t in TARGETS:
            value = row.get(t, "-")
            totals[t] += value == "ok"
            cells.append(f"{value if value in ('ok', 'DIFFERS') else 'error':<8}")
        cell = ""
        if times:
            ratios.append(times[1] / times[0])
            cell = f"{times[0]:9.3f} {times[1]:9.3f} {times[1] / times[0]:9.2f}x"
        print(f"{case.name:<26} {row['dynamic']:<7} " + " ".join(cells) + f"  {cell}")
        for t in TARGETS:
            if row.get(t) not in ("ok", "DIFFERS", None):
                print(f"    {t}: {row[t]}")
        for note in case.notes:
            print(f"    {note}")
    print(f"exported as one graph: {exported}/{len(cases)}")
    for t in TARGETS:
        print(f"  {t:<8} matches NumPy: {totals[t]}/{exported}")
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        print(f"  ORT time / numba time, geometric mean over {len(ratios)}: {geo:.2f}x "
              "(rough: a shared machine)")
    return (f"| {title.split(' (')[0]} | {exported}/{len(cases)} | "
            + " | ".join(f"{totals[t]}/{exported}" for t in TARGETS) + " |")


COVERAGE_HEADER = ("| programs | one graph | eager | numba | archive | ONNX Runtime "
                   "| NumPy only |\n|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(DEFAULT_FOLDER))
    parser.add_argument("--only", default="")
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--no-kernels", action="store_true")
    opts = parser.parse_args(argv)
    only = set(filter(None, opts.only.split(",")))
    warnings.simplefilter("ignore")
    rows = []
    with tempfile.TemporaryDirectory(prefix="npdynamo-export-cov-") as tmp:
        cases = [c for c in workload_cases() if not only or c.name in only]
        if cases:
            rows.append(table("make bench workloads (benchmarks/workloads.py)", cases, tmp,
                              not opts.no_time))
        folder = Path(opts.folder)
        if not opts.no_kernels and not folder.is_dir():
            print(f"\nno kernels at {folder} (the external folder is not part of the "
                  "repository; NPDYNAMO_EXTERNAL names another place)")
        elif not opts.no_kernels:
            rows.append(table(f"numpy-benchmarks kernels ({folder})",
                              kernel_cases(folder, only), tmp, not opts.no_time))
    print("\n== coverage (programs matching NumPy / programs exported as one graph)")
    print(COVERAGE_HEADER, *rows, sep="\n")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
