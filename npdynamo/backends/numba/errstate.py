"""NumPy's floating-point error state (``np.errstate``/``np.seterr``) as seen by numba programs.

Kernels compute with ``error_model='numpy'`` and never report floating-point errors, which is
what NumPy's default error state amounts to for their results. Under any other state (a user's
``with np.errstate(all='raise')`` or ``'warn'``) a program runs the graph on the eager backend
instead, so NumPy raises or warns itself; under ``all='ignore'`` the kernels' silence is right.
The check runs on every call, so it must be cheap: NumPy 2 keeps
the state in a context variable whose value object changes whenever the state does, so one
``ContextVar.get`` and an identity test (~50 ns) tell the default state apart.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

import numpy as np

try:  # NumPy 2: the state is one object in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar

    current: Callable[[], object] = _extobj_contextvar.get
    #: The state a fresh context starts with (not the one at import: a user may have changed it).
    DEFAULT: object = contextvars.Context().run(current)
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout: a slower check
    _DEFAULT_DICT = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
    DEFAULT = object()

    def current() -> object:
        return DEFAULT if np.geterr() == _DEFAULT_DICT else None


def kernels_may_run() -> bool:
    """Whether kernels give what NumPy gives under the current error state.

    The default state (kernels' results are NumPy's; its warnings are not repeated) or every
    error ignored. The generated programs test ``current() is DEFAULT`` inline first."""
    return current() is DEFAULT or all(v == "ignore" for v in np.geterr().values())
