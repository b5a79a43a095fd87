"""Where the kernel disk cache lives (``$NPDYNAMO_CACHE_DIR``, by default ``~/.cache/npdynamo``).

Its own module, without numba: the tiered front (``jobs.py``) asks whether there is a writable
cache before it sends a new graph to the compile workers, which it does before numba is imported
in the caller's process. ``diskcache`` (the cache itself) uses it too.
"""

from __future__ import annotations

import os
from pathlib import Path

from npdynamo import config


def cache_dir() -> Path | None:
    """The cache directory (created with mode 0o700), or ``None`` if it cannot be created."""
    configured = config.environment("NPDYNAMO_CACHE_DIR")
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
