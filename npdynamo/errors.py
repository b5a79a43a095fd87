"""The error hierarchy every stage raises into: each message says what happened and what to do."""

from __future__ import annotations


class NpdynamoError(Exception):
    """Root of every error npdynamo raises on purpose."""


class Unsupported(NpdynamoError):
    """Code the translator cannot put into a graph (a graph break under ``fullgraph=True``)."""


class BackendCompilerFailed(NpdynamoError):
    """A backend could not compile a graph."""


class InvalidBackend(NpdynamoError):
    """A backend name that is not registered, or an object that is not a backend."""


class GradError(NpdynamoError):
    """A gradient that cannot be computed (non-scalar output, non-differentiable op, ...)."""
