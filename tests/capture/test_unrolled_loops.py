"""``capture/flow/unrolled_loops.py``: when a loop unrolled at capture is predicted to cost too
much, it breaks before its first step and Python runs the rest of the frame. ``check_unroll`` is
asked directly over a stand-in frame whose step and op counters the test moves; then two small
programs. The bounded-capture cases on real kernels (library loops, comprehensions past the op
limit, rows of an array, ``np.ndindex``) are in ``test_capture_bounded.py``."""

from __future__ import annotations

import types

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.errors import CaptureUnsupported
from npdynamo.capture.flow.unrolled_loops import UNROLL_STEP_LIMIT, check_unroll
from npdynamo.capture.session import GRAPH_NODE_LIMIT
from tests.differential import check_same

# other contents: code objects compare equal by content whatever their file, and the answer
# is kept per code object
USER_CODE = compile("user = 1", __file__, "exec")
LIBRARY_CODE = compile("library = 1", np.__file__, "exec")  # an installed package's file


class Iterator:
    """An iterator value that knows how many items are left (``None``: it does not)."""

    def __init__(self, left: int | None) -> None:
        self.items_left = left

    def left(self) -> int | None:
        return self.items_left


class Frame:
    def __init__(self, code=USER_CODE, parent=None) -> None:
        self.ip, self.code, self.parent = 8, code, parent  # the FOR_ITER is at ip - 1
        self.ctx = types.SimpleNamespace(steps=0, node_count=0)
        self.unrolling: dict = {}
        self.visits = {7: 1}

    def unsupported(self, reason, hint="", kind="unsupported_construct"):
        return CaptureUnsupported(reason, hint, kind=kind)

    def step(self, it, steps: int, ops: int = 0) -> None:
        """One more iteration: ``steps`` instructions and ``ops`` graph ops, then FOR_ITER."""
        self.ctx.steps += steps
        self.ctx.node_count += ops
        self.visits[7] += 1
        check_unroll(self, it)


def test_a_cheap_loop_unrolls():
    frame, it = Frame(), Iterator(10)
    check_unroll(frame, it)  # the first FOR_ITER only records where the loop starts
    for _ in range(5):
        frame.step(it, steps=12)
    assert frame.unrolling[7][3] == 5


def test_a_long_python_loop_breaks_before_its_first_step():
    frame, it = Frame(), Iterator(UNROLL_STEP_LIMIT // 10)
    check_unroll(frame, it)
    it.items_left -= 1
    with pytest.raises(CaptureUnsupported, match="would be unrolled at capture") as info:
        frame.step(it, steps=12)
    assert info.value.runs_on_natively
    assert info.value.root_position == (7, 1)  # the loop's first FOR_ITER, nothing unrolled


def test_an_unknown_length_is_not_predicted():
    frame, it = Frame(), Iterator(None)
    check_unroll(frame, it)
    frame.step(it, steps=UNROLL_STEP_LIMIT)


def test_the_users_loop_of_graph_ops_unrolls_where_library_code_breaks():
    for code, breaks in ((USER_CODE, False), (LIBRARY_CODE, True)):
        frame, it = Frame(code), Iterator(UNROLL_STEP_LIMIT // 10)
        check_unroll(frame, it)
        if breaks:
            with pytest.raises(CaptureUnsupported):
                frame.step(it, steps=12, ops=1)
        else:
            frame.step(it, steps=12, ops=1)


def test_a_loop_that_would_fill_the_graph_breaks():
    frame, it = Frame(), Iterator(GRAPH_NODE_LIMIT // 2)
    check_unroll(frame, it)
    with pytest.raises(CaptureUnsupported, match="past its 4,000-op limit"):
        frame.step(it, steps=5, ops=3)


def test_an_inlined_callee_leaves_the_position_to_its_caller():
    frame, it = Frame(parent=object()), Iterator(UNROLL_STEP_LIMIT)
    check_unroll(frame, it)
    with pytest.raises(CaptureUnsupported) as info:
        frame.step(it, steps=12)
    assert info.value.root_position is None


def test_a_new_run_of_the_loop_starts_counting_again():
    frame = Frame()
    check_unroll(frame, Iterator(3))
    frame.step(Iterator(UNROLL_STEP_LIMIT), steps=UNROLL_STEP_LIMIT)  # another iterator
    assert frame.unrolling[7][3] == 0


def names_in_python(x, n):
    names = []
    for i in range(n):
        names.append(str(i % 7))
    return x * len(set(names))


def short_python_loop(x, items):
    total = 0.0
    for v in items:
        total += v
    return x * total


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_a_short_loop_unrolls_into_the_graph_and_a_long_one_runs_in_python(backend):
    check_same(short_python_loop, np.arange(3.0), [1.0, 2.5, 3.0], backend=backend,
               graphs=1, breaks=0)
    # 2,000 iterations of about 14 instructions: the frame runs on in Python from the loop's
    # first FOR_ITER, so the multiply after it is in no graph either
    compiled = check_same(names_in_python, np.arange(3.0), UNROLL_STEP_LIMIT // 4,
                          backend=backend, graphs=0, breaks=1)
    (entry,) = npdynamo.inspect(compiled).entries
    assert "this loop would be unrolled at capture" in entry.graph_break.reason
