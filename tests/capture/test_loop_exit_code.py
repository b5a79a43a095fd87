"""A loop's exit in generated code stays where 3.12+'s ``FOR_ITER`` expects it.

An exhausted ``FOR_ITER`` pops its iterator and jumps a fixed count of code units past its target
(3.12: over the ``END_FOR``; 3.13: over ``END_FOR`` and ``POP_TOP``) without looking. A graph
break in an inner loop's body inside a ``with`` or ``try`` block made generated code whose try
range, cut at that exit, opened with a ``NOP`` between the target and its ``END_FOR``: the exit
then ran the ``END_FOR`` on a stack without the iterator and the interpreter crashed (3.12 and
3.13 ``test_decimal`` ``test_nan_comparisons``, exit -11). The programs run in a subprocess, so a
regression fails a test instead of killing pytest; code that would misplace an exit is refused
when encoded (``generate.InvalidCode``) and the frame breaks before it instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bytecode as bc
import numpy as np
import pytest

from npdynamo.capture.bytecode import generate, reachable
from tests.capture import loop_exit_programs as programs
from tests.code_check import problems
from tests.differential import check_same

PY = sys.version_info[:2]
ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> list[str]:
    run = subprocess.run([sys.executable, "-m", "tests.capture.loop_exit_programs", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-3000:]}"
    return [line.split()[0] for line in run.stdout.splitlines() if line.endswith(" ok")]


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_breaks_in_inner_loops_in_with_and_try_match_python(backend):
    assert _run(backend) == [fn.__name__ for fn, _, _ in programs.PROGRAMS]


@pytest.mark.skipif(PY < (3, 12), reason="3.11's FOR_ITER jumps to its target itself")
def test_a_frame_whose_code_would_misplace_an_exit_breaks_before_it():
    # without the rule that keeps exits whole, the generated code is refused where it is
    # encoded: the frame runs on in Python instead of crashing, with Python's results
    assert _run("eager", "--without-the-rule") == [fn.__name__ for fn, _, _ in programs.PROGRAMS]


def _exit_instructions(items: list) -> list[str]:
    """The names of the instructions from the first loop exit's target label on."""
    targets = {id(ins.arg) for ins in items
               if isinstance(ins, bc.Instr) and ins.name == "FOR_ITER"}
    at = next(i for i, item in enumerate(items)
              if isinstance(item, bc.Label) and id(item) in targets)
    return [item.name for item in items[at:] if isinstance(item, bc.Instr)]


@pytest.mark.skipif(PY < (3, 12), reason="3.11's FOR_ITER jumps to its target itself")
def test_a_try_range_opening_at_a_loop_exit_gets_no_nop():
    def loop(xs):
        for x in xs:
            print(x)

    items = list(bc.Bytecode.from_code(loop.__code__))
    exit_label = next(ins.arg for ins in items
                      if isinstance(ins, bc.Instr) and ins.name == "FOR_ITER")
    at = items.index(exit_label)
    # a try range over the whole body, cut at the exit: a range opens at END_FOR
    # (the exit's label stands in for the handler: live_only only follows it)
    first, second = bc.TryBegin(exit_label, False, 0), bc.TryBegin(exit_label, False, 0)
    items[at:at] = [bc.TryEnd(first)]
    items[at + 2:at + 2] = [second]
    items.insert(1, first)
    items.append(bc.TryEnd(second))
    kept = reachable.live_only(items)
    cleanup = ["END_FOR", "POP_TOP"] if PY >= (3, 13) else ["END_FOR"]
    assert _exit_instructions(kept)[:len(cleanup)] == cleanup


@pytest.mark.skipif(PY < (3, 12), reason="3.11's FOR_ITER jumps to its target itself")
def test_code_with_a_misplaced_loop_exit_is_refused():
    def loop(xs):
        total = 0
        for x in xs:
            total += x
        return total

    assert generate.loop_exits_misplaced(loop.__code__) == []
    b = bc.Bytecode.from_code(loop.__code__)
    exit_label = next(ins.arg for ins in b if isinstance(ins, bc.Instr) and ins.name == "FOR_ITER")
    b.insert(b.index(exit_label) + 1, bc.Instr("NOP"))  # between the target and its END_FOR
    bad = b.to_code()
    assert len(generate.loop_exits_misplaced(bad)) == 1
    assert any("END_FOR" in p for p in problems(bad))
    with pytest.raises(generate.InvalidCode):
        generate.to_code(b, loop.__code__)


@pytest.mark.parametrize("fn,graphs,breaks", programs.PROGRAMS,
                         ids=[p[0].__name__ for p in programs.PROGRAMS])
def test_generated_code_has_every_loop_exit_in_place(monkeypatch, fn, graphs, breaks):
    made: list = []
    to_code = generate.to_code

    def keep(b, original):
        code = to_code(b, original)  # raises InvalidCode (a graph break) rather than crash
        made.append(code)
        return code

    from npdynamo.capture.bytecode import break_code

    for module in (generate, break_code):
        monkeypatch.setattr(module, "to_code", keep)
    check_same(fn, *programs._args(fn.__name__), calls=3, graphs=graphs, breaks=breaks)
    assert made
    assert [p for code in made for p in problems(code)] == []
    assert np.all([generate.loop_exits_misplaced(code) == [] for code in made])
