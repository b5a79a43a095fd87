"""The kernel disk cache: where it lives, its permissions, and reuse by a fresh process."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import npdynamo
from npdynamo.backends.numba import diskcache


def test_cache_dir_is_private_and_configurable(tmp_path, monkeypatch):
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(tmp_path / "a" / "b"))
    path = diskcache.cache_dir()
    assert path == tmp_path / "a" / "b" / "kernels"
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b").st_mode) == 0o700
    monkeypatch.delenv("NPDYNAMO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert diskcache.cache_dir() == tmp_path / "xdg" / "npdynamo" / "kernels"


def test_without_a_cache_dir_kernels_compile_from_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NPDYNAMO_CACHE_DIR", str(blocker / "sub"))
    assert diskcache.cache_dir() is None

    def f(x):
        return x * 3.5 - 1.25

    x = np.arange(6.0)
    fn = npdynamo.compile(f, backend="numba")
    assert np.array_equal(fn(x), f(x))


def test_kernel_files_are_keyed_by_source(kernel_cache_dir):
    template = ('"""k"""\nfrom numba import njit\n@njit(cache={cache})\n'
                "def kernel(x):\n    return x\n")
    mod, path, source = diskcache.load_kernel_module(template)
    assert "cache=True" in source and path.startswith(str(kernel_cache_dir))
    assert open(path).read() == diskcache.file_text(source) and mod.kernel(3) == 3
    assert diskcache.load_kernel_module(template)[0] is mod  # imported once per process
    assert diskcache.source_key(source) != diskcache.source_key(source + "\n")


SCRIPT = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import numpy as np, npdynamo
    from benchmarks.workloads import gelu
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    fn = npdynamo.compile(gelu, backend="numba")
    t1 = time.perf_counter()
    y = fn(x)
    t2 = time.perf_counter()
    from npdynamo.backends.numba import diskcache
    stats = [m.kernel.stats for m in diskcache._loaded.values()]
    hits = sum(sum(s.cache_hits.values()) for s in stats)
    misses = sum(sum(s.cache_misses.values()) for s in stats)
    print(hits, misses, float(np.abs(y - gelu(x)).max()), t2 - t1)
""")


