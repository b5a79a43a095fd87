"""Backends: compile an ``fx.GraphModule`` into a callable (``eager``, ``numba``, ...)."""

from npdynamo.backends import eager as _eager  # noqa: F401  (registers "eager")
from npdynamo.backends.registry import list_backends, lookup_backend, register_backend

__all__ = ["list_backends", "lookup_backend", "register_backend"]
