"""``capture/breaks/reasons.py``: the record of why a graph ends, from a ``CaptureUnsupported``."""

from __future__ import annotations

from npdynamo.capture.breaks.reasons import HINTS, GraphBreakReason, reason_from
from npdynamo.capture.errors import CaptureUnsupported, Location

USER = Location("/home/me/model.py", 12, "    y = json.dumps(x)\n", "step")
LIBRARY = Location("/usr/lib/python3.11/json/__init__.py", 231, "    return _default", "dumps")


def test_a_break_with_no_hint_gets_its_kinds_hint():
    reason = reason_from(CaptureUnsupported("print()", location=USER, user_stack=[USER],
                                            kind="io"))
    assert (reason.kind, reason.hint, reason.lineno) == ("io", HINTS["io"], 12)
    assert reason.source_line == "y = json.dumps(x)"


def test_an_unknown_kind_is_an_unsupported_construct_and_a_given_hint_is_kept():
    reason = reason_from(CaptureUnsupported("odd", hint="do this", kind="not-a-kind"))
    assert (reason.kind, reason.hint) == ("unsupported_construct", "do this")
    assert (reason.filename, reason.lineno, reason.source_line) == ("<unknown>", 0, "")


def test_a_break_inside_library_code_is_reported_at_the_users_call():
    exc = CaptureUnsupported("a builtin it calls", location=LIBRARY, user_stack=[USER, LIBRARY])
    reason = reason_from(exc, is_library=lambda filename: filename.startswith("/usr/lib"))
    assert reason.location is USER and reason.user_stack == [USER]
    assert "dumps (json/__init__.py, library code) cannot be captured" in reason.reason
    assert "(a builtin it calls)" in reason.reason
    # without the library test the break stays where it happened
    assert reason_from(exc).location is LIBRARY


def test_the_text_names_the_place_the_chain_of_calls_and_the_hint():
    inner = Location("/home/me/model.py", 30, "    print(x)\n", "helper")
    text = str(GraphBreakReason("print", "move it out", inner, [USER, inner], "io"))
    assert text.splitlines() == ["/home/me/model.py:30: print", "    print(x)",
                                 "    via step:12 -> helper:30", "    hint: move it out"]
