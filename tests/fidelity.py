"""Fidelity checks beyond values: the ``type`` and ``repr`` of what comes back, identity relations
between what comes back and what went in, and the state of iterators passed in.

``check_fidelity`` runs a function plain and compiled on deep copies of the same arguments (one
``deepcopy`` call, so an iterator and its list stay related) and compares, besides what
``check_same`` compares, a signature of the objects reachable from the result and the arguments.
"""

from __future__ import annotations

import types

import numpy as np

import npdynamo
from tests.differential import assert_compiled, assert_same_value, run_both

ITERATOR_TYPES = (
    type(iter([])),
    type(iter(())),
    type(iter(range(0))),
    type(iter({}.keys())),
    type(iter("")),
    enumerate,
    zip,
    map,
    filter,
    reversed,
    type(reversed([])),
)


def _walk(obj, out: list, seen: set) -> None:
    """Every object reachable through tuples, lists, dicts and instance dicts, in order (a
    set is described by its items' descriptions)."""
    out.append(obj)
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (tuple, list)):
        for item in obj:
            _walk(item, out, seen)
    elif isinstance(obj, dict):
        for key, item in obj.items():
            _walk(key, out, seen)
            _walk(item, out, seen)
    elif hasattr(obj, "__dict__") and not isinstance(
        obj, (type, types.FunctionType, types.ModuleType, types.MethodType)
    ):
        for item in vars(obj).values():
            _walk(item, out, seen)


def _identity_signature(objects: list, n_inputs: int) -> list:
    """For each object, the position where it first appears (equal positions: the same object).
    The first ``n_inputs`` objects are the arguments. Numbers and strings made by the function
    may or may not be shared (caches, constant folding), so for them only sharing with an
    argument counts."""
    first: dict[int, int] = {}
    sig = []
    for i, obj in enumerate(objects):
        pos = first.setdefault(id(obj), i)
        scalar = isinstance(obj, (int, float, complex, str, bytes, type(None), np.generic))
        sig.append(None if scalar and pos >= n_inputs else pos)
    return sig


def _describe(objects: list) -> list:
    return [(type(o).__name__, _safe_repr(o)) for o in objects]


def _safe_repr(obj, depth: int = 0) -> str:
    if depth > 4:  # a structure that contains itself
        return "<...>"
    if isinstance(obj, (set, frozenset)):  # iteration order follows hashes (addresses)
        return repr(sorted(_safe_repr(item, depth + 1) for item in obj))
    if isinstance(obj, (type({}.keys()), type({}.values()), type({}.items()))):
        return repr([_safe_repr(item, depth + 1) for item in obj])
    if isinstance(obj, (tuple, list, dict)):
        return f"<{len(obj)} items>"  # the items are described one by one
    if isinstance(obj, ITERATOR_TYPES) or type(obj).__repr__ is object.__repr__:
        return f"<{type(obj).__name__}>"  # default reprs carry addresses
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return f"<{type(obj).__name__}>"
    try:
        return repr(obj)
    except Exception as exc:  # a user repr that raises: compare the failure
        return f"<repr raised {type(exc).__name__}>"


def _drain_iterators(objects: list) -> list:
    """What each iterator among ``objects`` still yields (consumes them: call last)."""
    rests = []
    done = set()
    for obj in objects:
        if isinstance(obj, ITERATOR_TYPES) and id(obj) not in done:
            done.add(id(obj))
            rests.append(_describe(list(obj)))
    return rests


def check_fidelity(fn, *args, backend="eager", calls: int = 2, compiled=None,
                   graphs: int | None = None, breaks: int | None = None, **kwargs):
    """``fn`` plain and compiled: same results, exceptions, printed output, argument states,
    and the same types, reprs, identity relations and iterator states; and what was compiled
    (``differential.assert_compiled``: by default at least one graph)."""
    compiled = compiled or npdynamo.compile(fn, backend=backend)
    raised = False
    for _ in range(calls):
        run = run_both(fn, compiled, args, kwargs)
        expected, got, exc = run.expected, run.got, run.exc
        raised |= exc is not None
        plain_args, plain_kwargs = run.plain_args, run.plain_kwargs
        comp_args, comp_kwargs = run.comp_args, run.comp_kwargs
        plain_objs: list = []
        _walk((plain_args, plain_kwargs), plain_objs, set())
        n_inputs = len(plain_objs)
        _walk(expected, plain_objs, set())
        comp_objs: list = []
        _walk((comp_args, comp_kwargs), comp_objs, set())
        _walk(got, comp_objs, set())
        assert _describe(comp_objs) == _describe(plain_objs), (
            f"types or reprs differ: {_describe(comp_objs)} != {_describe(plain_objs)}"
        )
        assert _identity_signature(comp_objs, n_inputs) == _identity_signature(
            plain_objs, n_inputs
        ), f"identity relations differ: {_describe(plain_objs)}"
        # iterators and dict_values compare by identity: their reprs and states were compared
        opaque = (*ITERATOR_TYPES, type({}.values()))
        if exc is None and not any(isinstance(o, opaque) for o in plain_objs):
            assert_same_value(expected, got)
            assert_same_value(plain_args, comp_args, "args after the call")
        assert _drain_iterators(comp_objs) == _drain_iterators(plain_objs), "iterator states"
    assert_compiled(compiled, graphs, breaks, raised)
    return compiled
