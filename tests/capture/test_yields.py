"""``capture/opcodes/yields.py``: RETURN_GENERATOR and YIELD_VALUE, the instructions of generator
bodies, in generator functions and expressions consumed inside a captured function, plain
against compiled with exact graph/break counts. Generators under capture are tested at length in
``test_generators.py``; here the two handlers and the body forms that reach them."""

from __future__ import annotations

import numpy as np
import pytest

from npdynamo.capture.opcodes import yields
from tests.capture.opcode_coverage import handled_by, opnames
from tests.differential import check_same


def layers(x, weights):
    for w in weights:  # RETURN_GENERATOR starts the body, YIELD_VALUE suspends it each time
        x = np.tanh(x * w)
        yield x


def last_layer(x, weights):
    out = x
    for h in layers(x, weights):
        out = h
    return out


def pairs(x):
    yield x
    yield x * 2
    return "done"  # the generator's return value ends the loop (StopIteration)


def sum_of_pairs(x):
    total = sum(pairs(x))
    return total, list(pairs(x))[1]


def norms(weights):
    return sum(np.sum(w * w) for w in weights)  # a generator expression's body


def send_to_a_generator(x):
    g = pairs(x)
    first = next(g)
    second = g.send(None)  # send is a graph break (the sent value could be anything)
    return first + second


PROGRAMS = [layers, pairs, norms]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_generator_bodies_match_python(backend):
    x = np.arange(3.0)
    check_same(last_layer, x, [0.5, 2.0], backend=backend, graphs=1, breaks=0)
    check_same(sum_of_pairs, x, backend=backend, graphs=1, breaks=0)
    check_same(norms, [x, x + 1], backend=backend, graphs=1, breaks=0)


def test_send_breaks_and_the_frame_runs_in_python():
    # a break at a method load may leave a NULL on the stack: the whole frame runs in Python
    check_same(send_to_a_generator, np.arange(3.0), graphs=0, breaks=1)


def test_the_programs_reach_every_handler_of_the_module():
    assert handled_by(yields) == {"RETURN_GENERATOR", "YIELD_VALUE"}
    assert handled_by(yields) <= opnames(*PROGRAMS)
