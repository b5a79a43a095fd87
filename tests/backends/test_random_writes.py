"""Random programs of views and in-place writes, plain against compiled on both backends.

Each program reads and writes two 6x5 arrays through row views (``a[i]``), whole views
(``a[::-1]``), assignments (``a[i] = ...``, ``v[:] = ...``), augmented assignments and new
values computed from any of them, in straight-line code and in ``for i in range(6)`` loops
(one in-graph loop each). Python decides what every read sees; the compiled function must see
the same: the eager backend bit for bit, numba within its tolerance, return values and the
arguments after the call. Fusion and the in-place plans reorder and share memory: an early
reader of a view joined with later ops into a kernel that ran after an assignment read the new
values (``inplace.readers_run_first``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from benchmarks.loaded import tuning
from tests.backends.compare import assert_close
from tests.differential import check_same, run_both

ROWS, COLS = 6, 5
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def programs(draw) -> str:
    """The source of ``def f(a, b)``: statements over full arrays (6x5) and rows (5,)."""
    # c and d are arrays the graph makes: the backends may assign into them in place
    full, rows, lines = ["a", "b", "c", "d"], [], ["    c = a * 1.0", "    d = b - 0.5"]
    count = iter(range(100))

    def value(kind: str, index: str) -> str:
        names = full if kind == "full" else rows
        if kind == "row" and (not rows or draw(st.booleans())):
            return f"{draw(st.sampled_from(full))}[{index}]"
        x, y = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        c = draw(st.sampled_from(["0.5", "1.5", "-2.0"]))
        return draw(st.sampled_from([f"{x} + {c}", f"{x} * {y}", f"np.sin({x})",
                                     f"{x} - {y} * {c}", f"{x}"]))

    def statement(indent: str, index: str) -> None:
        k = next(count)
        kind = draw(st.sampled_from(["view_row", "view_full", "new_full", "new_row", "set_row",
                                     "set_full", "augment", "set_view"]))
        if kind == "view_row":
            lines.append(f"{indent}r{k} = {draw(st.sampled_from(full))}[{index}]")
            rows.append(f"r{k}")
        elif kind == "view_full":
            lines.append(f"{indent}v{k} = {draw(st.sampled_from(full))}[::-1]")
            full.append(f"v{k}")
        elif kind == "new_full":
            lines.append(f"{indent}n{k} = {value('full', index)}")
            full.append(f"n{k}")
        elif kind == "new_row":
            lines.append(f"{indent}m{k} = {value('row', index)}")
            rows.append(f"m{k}")
        elif kind == "set_row":
            lines.append(f"{indent}{draw(st.sampled_from(full))}[{index}] = "
                         f"{value('row', index)}")
        elif kind == "set_full":
            lines.append(f"{indent}{draw(st.sampled_from(full))}[:] = {value('full', index)}")
        elif kind == "augment":
            target = draw(st.sampled_from(full + rows))
            source = value("full" if target in full else "row", index)
            lines.append(f"{indent}{target} *= 0.5")
            lines.append(f"{indent}{target} += {source}")
        elif rows:
            lines.append(f"{indent}{draw(st.sampled_from(rows))}[:] = {value('row', index)}")

    for _ in range(draw(st.integers(2, 6))):
        statement("    ", str(draw(st.integers(0, ROWS - 1))))
    if draw(st.booleans()):
        lines.append(f"    for i in range({ROWS}):")
        before = len(lines)
        # (names made in the body stay in it: Python would keep the last ones)
        saved = (list(full), list(rows))
        for _ in range(draw(st.integers(2, 5))):
            statement("        ", "i")
        full[:], rows[:] = saved
        if len(lines) == before:
            lines.append("        pass")
    for _ in range(draw(st.integers(1, 4))):
        statement("    ", str(draw(st.integers(0, ROWS - 1))))
    # what is returned decides what fusion may join: all of it, or a few values
    names = full + rows
    kept = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    lines.append(f"    return ({', '.join(names if draw(st.booleans()) else kept)},)")
    return "def f(a, b):\n" + "\n".join(lines) + "\n"


def _function(source: str):
    namespace = {"np": np}
    exec(compile(source, "<random-writes>", "exec"), namespace)  # noqa: S102 - the test's own
    return namespace["f"]


def _inputs():
    rng = np.random.default_rng(7)
    return rng.standard_normal((ROWS, COLS)), rng.standard_normal((ROWS, COLS))


@settings(max_examples=60, **SETTINGS)
@given(programs())
def test_random_views_and_writes_on_eager_are_python_bit_for_bit(source):
    npdynamo.reset()
    check_same(_function(source), *_inputs(), backend="eager")


@settings(max_examples=25, **SETTINGS)
@given(programs())
def test_random_views_and_writes_on_numba_are_python_within_tolerance(source):
    npdynamo.reset()
    fn = _function(source)
    compiled = npdynamo.compile(fn, backend="numba")
    with tuning(False):  # the program itself runs (the tuner might keep NumPy's graph)
        for _ in range(2):
            run = run_both(fn, compiled, _inputs(), {})
            assert run.exc is None, (source, run.exc)
            assert_close(run.got, run.expected)
            assert_close(run.comp_args, run.plain_args)


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_the_program_fusion_reordered(backend, monkeypatch):
    """The case that showed the bug: numba fused ``m1`` with ``m2`` into one kernel after the
    assignment, and ``m1`` read the new row."""
    monkeypatch.setenv("NPDYNAMO_NUMBA_TUNE", "0")
    source = ("def f(a, b):\n    c = a * 1.0\n    r0 = c[0]\n    m1 = r0 + 1.5\n"
              "    c[:] = c * 0.5\n    m2 = m1 + r0\n    return (m2, c)\n")
    fn = _function(source)
    if backend == "eager":
        check_same(fn, *_inputs(), backend=backend, graphs=1, breaks=0)
        return
    compiled = npdynamo.compile(fn, backend="numba")
    run = run_both(fn, compiled, _inputs(), {})
    assert_close(run.got, run.expected)
