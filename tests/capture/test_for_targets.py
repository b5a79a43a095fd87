"""The targets a formed ``for`` loop stores its variable into (``capture/flow/for_targets.py``):
one local, or with ``unpack`` the locals of a tuple target (``for i, row in enumerate(a)``),
read from the running interpreter's own bytecode (3.13 stores two with
``STORE_FAST_STORE_FAST``); anything else is not a target a loop forms with."""

from __future__ import annotations

import numpy as np

from npdynamo.capture import bytecode as bc
from npdynamo.capture.flow.for_targets import store_target, targets, var_text
from tests.differential import check_same


def loops(a, out):
    for i, row in enumerate(a):
        out[i] = row[0]
    for row in a:
        out[0] += row[1]
    for k, (x, y) in enumerate(a):
        out[k] += x * y
    for i, i in enumerate(a):  # noqa: B020  (a repeated name: no target)
        out[0] += i[0]
    return out


def _bodies(fn) -> tuple[list, list[int]]:
    instrs = list(bc.Bytecode.from_code(fn.__code__))
    return instrs, [k + 1 for k, ins in enumerate(instrs)
                    if isinstance(ins, bc.Instr) and ins.name == "FOR_ITER"]


def test_one_local_or_the_locals_of_a_tuple():
    instrs, bodies = _bodies(loops)
    assert store_target(instrs, bodies[0], True) == ("i", "row")
    assert store_target(instrs, bodies[0], False) is None  # a range's int never unpacks
    assert store_target(instrs, bodies[1], False) == "row"
    assert store_target(instrs, bodies[1], True) == "row"
    assert store_target(instrs, bodies[2], True) is None  # a nested tuple
    assert store_target(instrs, bodies[3], True) is None
    assert targets("row") == ("row",) and targets(("i", "row")) == ("i", "row")
    assert var_text(("i", "row")) == "i, row" and var_text("row") == "row"


def test_loops_of_every_target_give_pythons_result():
    a = np.random.default_rng(2).random((30, 2))
    check_same(loops, a, np.zeros(30), graphs=1, breaks=0)
