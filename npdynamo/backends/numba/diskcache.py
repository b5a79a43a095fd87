"""The kernel disk cache: generated kernel modules as real files, so numba's cache works.

Each kernel's module source is written once to ``$NPDYNAMO_CACHE_DIR/kernels/k_<key>.py``
(default ``~/.cache/npdynamo``, created readable by the user only), where the key hashes the
source together with the Python, NumPy and numba versions and the backend's own runtime code.
The module is imported with ``importlib`` and its kernels are compiled with ``cache=True``, so
numba stores the machine code next to the file and a fresh process that generates the same
source loads it instead of compiling. A process imports each module once and reuses it for
every graph that produces the same kernel. When no cache directory can be created the kernel is
compiled from memory, without the disk cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import types
from pathlib import Path

import numba
import numpy as np

_PACKAGE = "npdynamo_kernels"
_loaded: dict[str, types.ModuleType] = {}
_RUNTIME_FILES = ("approx.py", "runtime.py")


def cache_dir() -> Path | None:
    """The cache directory (created with mode 0o700), or ``None`` if it cannot be created."""
    configured = os.environ.get("NPDYNAMO_CACHE_DIR")
    if configured:
        root = Path(configured).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        root = Path(base).expanduser() / "npdynamo"
    try:
        if not root.is_dir():
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            root.chmod(0o700)
        kernels = root / "kernels"
        kernels.mkdir(mode=0o700, exist_ok=True)
        return kernels if os.access(kernels, os.W_OK) else None
    except OSError:
        return None


def _runtime_digest() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _RUNTIME_FILES:
        h.update((here / name).read_bytes())
    return h.hexdigest()


_VERSIONS = f"{sys.version}|numpy {np.__version__}|numba {numba.__version__}|{_runtime_digest()}"


def source_key(source: str) -> str:
    """The cache key of a kernel module's source (valid across processes)."""
    return hashlib.sha256(f"{_VERSIONS}\n{source}".encode()).hexdigest()[:24]


def load_kernel_module(source_template: str) -> tuple[types.ModuleType, str, str]:
    """Import the module of ``source_template`` (its ``{cache}`` placeholder filled in).

    Returns the module, its file path (``"<memory>"`` without a cache directory) and its source.
    """
    directory = cache_dir()
    source = source_template.replace("cache={cache}", f"cache={directory is not None}")
    key = source_key(source)
    if key in _loaded:
        module = _loaded[key]
        return module, getattr(module, "__file__", None) or "<memory>", source
    name = f"{_PACKAGE}.k_{key}"
    if directory is None:
        module = types.ModuleType(name)
        exec(compile(source, f"<npdynamo-kernel-{key}>", "exec"), module.__dict__)
        path = "<memory>"
    else:
        path = str(directory / f"k_{key}.py")
        _write_once(path, source)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    _loaded[key] = module
    return module, path, source


def _write_once(path: str, source: str) -> None:
    # An existing file with this key holds this very source; rewriting it would change its
    # timestamp and make numba discard the machine code cached for it.
    if os.path.exists(path):
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
