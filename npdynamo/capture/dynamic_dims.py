"""Which input dimensions a capture makes symbolic: automatic dynamic shapes and user marks.

The builder asks ``dynamic_dims`` for every input array it turns into a graph placeholder. The
answer, per dimension of size >= 2 (0 and 1 stay specialised: ``ops/symbolic.py`` says why):

* ``compile(dynamic=True)``: every dimension is symbolic from the first call.
* ``compile(dynamic=False)``: none is, ever (only ``mark_dynamic`` can ask for one).
* default (``dynamic=None``, with ``config.automatic_dynamic_shapes``): the first call
  specialises. Each capture remembers, per code object and input source, the shape it saw;
  when a later capture of the same code sees that input with the same number of dimensions
  but another size in some dimension (the recompile a changed batch size causes), that
  dimension is symbolic from then on, for this capture and every later one.
* ``mark_dynamic(x, dim)`` / ``mark_static(x, dim)`` on an array before the call force the
  answer for that array, whatever the setting.

A graph break's re-trace asks again and gets the same answer (the decision was recorded by
the first trace), so both traces build the same symbols.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Iterable

import numpy as np

from npdynamo import config, logs
from npdynamo.errors import InvalidArgument, user_location

#: (code, input source name) -> the shape the first capture saw
_SEEN: dict[tuple[types.CodeType, str], tuple[int, ...]] = {}
#: (code, input source name) -> the dimensions found to change, symbolic from then on
_DYNAMIC: dict[tuple[types.CodeType, str], frozenset[int]] = {}
#: (code, source name) -> the first value a capture saw there, for Python ints and floats
_SEEN_SCALARS: dict[tuple[types.CodeType, str], object] = {}
#: (code, source name) of the Python numbers that are graph inputs from now on
_DYNAMIC_SCALARS: set[tuple[types.CodeType, str]] = set()
#: id(array) -> (weak reference, dims marked dynamic, dims marked static)
_MARKS: dict[int, tuple[weakref.ref, set[int], set[int]]] = {}


def dynamic_dims(
    code: types.CodeType, source_name: str, array: np.ndarray, mode: bool | None
) -> frozenset[int]:
    """The dimensions of ``array`` (read from ``source_name`` in ``code``) to make symbolic."""
    shape = array.shape
    key = (code, source_name)
    if mode is True:
        wanted = set(range(len(shape)))
    elif mode is None and config.automatic_dynamic_shapes:
        wanted = set(_DYNAMIC.get(key, ()))
        seen = _SEEN.setdefault(key, shape)
        if len(seen) == len(shape):
            changed = {d for d, (a, b) in enumerate(zip(seen, shape)) if a != b}
            if changed - wanted:
                logs.get_logger("dynamic").info(
                    "%s: %s dimension(s) %s changed size (%s -> %s): symbolic from now on",
                    code.co_qualname, source_name, sorted(changed - wanted), seen, shape)
            wanted |= changed
            _DYNAMIC[key] = frozenset(wanted)
    else:
        wanted = set()
    marks = _marks_of(array)
    if marks is not None:
        wanted = (wanted | marks[1]) - marks[2]
    return frozenset(d for d in wanted if d < len(shape) and shape[d] >= 2)


def dynamic_scalar(
    code: types.CodeType, source_name: str, value: object, mode: bool | None
) -> bool:
    """Whether a Python int or float read from ``source_name`` is a graph input (a dynamic
    scalar) rather than a constant: with ``dynamic=True`` always; by default once a capture of
    ``code`` saw another value there (a learning rate from a schedule, a step counter)."""
    if type(value) not in (int, float) or mode is False:
        return False
    if mode is True:
        return True
    if not config.automatic_dynamic_shapes:
        return False
    key = (code, source_name)
    if key in _DYNAMIC_SCALARS:
        return True
    seen = _SEEN_SCALARS.setdefault(key, value)
    if type(seen) is type(value) and seen != value:
        logs.get_logger("dynamic").info(
            "%s: %s changed value (%r -> %r): a graph input from now on",
            code.co_qualname, source_name, seen, value)
        _DYNAMIC_SCALARS.add(key)
        return True
    return False


def _marks_of(array: np.ndarray):
    found = _MARKS.get(id(array))
    if found is None or found[0]() is not array:
        return None
    return found


def _mark(array: object, dims: int | Iterable[int], dynamic: bool, what: str) -> None:
    if not isinstance(array, np.ndarray):
        raise InvalidArgument(
            f"{user_location()}: npdynamo.{what}(x, dim) takes a NumPy array, not "
            f"{type(array).__name__}")
    dims = [dims] if isinstance(dims, int) else list(dims)
    for d in dims:
        if not isinstance(d, int) or not -array.ndim <= d < array.ndim:
            raise InvalidArgument(
                f"{user_location()}: npdynamo.{what}: dimension {d!r} is out of range for an "
                f"array with {array.ndim} dimension(s)")
    found = _marks_of(array)
    if found is None:
        key = id(array)
        found = (weakref.ref(array, lambda _ref, key=key: _MARKS.pop(key, None)), set(), set())
        _MARKS[key] = found
    for d in dims:
        d %= array.ndim
        (found[1] if dynamic else found[2]).add(d)
        (found[2] if dynamic else found[1]).discard(d)


def mark_dynamic(array: np.ndarray, dims: int | Iterable[int]) -> None:
    """Make dimension(s) ``dims`` of ``array`` symbolic in the captures it is passed to, from
    the first call (sizes 0 and 1 stay specialised)."""
    _mark(array, dims, True, "mark_dynamic")


def mark_static(array: np.ndarray, dims: int | Iterable[int]) -> None:
    """Keep dimension(s) ``dims`` of ``array`` specialised (guarded on their exact size), even
    under ``dynamic=True`` or once automatic dynamic shapes would make them symbolic."""
    _mark(array, dims, False, "mark_static")


def forget() -> None:
    """Drop what automatic dynamic shapes learnt (``npdynamo.reset()``)."""
    _SEEN.clear()
    _DYNAMIC.clear()
    _SEEN_SCALARS.clear()
    _DYNAMIC_SCALARS.clear()

