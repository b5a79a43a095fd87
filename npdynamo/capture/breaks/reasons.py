"""Why a graph ends: break reasons, each of a kind, with a message a NumPy user understands and
a hint.

The translator raises ``CaptureUnsupported`` with a ``kind``; the entry turns it into one of these
records (with its kind's hint when the break gives none), which ``explain``, the ``graph_breaks``
log and ``Unsupported`` errors all show.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo.capture.errors import Location

#: The kinds of graph break, each with the hint shown when the break gives none of its own.
HINTS = {
    "unsupported_construct": "if this line is on a hot path, write it with NumPy operations or "
                             "move it outside the compiled function; otherwise accept the graph "
                             "break",
    "io": "print or write outside the compiled function, or accept the graph break",
    "data_dependent_branch": "use np.where / np.select to compute both sides without branching",
    "graph_value_to_python": "keep the value as an array (np.where, masks) instead of a Python "
                             "number",
    "unknown_function": "use NumPy functions npdynamo knows, or call this outside the compiled "
                        "function",
    "side_effect": "return the new value instead of storing it outside the function",
    "explicit": "remove npdynamo.graph_break() to let the graphs on both sides fuse",
    "disabled": "remove npdynamo.disable from the function to let its code be captured",
    # npdynamo itself failed on this line (a bug): the line runs in Python, never the user's
    # program fails for it
    "internal_error": "this is a bug in npdynamo; the line runs in Python meanwhile",
}


@dataclass
class GraphBreakReason:
    """One graph break: what happened, where (the user's file, line and source text, and the
    chain of inlined calls that led there), and what the user can do about it."""

    reason: str
    hint: str = ""
    location: Location | None = None
    user_stack: list[Location] = field(default_factory=list)
    #: one of ``HINTS``
    kind: str = "unsupported_construct"

    @property
    def filename(self) -> str:
        return self.location.filename if self.location else "<unknown>"

    @property
    def lineno(self) -> int:
        return self.location.lineno if self.location else 0

    @property
    def source_line(self) -> str:
        return self.location.source_line.strip() if self.location else ""

    def __str__(self) -> str:
        text = f"{self.filename}:{self.lineno}: {self.reason}"
        if self.source_line:
            text += f"\n    {self.source_line}"
        if len(self.user_stack) > 1:
            chain = " -> ".join(f"{loc.function}:{loc.lineno}" for loc in self.user_stack)
            text += f"\n    via {chain}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


def reason_from(exc, is_library: Callable[[str], bool] = lambda filename: False
                ) -> GraphBreakReason:
    """The typed record of a ``CaptureUnsupported``. A break inside library code (the
    standard library's ``json.dumps``, an installed package) called from the user's code is
    reported at the user's call, the library's frames summarised: that call runs in Python."""
    kind = getattr(exc, "kind", "")
    kind = kind if kind in HINTS else "unsupported_construct"
    stack = list(exc.user_stack)
    calls = [i for i, loc in enumerate(stack[:-1])
             if not is_library(loc.filename) and is_library(stack[i + 1].filename)]
    if exc.location is not None and is_library(exc.location.filename) and calls:
        at = calls[-1]
        callee = stack[at + 1]
        where = "/".join(callee.filename.replace(os.sep, "/").split("/")[-2:])
        # what failed inside the library, when it says something to the user (not a detail of
        # the library's own internals: "re.match.__globals__['_compile']...")
        why = f" ({exc.reason})" if "__" not in exc.reason else ""
        return GraphBreakReason(
            f"{callee.function or 'a function'} ({where}, library code) cannot be captured"
            f"{why}, so this call runs in Python",
            "nothing to do unless the call is on a hot path: then call it outside the "
            "compiled function", stack[at], stack[:at + 1], kind)
    return GraphBreakReason(exc.reason, exc.hint or HINTS[kind], exc.location, stack, kind)
