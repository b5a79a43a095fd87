"""Backend registry: the last stage of the pipeline turns an ``fx.GraphModule`` into a callable.

A backend is ``backend(gm, example_inputs) -> callable``; the callable takes the graph's inputs
positionally and returns a tuple of its outputs. The package's backends return a
``backends.report.Compiled`` (a callable with a typed report and retargets). Backends are looked
up by name or passed directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npdynamo.errors import InvalidBackend, user_location

Backend = Callable[[Any, list], Callable[..., tuple]]

_BACKENDS: dict[str, Backend] = {}
#: a registered backend's ``on_compile()``, run by each ``compile(fn, backend=...)`` (bound into
#: the session by the composition root, ``npdynamo/api.py``): the numba backend starts its
#: compile workers there, ahead of the first call
_ON_COMPILE: dict[Backend, Callable[[], None]] = {}


def register_backend(
    name: str | Callable | None = None,
    fn: Backend | None = None,
    *,
    override: bool = False,
    on_compile: Callable[[], None] | None = None,
):
    """Register ``fn`` as backend ``name``; also works as a decorator, with or without a name.

    A name already registered is refused unless ``override=True``: replacing ``"eager"`` would
    change every function compiled with it, everywhere in the process. ``on_compile()``, if
    given, runs at each ``compile(fn, backend=name)`` (a backend's start ahead of calls)."""
    if callable(name) and fn is None:
        return register_backend(name.__name__, name, override=override, on_compile=on_compile)
    if fn is None:
        return lambda f: register_backend(name, f, override=override, on_compile=on_compile)
    if not isinstance(name, str) or not name:
        raise InvalidBackend(
            f"{user_location()}: a backend name must be a non-empty string, not {name!r}"
        )
    if not callable(fn):
        raise InvalidBackend(
            f"{user_location()}: backend {name!r} must be a callable backend(gm, "
            f"example_inputs), not {fn!r}"
        )
    if name in _BACKENDS and _BACKENDS[name] is not fn and not override:
        raise InvalidBackend(
            f"{user_location()}: a backend named {name!r} is already registered; choose another "
            "name, or pass override=True to replace it for every function compiled with it"
        )
    _BACKENDS[name] = fn
    if on_compile is not None:
        _ON_COMPILE[fn] = on_compile
    return fn


def compile_hook(backend: Backend) -> Callable[[], None] | None:
    """What ``compile(fn, backend=backend)`` runs once per compiled function, if anything."""
    return _ON_COMPILE.get(backend)


def list_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    return sorted(_BACKENDS)


def backend_name(backend: Backend) -> str:
    """The name ``backend`` is registered under, else its own name (a callable passed in)."""
    for name, fn in _BACKENDS.items():
        if fn is backend:
            return name
    return getattr(backend, "__name__", None) or type(backend).__name__


def lookup_backend(backend: str | Backend) -> Backend:
    """The backend callable for a name or a callable; unknown names raise ``InvalidBackend``."""
    if callable(backend):
        return backend
    if isinstance(backend, str) and backend in _BACKENDS:
        return _BACKENDS[backend]
    raise InvalidBackend(
        f"{user_location()}: unknown backend {backend!r}; registered backends: "
        f"{', '.join(list_backends())}. Pass one of these names, a callable "
        "backend(gm, example_inputs), or register yours with npdynamo.register_backend(name)."
    )


#: (is_special(example_input), wrap(backend) -> backend): a graph with such an example input is
#: compiled by the wrapped backend. Autograd registers its AOT wrap for tracers here, so the
#: compile step applies it without importing the stage above it.
_INPUT_WRAPPERS: list[tuple[Callable[[Any], bool], Callable[[Backend], Backend]]] = []


def register_input_wrapper(
    is_special: Callable[[Any], bool], wrap: Callable[[Backend], Backend]
) -> None:
    """Compile graphs with an input for which ``is_special`` holds with ``wrap(backend)``."""
    _INPUT_WRAPPERS.append((is_special, wrap))


def backend_for_inputs(backend: Backend, example_inputs: list) -> Backend:
    """``backend``, wrapped by every registered wrapper whose inputs are present."""
    for is_special, wrap in _INPUT_WRAPPERS:
        if any(is_special(x) for x in example_inputs):
            backend = wrap(backend)
    return backend
