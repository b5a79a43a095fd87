"""``capture/opcodes/stack.py``: the handlers of stack shuffles and of loads, stores and deletes
of locals, globals, cells and attributes. Each runs in a small program, plain against compiled
with exact graph/break counts, and the programs together reach every handler the module
registers on the running Python (bytecode differs by version). Attribute stores on user objects
are tested at length in ``test_side_effects.py``; here one of each."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.opcodes import stack
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import assert_compiled, check_same

COUNTER = 0
SCALE = 3.0
LAST = None


class Box:
    def __init__(self, w):
        self.w = w


def locals_and_shuffles(x, y):
    a, b = y, x
    a, b = b, a
    c = a * 2 - b
    del b  # DELETE_FAST
    c += 1
    return c, x is a


def globals_read_and_written(x):
    global LAST
    LAST = x * SCALE  # LOAD_GLOBAL, STORE_GLOBAL: written back after the graph
    return LAST + 1


def cells(x):
    k = 2.0

    def scale(v):
        return v * k  # LOAD_DEREF

    k = k + 1  # STORE_DEREF of a cell made by MAKE_CELL
    return scale(x)


def attributes(box, x):
    box.w += x  # LOAD_ATTR, COPY, SWAP, STORE_ATTR
    box.tmp = 1
    del box.tmp  # DELETE_ATTR
    return box.w.sum(), box.w.shape  # a method load and a plain attribute load


def comprehension(x, rows):
    i = 5
    out = [r * x for r in rows]  # LOAD_FAST_AND_CLEAR on 3.12+ (PEP 709 inlining)
    return out, i


def delete_a_global(x):
    global COUNTER
    y = x + 1
    del COUNTER  # a graph break: deleting a global is not captured
    return y * 2


def _generator():
    yield 1
    yield 2


def drops_a_started_generator(x):
    g = _generator()
    next(g)
    y = x + 1
    g = None  # the generator's end could run its finally: a break before this store
    return y * 2, g


PROGRAMS = [locals_and_shuffles, globals_read_and_written, cells, attributes, comprehension,
            delete_a_global, drops_a_started_generator]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_loads_stores_and_shuffles_match_python(backend, monkeypatch):
    x = np.arange(3.0)
    check_same(locals_and_shuffles, x, x + 1, backend=backend, graphs=1, breaks=0)
    compiled = check_same(globals_read_and_written, x, backend=backend, graphs=1, breaks=0)
    monkeypatch.setitem(globals(), "LAST", None)
    compiled(x)
    assert np.array_equal(LAST, x * SCALE)  # the compiled call's store, written back
    check_same(cells, x, backend=backend, graphs=1, breaks=0)
    check_same(attributes, Box(np.ones(3)), x, backend=backend, graphs=1, breaks=0)
    check_same(comprehension, x, [1.0, 2.0], backend=backend, graphs=1, breaks=0)


def test_deleting_a_global_breaks_and_python_deletes_it(monkeypatch):
    compiled = npdynamo.compile(delete_a_global)
    for _ in range(2):  # each call on a global there to delete (plain Python would raise)
        monkeypatch.setitem(globals(), "COUNTER", 0)
        assert np.array_equal(compiled(np.ones(2)), np.full(2, 4.0))
        assert "COUNTER" not in globals()
    assert_compiled(compiled, graphs=2, breaks=1)


def test_dropping_what_python_code_could_see_end_breaks():
    check_same(drops_a_started_generator, np.ones(2), graphs=2, breaks=1)


def test_rebinding_an_argument_is_never_its_last_reference():
    box = Box(np.ones(2))
    ref = weakref.ref(box)

    def drop(b, x):
        b = None
        return x + 1, b

    # the caller holds its arguments for the whole call: no break, even for a weakly
    # referenced object (its end cannot come at this store)
    check_same(drop, box, np.ones(2), graphs=1, breaks=0)
    assert ref() is box


def test_the_programs_reach_every_handler_of_the_module():
    unreached = handled_by(stack) - opnames(*PROGRAMS)
    # not in these programs' disassembly: CACHE (dis hides it), EXTENDED_ARG (an argument
    # past 255), NOP (left by the peephole optimiser only in some shapes), LOAD_FAST_CHECK
    # (3.12+: a load of a possibly unbound local)
    allowed = {"CACHE", "EXTENDED_ARG", "NOP", "LOAD_FAST_CHECK"}
    assert unreached <= allowed, unreached
