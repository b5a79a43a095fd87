"""The kernel disk cache: generated kernel modules as real files, so numba's cache works.

Each kernel's module source is written once to ``$NPDYNAMO_CACHE_DIR/kernels/k_<key>.py``
(default ``~/.cache/npdynamo``, created readable by the user only), where the key hashes the
source together with the Python, NumPy and numba versions and the backend's own runtime code.
The file's first line carries the SHA-256 digest of the rest. The module is compiled from the
file's text and its kernels use ``cache=True``, so numba stores the machine code next to the
file (``__pycache__/*.nbi``, ``*.nbc``) and a fresh process that generates the same source loads
it instead of compiling (without importing numba's typing and lowering registries, which only
a compile needs: half of a warm start-up). A process loads each module once and reuses it for
every graph that produces the same kernel. When no cache directory can be created the kernel is
compiled from memory, without the disk cache.

Nothing on disk is trusted: a kernel file whose text is not exactly the expected one (cut short,
edited, another kernel's) is replaced before use, and a numba cache file that fails to load
(truncated, garbage) is deleted so numba compiles and stores the kernel again. Each repair is
reported once per process (``KernelCacheWarning``, naming the file to delete if it repeats).
Files are written to a temporary name and renamed, so processes writing the same entry at once
each see either no file or a whole one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import types
import warnings
from pathlib import Path

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

from npdynamo.backends.numba.cache_location import cache_dir
from npdynamo.errors import KernelCacheWarning
from npdynamo.generated import run

_PACKAGE = "npdynamo_kernels"
_loaded: dict[str, types.ModuleType] = {}
_RUNTIME_FILES = ("approx.py", "runtime.py", "loop_runtime.py", "boxing.py")


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


_reported: set[str] = set()


def _report(path: str, what: str) -> None:
    if path in _reported:
        return
    _reported.add(path)
    warnings.warn(f"npdynamo: the kernel cache entry {path} was {what}; it was discarded and "
                  f"rebuilt. If this repeats, delete {path} (or the whole directory "
                  f"{os.path.dirname(path)}).", KernelCacheWarning, stacklevel=2)


def file_text(source: str) -> str:
    """What the kernel file of ``source`` holds: a digest line, then the source."""
    return f"# npdynamo kernel, sha256 {hashlib.sha256(source.encode()).hexdigest()}\n{source}"


def load_kernel_module(source_template: str) -> tuple[types.ModuleType, str, str]:
    """Load the module of ``source_template`` (its ``{cache}`` placeholder filled in).

    Returns the module, its file path (``"<memory>"`` without a cache directory) and its source.
    """
    directory = cache_dir()
    source = source_template.replace("cache={cache}", f"cache={directory is not None}")
    return _load(source, directory, "k", source_key(source))


def load_loop_module(source: str, namespace: dict, described: str) -> tuple[types.ModuleType, str]:
    """Load a loop program's module (``loop_program``): ``source`` run in a module holding
    ``namespace`` (the objects its names stand for, which ``described`` identifies: the key
    covers both, so numba's cached machine code, which has them built in, is reused only for
    the same ones). Returns the module and its file path (``"<memory>"`` without a cache)."""
    directory = cache_dir()
    key = source_key(f"{described}\n{source}")
    module, path, _ = _load(source, directory, "l", key, namespace)
    return module, path


def _load(source: str, directory: Path | None, prefix: str, key: str,
          namespace: dict | None = None) -> tuple[types.ModuleType, str, str]:
    # keyed by the cache directory too: a module loaded from another directory keeps writing
    # its machine code there (a compile worker outlives a change of NPDYNAMO_CACHE_DIR)
    slot = f"{directory}/{key}"
    if slot in _loaded:
        module = _loaded[slot]
        return module, getattr(module, "__file__", None) or "<memory>", source
    name = f"{_PACKAGE}.{prefix}_{key}"
    module = types.ModuleType(name)
    module.__dict__.update(namespace or {})
    if directory is None:
        path = "<memory>"
        run(source, module.__dict__, filename=f"<npdynamo-kernel-{key}>", lines=False)
    else:
        path = str(directory / f"{prefix}_{key}.py")
        text = file_text(source)
        _ensure_file(path, text)
        # compiled from the checked text, not re-read by an import (no .pyc to go stale)
        module.__file__ = path
        sys.modules[name] = module
        run(text, module.__dict__, filename=path, lines=False)
        kernel = getattr(module, "kernel", None)
        if isinstance(kernel, Dispatcher) and cache_index(kernel) is not None:
            guard_numba_cache(kernel, path)
    _loaded[slot] = module
    return module, path, source


def load_compiled(dispatcher: Dispatcher, signature: tuple) -> bool:
    """Load ``dispatcher``'s machine code for ``signature`` (argument types) from the disk
    cache, where a compile worker put it; never compile it. False when it is not there (the
    kernel then compiles at its first call, as any kernel)."""
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:  # (as numba's own compile: its state is one per process)
        if tuple(signature) in dispatcher.overloads:
            return True
        found = dispatcher._cache.load_overload(signature, dispatcher.targetctx)
        if found is None:
            return False
        dispatcher._cache_hits[signature] += 1  # counted as numba counts a load by a call
        if not found.objectmode:
            dispatcher.targetctx.insert_user_function(found.entry_point, found.fndesc,
                                                      [found.library])
        dispatcher.add_overload(found)
        return True


def kernel_loads() -> dict[str, int]:
    """How this process got its numba kernels so far: ``{"from_disk": n, "compiled": m}``.

    Counted per kernel signature from numba's own statistics: a load from the kernel cache is a
    numba cache hit, anything else was compiled here."""
    counts = {"from_disk": 0, "compiled": 0}
    for module in _loaded.values():
        kernel = getattr(module, "kernel", None)
        if not isinstance(kernel, Dispatcher):
            continue
        hits = sum(kernel.stats.cache_hits.values())
        counts["from_disk"] += hits
        counts["compiled"] += max(len(kernel.overloads) - hits, 0)
    return counts


def _ensure_file(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            found = f.read()
    except FileNotFoundError:
        found = None
    if found == text:
        # not rewritten: a new timestamp would make numba discard the machine code cached for it
        return
    if found is not None:
        what = "cut short" if text.startswith(found) else "damaged or foreign (unexpected text)"
        _remove_numba_files(path)
        _report(path, what)
    _write_atomic(path, text)


def _write_atomic(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _remove_numba_files(path: str) -> None:
    """Delete numba's cache files of the kernel file ``path`` (best effort)."""
    stem = Path(path).stem
    for f in (Path(path).parent / "__pycache__").glob(f"{stem}.*"):
        with contextlib.suppress(OSError):
            f.unlink()


