"""``capture/opcodes/layout.py``: the per-version stack layouts of calls. Unit tests on a bare
stack: where the NULL goes beside a global callable (below until 3.12, above from 3.13, as
CPython's own LOAD_GLOBAL puts it), what a method load leaves, and that ``pop_callable`` reads
every layout back as one canonical (callable, self) call. Then the call forms that go through
these helpers, plain against compiled with exact graph/break counts."""

from __future__ import annotations

import dis
import sys

import numpy as np
import pytest

from npdynamo.capture.opcodes.layout import pop_callable, push_method, push_with_null
from npdynamo.capture.values import NULL, Const
from tests.differential import check_same


class Stack:
    """The part of a ``Frame`` the layout helpers use."""

    def __init__(self) -> None:
        self.stack: list = []

    def push(self, value) -> None:
        self.stack.append(value)

    def pop(self):
        return self.stack.pop()


FN, SELF, ARG = Const(len), Const([1]), Const(2)


def test_the_null_sits_where_cpython_puts_it():
    frame = Stack()
    push_with_null(frame, FN)
    # CPython's LOAD_GLOBAL of a callable: "NULL + len" until 3.12, "len + NULL" from 3.13
    (load,) = [i for i in dis.get_instructions(lambda: len(1)) if i.opname == "LOAD_GLOBAL"]
    if sys.version_info >= (3, 13):
        assert load.argrepr == "len + NULL" and frame.stack == [FN, NULL]
    else:
        assert load.argrepr == "NULL + len" and frame.stack == [NULL, FN]


def test_pop_callable_reads_every_layout_back_as_one_call():
    for build, expected in [
        (lambda f: push_with_null(f, FN), (FN, [])),
        (lambda f: push_method(f, FN, SELF), (FN, [SELF])),  # (method, self)
        (lambda f: push_method(f, NULL, FN), (FN, [])),  # a plain attribute: with a NULL
        (lambda f: (f.push(NULL), f.push(FN)), (FN, [])),  # 3.11/3.12's spelling, any version
        (lambda f: (f.push(FN), f.push(NULL)), (FN, [])),  # 3.13's
    ]:
        frame = Stack()
        frame.push(ARG)  # something below: the helpers take two slots, no more
        build(frame)
        assert pop_callable(frame) == expected
        assert frame.stack == [ARG]


class Model:
    scale = 2.0

    def forward(self, x, shift=0.0):
        return x * self.scale + shift


MODEL = Model()


def call_forms(x, model):
    a = np.sum(x)  # an attribute of a module: a plain attribute with a NULL
    b = model.forward(x, shift=1.0)  # a method load: (method, self), with a keyword
    c = MODEL.forward(x)  # a global's method
    d = len(x)  # a global callable: NULL beside it
    e = x.reshape(3, 1).sum(axis=0)  # methods of arrays, chained
    return a, b, c, d, e


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_call_forms_match_python(backend):
    check_same(call_forms, np.arange(3.0), Model(), backend=backend, graphs=1, breaks=0)
