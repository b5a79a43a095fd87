"""Programs whose graph break sits in a loop's body inside a ``with`` or ``try`` block: their
generated code had a try range starting at the loop's exit (``END_FOR``), and the
``NOP`` that opened it crashed 3.12 and 3.13 (``test_loop_exit_code.py``). Run as a script
(``python -m tests.capture.loop_exit_programs BACKEND [--without-the-rule]``), each program is
compared with plain Python in this process, which a regression would crash: the test runs it in
a subprocess."""

from __future__ import annotations

import contextlib
import operator
import sys

import numpy as np


def loop_in_with(rows):
    out = []
    with contextlib.nullcontext():
        for row in rows:
            out.append((row + 1).tolist())  # a graph, then a break in the body
    return out


def nested_loops_in_with(a, ops):
    out = []
    with contextlib.nullcontext():
        for x in a:
            for op in ops:
                out.append(op(x, 2).tolist())  # .tolist(): a graph break in the inner body
    return out


def nested_loops_in_try(a, ops):
    out = []
    try:
        for x in a:
            for op in ops:
                got = op(x, 2).tolist()
                out.append((got, op is operator.add, str(got)))
    finally:
        out.append(len(out))
    return out


def pairs_in_with(pairs, ops):
    out = []
    template = "{!r} {} {}"  # str.format: a graph break after the graph of the product
    with contextlib.nullcontext() as ctx:
        for x, y in pairs:
            for op in ops:
                got = op(x, y) * 2.0
                out.append(template.format(got.tolist(), op.__name__, ctx))
    return out


def _args(name: str) -> tuple:
    a = np.arange(3.0)
    if name == "loop_in_with":
        return ([a, a + 1, a * 2],)
    if name == "pairs_in_with":
        return ([(a, a + 1), (a * 2, a)], (operator.lt, operator.add))
    return (a, (operator.lt, operator.add))


#: each program with the graphs and graph breaks its three calls make (the same on 3.11-3.13)
PROGRAMS = [(loop_in_with, 2, 5), (nested_loops_in_with, 1, 9), (nested_loops_in_try, 1, 9),
            (pairs_in_with, 2, 10)]
#: the same without the rule that keeps a loop exit whole (run on 3.12 and 3.13 only, where the
#: counts are the same): the frames whose code is refused run on in Python, with fewer breaks
WITHOUT_THE_RULE = {loop_in_with: (1, 4), nested_loops_in_with: (1, 6),
                    nested_loops_in_try: (1, 4), pairs_in_with: (2, 8)}


def main(backend: str, keep_exits: bool = True) -> None:
    """Compare each program with plain Python. ``keep_exits=False`` drops the rule that keeps a
    loop exit whole (``reachable.loop_exit_cleanup``): the encoder must then refuse the code, and
    the frame run on in Python, with Python's results (and other graph counts)."""
    from npdynamo.capture.bytecode import reachable
    from tests.differential import check_same

    if not keep_exits:
        reachable.loop_exit_cleanup = lambda item, previous: False
    for fn, graphs, breaks in PROGRAMS:
        if not keep_exits:
            graphs, breaks = WITHOUT_THE_RULE[fn]
        check_same(fn, *_args(fn.__name__), backend=backend, calls=3, graphs=graphs,
                   breaks=breaks)
        print(fn.__name__, "ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], keep_exits=sys.argv[2:] != ["--without-the-rule"])