def guard_numba_cache(dispatcher: Dispatcher, path: str) -> None:
    """Make a failing load of numba's cache files a cache miss (files deleted, kernel rebuilt)
    instead of an error that would send every later process to the eager backend."""
    cache = dispatcher._cache
    load = cache.load_overload

    def checked_load(sig, target_context):
        if not _registries_loaded(target_context):
            with contextlib.suppress(Exception):  # whatever it lacks, the full load below has
                found = _load_without_registries(cache, sig, target_context)
                if found is not None:
                    return found
        try:
            return load(sig, target_context)
        except Exception as exc:  # whatever unpickling a damaged file raises
            index = cache_index(dispatcher)
            _remove_numba_files(path)
            _report(index, f"unreadable ({type(exc).__name__}) in numba's cache for {path}")
            return None  # numba compiles the kernel and saves fresh files

    cache.load_overload = checked_load


def cache_index(dispatcher: Dispatcher) -> str | None:
    """The path of numba's cache index file for ``dispatcher`` (the file that says which
    signatures have machine code on disk), or None when it does not cache to disk."""
    # numba has no public way to ask: the path is an attribute of the dispatcher's private
    # cache-file object (numba 0.68: ``_cache._cache_file._index_path``; a NullCache has
    # no file). This is the one place that reads it; a numba that renames it gives None here
    # (kernels counted as not on disk, damaged files not guarded), never an AttributeError.
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    return getattr(cache_file, "_index_path", None)


def _registries_loaded(target_context) -> bool:
    """Whether numba has imported its typing and lowering registries in this process (its first
    compile does; about 0.15 s of a fresh process's first call)."""
    # numba has no public flag for it: its target context fills the private ``_registries``
    # dict when it refreshes. Read only here; a numba without it answers False (the full load).
    return bool(getattr(target_context, "_registries", None))


def _load_without_registries(cache, sig, target_context):
    """The cached overload of ``sig`` loaded without importing numba's registries.

    numba refreshes its context before every cache load so that a compile could follow; running
    machine code from the cache needs only the runtime (NRT) that kernels' argument handling
    calls into. A compile later in the process still refreshes the context first (numba's
    compiler does that itself)."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    return cache._load_overload(sig, target_context)
