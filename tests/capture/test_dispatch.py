"""``capture/hooks/dispatch.py``: the generated dispatcher binds arguments as the user's function
would and runs the first ``run`` whose ``check`` holds, else the miss handler; the Python call
takes ``*args``/``**kwargs`` as plain slots; the original view keeps the original code; generated
code is marked as npdynamo's own. Dispatch through ``compile`` (signatures, defaults, wrong
arguments) is tested end to end in ``test_hooks.py``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from npdynamo.capture.hooks.dispatch import (
    EntryList,
    forget_original,
    hashes_by_identity,
    is_generated_code,
    is_original_view,
    make_dispatch_code,
    make_dispatcher,
    make_original_view,
    make_python_call,
    original_function,
    register_original,
)
from tests.differential import check_same


def signature(a, /, b, c=3, *rest, k, m=5, **extra):
    return (a, b, c, rest, k, m, extra)


def test_the_first_entry_whose_check_holds_runs_else_the_miss():
    calls = []
    pairs = EntryList([
        (lambda *frame: frame[0] == "first", lambda *frame: ("run0", frame)),
        (lambda *frame: True, lambda *frame: ("run1", frame)),
    ])

    def miss(*frame):
        calls.append(frame)
        return "missed"

    dispatcher = make_dispatcher(signature, pairs, miss)
    assert inspect.signature(dispatcher) == inspect.signature(signature)
    # the frame arguments in co_varnames order: positional, keyword-only, *rest, **extra
    assert dispatcher("first", 2, k=4) == ("run0", ("first", 2, 3, 4, 5, (), {}))
    assert dispatcher(1, 2, 9, 8, k=4, z=0) == ("run1", (1, 2, 9, 4, 5, (8,), {"z": 0}))
    pairs.clear()
    assert dispatcher(1, 2, k=4) == "missed" and calls == [(1, 2, 3, 4, 5, (), {})]
    with pytest.raises(TypeError):
        dispatcher(a=1, b=2, k=3)  # positional-only, as in the user's function
    assert hash(pairs) == object.__hash__(pairs)  # a constant of code objects: hashable


def test_dispatch_code_carries_the_users_name_line_and_free_variables():
    offset = 1

    def closure(x):
        return x + offset

    code = make_dispatch_code(closure.__code__, EntryList(), None, keep_freevars=True)
    assert code.co_freevars == ("offset",)
    assert (code.co_name, code.co_firstlineno) == ("closure", closure.__code__.co_firstlineno)
    assert code.co_filename == __file__
    assert is_generated_code(code) and not is_generated_code(closure.__code__)
    # one template per signature: the same shape reuses it with other constants
    other = make_dispatch_code(closure.__code__, EntryList(), len, keep_freevars=True)
    assert other.co_code == code.co_code and other is not code


def test_the_python_call_takes_varargs_and_varkw_as_slots():
    python = make_python_call(signature, signature.__code__)
    assert python(1, 2, 3, 4, 5, (6,), {"z": 7}) == (1, 2, 3, (6,), 4, 5, {"z": 7})
    assert python.__qualname__ == signature.__qualname__
    assert is_generated_code(python.__code__)


def test_original_view_and_registry():
    view = make_original_view(signature, signature.__code__)
    assert view is not signature and view.__code__ is signature.__code__
    assert view.__kwdefaults__ == {"m": 5} and view.__kwdefaults__ is not signature.__kwdefaults__
    assert is_original_view(view) and not is_original_view(signature)
    front = make_dispatcher(signature, EntryList(), None)
    register_original(front, view)
    assert original_function(front) is view
    forget_original(front)
    assert original_function(front) is None
    assert hashes_by_identity(signature) and not hashes_by_identity(np.arange(2))
    assert original_function(np.arange(2)) is None and not is_original_view([])


def dispatched(x, *rest, scale=2.0, **options):
    out = x * scale
    for r in rest:
        out = out + r
    return out - options.get("shift", 0)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_calls_through_the_dispatcher_match_python(backend):
    x = np.arange(3.0)
    check_same(dispatched, x, backend=backend, graphs=1, breaks=0)
    # wrappers of one code share its entries: *rest of another length is a second graph
    check_same(dispatched, x, 1.0, 2.0, backend=backend, graphs=2, breaks=0, shift=3,
               scale=0.5)
