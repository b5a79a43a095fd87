"""Backends: compile an ``fx.GraphModule`` into a callable (``eager``, ``numba``, ...)."""

from npdynamo.backends import eager as _eager  # noqa: F401  (registers "eager")
from npdynamo.backends.registry import list_backends, lookup_backend, register_backend


@register_backend("numba")
def _numba(gm, example_inputs):
    """The ``numba`` backend, imported on first use so that ``import npdynamo`` skips numba
    (and a graph's first call on its eager tier does too: ``numba.front``)."""
    from npdynamo.backends.numba import front

    tiered = front.start(gm, example_inputs)
    if tiered is not None:
        return tiered
    from npdynamo.backends.numba import numba_backend

    return numba_backend(gm, example_inputs)


__all__ = ["list_backends", "lookup_backend", "register_backend"]
