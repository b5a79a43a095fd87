"""NumPy's floating-point error state and the warnings filters, read cheaply on every call.

Shared by the backends (below ``eager``, ``numba`` and ``compile``): a backend that skips or
reorders NumPy's error reporting, or writes before it knows nothing will raise, must know per
call whether NumPy would only warn as usual. NumPy 2 keeps the
error state in a context variable whose value object changes whenever the state does, so one
``ContextVar.get`` and a test against the states known to be the default (~50 ns) tell the
default state apart.
"""

from __future__ import annotations

import contextvars
import warnings
from collections.abc import Callable

import numpy as np

from npdynamo.fx.node import Node

try:  # NumPy 2: the state is one object in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar

    current: Callable[[], object] = _extobj_contextvar.get
    #: The state a fresh context starts with (not the one at import: a user may have changed it).
    DEFAULT: object = contextvars.Context().run(current)
    _DEFAULT_ERRORS = contextvars.Context().run(np.geterr)
except (ImportError, AttributeError):  # pragma: no cover - another NumPy layout: a slower check
    _DEFAULT_DICT = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}
    _DEFAULT_ERRORS = _DEFAULT_DICT
    DEFAULT = object()

    def current() -> object:
        return DEFAULT if np.geterr() == _DEFAULT_DICT else None


#: The error state objects known to be the default one: ``DEFAULT`` and those found equal to it
#: (``np.seterr(**old)`` restores an equal state in another object, and a warm path testing
#: identity with ``DEFAULT`` alone would take its general path for good after it). Generated warm
#: paths test ``current() in DEFAULT_STATES``: an object hashes by identity, so this costs about
#: what ``is`` does. Held, so no id is ever reused; bounded, beyond which the general path serves.
DEFAULT_STATES: set = {DEFAULT}
_MAX_DEFAULT_STATES = 16

# The warnings filters last seen (the list object itself, kept so its id is never reused) and
# whether a RuntimeWarning could become an exception under them.
_seen_filters: list | None = None
_seen_length = -1
_seen_first: object = None
_seen_may_raise = True


def ufuncs_cannot_raise() -> bool:
    """True when no ufunc call can raise a floating-point error now: NumPy's error state is
    the default one (errors warn, or are ignored) and no warnings filter turns a
    ``RuntimeWarning`` into an exception (``-W error``, ``simplefilter("error")``), or every
    error is ignored."""
    kind = error_state_kind()
    if kind != "default":
        return kind == "ignore"
    return not _runtime_warnings_raise()


# The last non-default error state object seen (kept, so its id is never reused) and its kind:
# ``np.geterr()`` builds a dict (~1 us), too much for every call of a small graph run under
# ``with np.errstate(all="ignore")``.
_seen_state: object = None
_seen_kind = "other"


def error_state_kind() -> str:
    """``"default"`` when every floating-point error is handled as in a fresh context (also a
    state object equal to it, as ``with np.errstate():`` makes), ``"ignore"`` when every error is
    ignored, ``"other"`` otherwise (some error raises, calls a handler, or warns where NumPy's
    default does not)."""
    global _seen_state, _seen_kind
    state = current()
    if state in DEFAULT_STATES:
        return "default"
    if state is not _seen_state or state is None:
        errors = np.geterr()
        _seen_kind = ("default" if errors == _DEFAULT_ERRORS
                      else "ignore" if all(v == "ignore" for v in errors.values()) else "other")
        _seen_state = state
        if _seen_kind == "default" and state is not None and \
                len(DEFAULT_STATES) < _MAX_DEFAULT_STATES:
            DEFAULT_STATES.add(state)
    return _seen_kind


def _runtime_warnings_raise() -> bool:
    global _seen_filters, _seen_length, _seen_first, _seen_may_raise
    filters = warnings.filters
    first = filters[0] if filters else None
    if filters is _seen_filters and len(filters) == _seen_length and first is _seen_first:
        return _seen_may_raise
    may_raise = any(action == "error" and issubclass(RuntimeWarning, category)
                    for action, _message, category, _module, _line in filters)
    _seen_filters, _seen_length, _seen_first, _seen_may_raise = (
        filters, len(filters), first, may_raise)
    return may_raise


def is_plain_ufunc_call(node: Node) -> bool:
    """A call of a NumPy ufunc with one output and positional operands only: under
    ``ufuncs_cannot_raise()`` it cannot raise, and ``out=`` may be added to it."""
    impl = getattr(node.target, "impl", node.target)
    return (node.op == "call_function" and isinstance(impl, np.ufunc) and impl.nout == 1
            and not node.kwargs and len(node.args) == impl.nin)
