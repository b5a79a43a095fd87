"""What a ``for`` loop unrolled at capture may cost: a long one ends the capture at its head.

A loop that does not become one in-graph node (``for_loops``) is unrolled: each iteration is
stepped through again, so capture time, the graph and the guards grow with the trip count, and
a trip count that changes (``for i in range(n)``, ``n`` a new value) is a new capture that
unrolls it all again. Before, such a loop ran on until the graph reached its op limit
(``session.GRAPH_NODE_LIMIT``) or the capture its step limit (``translator.STEP_LIMIT``), and
the resume function after that break unrolled the rest the same way.

Here the ``FOR_ITER`` handler asks ``check_unroll`` at each step: once one iteration has been
stepped through, its cost in instructions times the items left (known for iterators over
sequences and ranges) predicts the loop's whole cost. Past ``UNROLL_STEP_LIMIT``, a loop that
puts no op into the graph (Python-level work a graph gains nothing from) or one in library code
(the standard library's, an installed package's: a loop over the caller's data) breaks at its
first ``FOR_ITER`` (nothing of the loop unrolled), and the frame runs on in Python from there
(``runs_on_natively``): exact, with capture work bounded by the code, not by the data the loop
walks. In a callee inlined into the frame, the break is at the frame's call of it, and that
callee, compiled as its own frame, breaks at its loop the same way. A loop of the user's own
code that builds graph ops unrolls while the graph holds it; one predicted (ops per iteration
times the items left) to take the graph past its op limit breaks the same way at its first
``FOR_ITER``, instead of unrolling to the limit and leaving the rest to resume functions that
unroll it again (a comprehension over every row of an array: issue 24's first call).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from npdynamo.capture.hooks.region import is_library_file
from npdynamo.capture.session import GRAPH_NODE_LIMIT
from npdynamo.capture.values import IteratorValue

if TYPE_CHECKING:
    from npdynamo.capture.translator import Frame

#: Instructions one unrolled loop may be predicted to step through. A loop of 16 instructions
#: per iteration unrolls up to 500 iterations (about 0.1-0.5 s of capture).
UNROLL_STEP_LIMIT = 8_000


def check_unroll(frame: Frame, it: IteratorValue) -> None:
    """At the ``FOR_ITER`` just decoded (``frame.ip - 1``) of a loop over ``it``, before it
    steps: break when the loop's predicted cost is past ``UNROLL_STEP_LIMIT``."""
    ip = frame.ip - 1
    ctx = frame.ctx
    seen = frame.unrolling.get(ip)
    if seen is None or seen[0] is not it:  # a new run of this loop (an outer loop's next turn)
        frame.unrolling[ip] = (it, ctx.steps, ctx.node_count, 0)
        return
    _, start, start_ops, done = seen
    done += 1
    frame.unrolling[ip] = (it, start, start_ops, done)
    left = it.left()
    if left is None:
        return
    per_iteration = (ctx.steps - start) / done
    ops_per_iteration = (ctx.node_count - start_ops) / done
    if ctx.node_count + ops_per_iteration * left > GRAPH_NODE_LIMIT:
        # it would fill the graph to its op limit and leave the rest to resume functions that
        # unroll it again (seconds of capture, and kernels whose size grows with the data)
        cost = (f"{done + left:,} iterations of about {ops_per_iteration:.0f} ops each would "
                f"take the graph past its {GRAPH_NODE_LIMIT:,}-op limit")
    elif ctx.steps - start + per_iteration * left <= UNROLL_STEP_LIMIT:
        return
    elif ctx.node_count > start_ops and not _library_code(frame):
        return  # the user's own loop of graph ops that fits in the graph: unrolled
    else:
        cost = (f"{done + left:,} iterations of about {per_iteration:.0f} instructions each, "
                f"past {UNROLL_STEP_LIMIT:,}")
    error = frame.unsupported(
        f"this loop would be unrolled at capture: {cost}; Python runs it "
        "(and the rest of the function)",
        "a loop over a NumPy array's elements, or a long Python loop, is faster written with "
        "NumPy operations; a `for i in range(n)` loop whose body needs no Python value of `i` "
        "becomes one in-graph loop",
    )
    error.runs_on_natively = True
    if frame.parent is None:  # break before the loop's first step, not in its middle
        error.root_position = (ip, frame.visits.get(ip, 1) - done)
    raise error


def _library_code(frame: Frame) -> bool:
    code = frame.code
    known = _LIBRARY.get(code)
    if known is None:
        known = _LIBRARY[code] = is_library_file(code.co_filename)
    return known


#: code object -> whether it is library code (a file lookup, made once per code)
_LIBRARY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
