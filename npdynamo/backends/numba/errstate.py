"""NumPy's floating-point error state (``np.errstate``/``np.seterr``) as seen by numba programs.

Kernels compute with ``error_model='numpy'`` and never report floating-point errors, which is
what NumPy's default error state amounts to for their results. Under any other state (a user's
``with np.errstate(all='raise')`` or ``'warn'``) a program runs the graph on the eager backend
instead, so NumPy raises or warns itself; under ``all='ignore'`` the kernels' silence is right.
The check runs on every call, so it must be cheap (``fp_state``: one ``ContextVar.get`` and a
membership test by identity).
"""

from __future__ import annotations

from npdynamo.backends.fp_state import DEFAULT, DEFAULT_STATES, current, error_state_kind

__all__ = ["DEFAULT", "DEFAULT_STATES", "current", "kernels_may_run"]


def kernels_may_run() -> bool:
    """Whether kernels give what NumPy gives under the current error state.

    The default state (kernels' results are NumPy's; its warnings are not repeated) or every
    error ignored. The generated programs test ``current() in DEFAULT_STATES`` inline first."""
    return current() in DEFAULT_STATES or error_state_kind() != "other"