def test_a_fresh_process_reuses_the_compiled_kernels(tmp_path):
    env = dict(os.environ, NPDYNAMO_CACHE_DIR=str(tmp_path / "cache"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                             text=True, check=True, cwd=root)
        hits, misses, err, _seconds = out.stdout.split()
        runs.append((int(hits), int(misses), float(err)))
    (h1, m1, e1), (h2, m2, e2) = runs
    assert h1 == 0 and m1 >= 1  # the first process compiles...
    assert h2 >= 1 and m2 == 0  # ...the second loads the machine code from disk
    assert e1 < 1e-5 and e2 < 1e-5
    assert list((tmp_path / "cache" / "kernels").glob("k_*.py"))


DAMAGE_SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np, npdynamo
    from npdynamo.backends.numba import diskcache

    def f(x, y):
        return np.sqrt(x * x + y) * 0.5 - y

    x = np.linspace(0.0, 2.0, 50)
    y = np.linspace(1.0, 3.0, 50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = npdynamo.compile(f, backend="numba")(x, y)
    stats = [m.kernel.stats for m in diskcache._loaded.values()]
    hits = sum(sum(s.cache_hits.values()) for s in stats)
    cache_warnings = [str(w.message) for w in caught
                      if issubclass(w.category, diskcache.KernelCacheWarning)]
    others = [str(w.message) for w in caught
              if not issubclass(w.category, diskcache.KernelCacheWarning)]
    assert not others, others
    print(len(cache_warnings), hits, float(np.abs(got - f(x, y)).max()))
    for message in cache_warnings:
        print(message)
""")


def _cut_kernel_file(kernels):
    (path,) = kernels.glob("k_*.py")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-3]))  # cut at a line boundary: still valid Python


def _cut_nbc(kernels):
    (path,) = (kernels / "__pycache__").glob("k_*.nbc")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage_nbi(kernels):
    (path,) = (kernels / "__pycache__").glob("k_*.nbi")
    path.write_bytes(b"\x80\x04garbage, not an index" * 10)


def _env(tmp_path):
    env = dict(os.environ, NPDYNAMO_CACHE_DIR=str(tmp_path / "cache"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env, root


def test_two_processes_filling_the_same_entry_at_once(tmp_path):
    env, root = _env(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-c", DAMAGE_SCRIPT], env=env, cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        count, _hits, error = out.split()[:3]
        assert count == "0" and float(error) < 1e-12
    assert not list((tmp_path / "cache" / "kernels").glob("*.tmp"))


def _damage_run(tmp_path) -> tuple[int, int, float, list[str]]:
    """DAMAGE_SCRIPT in a fresh process on the cache under ``tmp_path``: (cache warnings, cache
    hits, largest error, the warnings' messages)."""
    env, root = _env(tmp_path)
    out = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT], env=env,
                         capture_output=True, text=True, cwd=root)
    assert out.returncode == 0, out.stderr
    first, *messages = out.stdout.splitlines()
    count, hits, err = first.split()
    return int(count), int(hits), float(err), messages


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """The cache DAMAGE_SCRIPT fills, compiled once for the module; each case damages a copy."""
    path = tmp_path_factory.mktemp("filled")
    assert _damage_run(path)[:2] == (0, 0)  # compiled and stored
    return path / "cache"


@pytest.mark.parametrize("damage", [_cut_kernel_file, _cut_nbc, _garbage_nbi],
                         ids=["kernel-py-cut", "nbc-cut", "nbi-garbage"])
def test_a_damaged_cache_entry_is_rebuilt_and_reported_once(tmp_path, damage, filled_cache):
    # copy2 keeps the files' times, which numba's index checks: the copy is a valid cache (the
    # nbc-cut case would see no damage otherwise)
    shutil.copytree(filled_cache, tmp_path / "cache")
    kernels = tmp_path / "cache" / "kernels"
    damage(kernels)
    count, _hits, err, messages = _damage_run(tmp_path)
    assert count == 1 and err < 1e-12  # right results, one warning naming the file
    assert str(kernels) in messages[0] and "rebuilt" in messages[0]
    count, hits, err, _ = _damage_run(tmp_path)
    assert count == 0 and hits >= 1 and err < 1e-12  # the rebuilt entry is used again


FAST_LOAD_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np, npdynamo
    from numba.core.registry import cpu_target
    from benchmarks.workloads import gelu

    # a new ufunc each process: a kernel no process has compiled (a new float constant would
    # not do: constants are kernel parameters, so the kernel would be the one on disk)
    op = getattr(np, sys.argv[1])

    def other(x):
        return op(np.abs(x)) * 2.0 + x

    x = np.linspace(-3, 3, 200_000, dtype=np.float32)  # big enough for a parallel variant too
    fn = npdynamo.compile(gelu, backend="numba")
    errors = [float(np.abs(fn(x) - gelu(x)).max()) for _ in range(12)]  # past the tuning calls
    registries = len(cpu_target.target_context._registries)
    # a compile later in the same process works: numba's compiler loads the registries itself
    errors.append(float(np.abs(npdynamo.compile(other, backend="numba")(x) - other(x)).max()))
    print(registries, len(cpu_target.target_context._registries), max(errors))
""")


def test_a_warm_start_loads_kernels_without_numbas_registries(tmp_path):
    """A fresh process that finds its kernels on disk runs them without importing numba's
    typing and lowering registries (the bulk of a warm start-up); compiles after that work."""
    env, root = _env(tmp_path)
    runs = []
    for ufunc in ("sqrt", "tanh"):
        out = subprocess.run([sys.executable, "-c", FAST_LOAD_SCRIPT, ufunc], env=env, cwd=root,
                             capture_output=True, text=True, check=True)
        before, after, err = out.stdout.split()
        runs.append((int(before), int(after), float(err)))
    assert runs[0][0] > 0  # the first process compiled: numba loaded its registries
    assert runs[1][0] == 0  # the second only loaded machine code...
    assert runs[1][1] > 0  # ...until it compiled a kernel of its own
    assert runs[0][2] < 1e-5 and runs[1][2] < 1e-5
