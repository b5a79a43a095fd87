"""The decode cache (``generate._DECODED``) is emptied when a full collection starts.

It only saves decoding time, and in a session with many graph breaks it holds tens of thousands
of instruction objects, which every full collection walks: a program calling ``gc.collect()``
in a loop paid for that walk at each call (3.12 ``test_deque`` ``test_gc_doesnt_blowup`` ran
over 3x its plain time + 2 s compiled). Emptied, the next capture decodes again: a resume
function recaptured after a collection (a new type at its guards) is decoded from its code
rather than read from the list it was assembled from, and must run the same."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.bytecode import generate
from tests.differential import check_same


def loop_with_a_break(xs, scale):
    out = []
    for x in xs:
        y = x * scale
        out.append(y.tolist())  # a graph break in the body
        out.append(float(y.sum()))
    return out


def collected_in_the_loop(xs):
    out = []
    for x in xs:
        out.append((x + 1).tolist())
        gc.collect()  # a full collection between captures of the same resume function
    return out


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_full_collection_empties_the_cache_and_recaptures_match_python(backend):
    npdynamo.reset()
    ints = [np.arange(3), np.arange(3) * 2]
    floats = [np.arange(3.0), np.ones(3)]
    compiled = check_same(loop_with_a_break, ints, 2, backend=backend, graphs=3, breaks=3)
    assert generate._DECODED, "the captures decoded nothing"
    gc.collect()
    assert not generate._DECODED
    # float items miss the guards: the function and its resume function are captured again,
    # decoded afresh from their code objects
    check_same(loop_with_a_break, floats, 2.5, backend=backend, compiled=compiled, graphs=4,
               breaks=4)
    assert generate._DECODED


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_collections_between_captures_in_a_loop_match_python(backend):
    npdynamo.reset()
    xs = [np.arange(3), np.arange(3.0), np.ones(2, dtype=np.float32)]
    check_same(collected_in_the_loop, xs, backend=backend, graphs=3, breaks=4)


def test_a_young_collection_keeps_the_cache():
    npdynamo.reset()
    check_same(loop_with_a_break, [np.arange(3)], 2, graphs=2, breaks=2)
    kept = dict(generate._DECODED)
    gc.collect(0)
    assert generate._DECODED == kept


def test_the_cache_holds_each_codes_instructions_once():
    npdynamo.reset()
    check_same(loop_with_a_break, [np.arange(3)], 2, graphs=2, breaks=2)
    for code, (attributes, items) in generate._DECODED.items():
        assert len(attributes) == 0 and items, code.co_name
        assert attributes.argnames == list(code.co_varnames[:len(attributes.argnames)])
