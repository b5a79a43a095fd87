"""``capture/opcodes/subscripts.py``: the handlers of subscripts, slices, their stores and
``del``. Each runs in a small program, plain against compiled with exact graph/break counts, and
the programs together reach every handler the module registers on the running Python. Masked
updates (``x[mask] op= v``) are tested in ``test_masked.py``, slices bounded by values computed
in a loop in ``test_unbacked_slices.py``."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.opcodes import subscripts
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import check_same


def reads(x, i):
    a = x[i]  # BINARY_SUBSCR of an int
    b = x[1:3]  # BINARY_SLICE (3.12+), BUILD_SLICE + BINARY_SUBSCR (3.11)
    c = x[::2]  # BUILD_SLICE with a step
    d = x[-1, None] if x.ndim == 1 else x[0, :]  # a tuple index
    e = x[np.argsort(x)]  # an array index
    return a, b, c, d, e


def writes(x, v):
    x[0] = v  # STORE_SUBSCR: written back into the caller's array
    x[1:3] = v * 2  # STORE_SLICE (3.12+)
    return x.sum()


def containers(d, items, x):
    del d["a"]  # DELETE_SUBSCR of a dict: replayed on the caller's dict
    del items[0]  # DELETE_SUBSCR of a list
    items[0] = x  # STORE_SUBSCR of a list
    return d["b"] * x + items[-1]


def list_index(x):
    y = x * 2
    z = y[[0, 2]]  # a Python list index: a break, the graphs before and after it compiled
    return z + 1


def rolled_slices(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):  # one loop node: x[:i + 1] is bounded by the loop's index
        out[i] = x[:i + 1].sum()
    return out


def missing_key(d):
    del d["zz"]


PROGRAMS = [reads, writes, containers, list_index, rolled_slices, missing_key]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_subscripts_and_slices_match_python(backend):
    x = np.arange(5.0)
    check_same(reads, x, 2, backend=backend, graphs=1, breaks=0)
    check_same(writes, x.copy(), 7.0, backend=backend, graphs=1, breaks=0)
    check_same(containers, {"a": 1.0, "b": 2.0}, [x, x + 1, x + 2], x, backend=backend,
               graphs=1, breaks=0)
    check_same(rolled_slices, x, backend=backend, graphs=1, breaks=0)


def test_what_cannot_be_captured_breaks_or_raises_as_python():
    check_same(list_index, np.arange(3.0), graphs=2, breaks=1)
    check_same(missing_key, {"a": 1}, graphs=0, breaks=0)  # KeyError, as Python


def test_the_programs_reach_every_handler_of_the_module():
    assert handled_by(subscripts) <= opnames(*PROGRAMS)
