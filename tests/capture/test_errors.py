"""``capture/errors.py``: how capture stops. The exception types and the text they give, then
end to end: code that would raise in Python runs in Python (no graph, Python's exception), an
unsupported construct becomes a graph break located at the user's line. The break records made
from these are tested in ``test_reasons.py``; internal errors in ``test_internal_errors.py``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import npdynamo
from npdynamo.capture.errors import (
    CaptureUnsupported,
    Location,
    RollRefused,
    UserCodeRaises,
    format_reason,
    internal_error_reason,
)
from tests.differential import check_same

HERE = Location("/home/me/model.py", 12, "    y = json.dumps(x)\n", "step")


def test_a_location_prints_as_file_and_line():
    assert str(HERE) == "/home/me/model.py:12"


def test_the_reason_text_names_the_line_and_the_hint():
    assert format_reason("print()", "", None) == "print()"
    assert format_reason("print()", "move it out", HERE).splitlines() == [
        "print()", "  at /home/me/model.py:12: y = json.dumps(x)", "  hint: move it out"]
    exc = CaptureUnsupported("print()", hint="move it out", location=HERE)
    assert str(exc) == format_reason("print()", "move it out", HERE)
    assert (exc.kind, exc.user_stack, exc.runs_on_natively) == ("unsupported_construct", [],
                                                               False)


def test_each_unsupported_has_its_own_stack():
    a, b = CaptureUnsupported("a"), CaptureUnsupported("b")
    a.user_stack.append(HERE)
    assert b.user_stack == []


def test_user_code_raises_keeps_the_error_and_roll_refused_its_key():
    error = KeyError("b")
    raised = UserCodeRaises(error)
    assert raised.error is error and str(raised) == str(error)
    refused = RollRefused(("code", 14), "line 3: unrolled: a break in its body")
    assert refused.key == ("code", 14) and str(refused) == refused.note


def test_an_internal_error_reason_names_the_exception():
    reason = internal_error_reason(AttributeError("'NoneType' object has no attribute 'x'"))
    assert reason == ("npdynamo failed to capture this line "
                      "(AttributeError: 'NoneType' object has no attribute 'x')")


def mismatched_shapes(a, b):
    c = a * 2.0
    return c + b  # found by the op's shape rule at capture time


def missing_key(x):
    table = {"a": 1.0}
    return x * table["b"]


@pytest.mark.parametrize("backend", ["eager", "numba"])
@pytest.mark.parametrize("fn, args", [(mismatched_shapes, (np.ones(3), np.ones(4))),
                                      (missing_key, (np.ones(3),))])
def test_code_that_raises_runs_in_python_and_raises_pythons_error(fn, args, backend):
    compiled = check_same(fn, *args, backend=backend, graphs=0, breaks=0)
    (entry,) = npdynamo.inspect(compiled).entries
    assert entry.runs_python is not None and entry.graph is None


def breaks_on_print(x):
    y = x + 1.0
    print("between")
    return y * 2.0


@pytest.mark.parametrize("backend", ["eager", "numba"])
def test_an_unsupported_line_is_a_break_at_the_users_line(backend):
    compiled = check_same(breaks_on_print, np.arange(3.0), backend=backend, graphs=2, breaks=1)
    (brk,) = [e.graph_break for e in npdynamo.inspect(compiled).entries if e.graph_break]
    lines, first = inspect.getsourcelines(breaks_on_print)
    assert brk.filename == __file__
    assert brk.lineno == first + 2 and "print" in lines[2]
