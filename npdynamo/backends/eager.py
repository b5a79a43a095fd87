"""The ``eager`` backend: runs a graph's generated Python, one NumPy call per op."""

from __future__ import annotations

from collections.abc import Callable

from npdynamo import progress
from npdynamo.backends.registry import register_backend


@register_backend("eager")
def eager(gm, example_inputs: list) -> Callable[..., tuple]:
    """Return the graph module's generated ``forward``: results are bitwise NumPy's."""
    progress.end_capture()
    return gm.forward
