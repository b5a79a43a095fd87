"""How capture stops: an unsupported construct (a future graph break) or user code that raises.

``CaptureUnsupported`` carries a typed reason and the user's location; the entry turns it into
``npdynamo.Unsupported``. ``UserCodeRaises`` means running the code in Python would raise (a shape
mismatch found by an op rule, a ``KeyError`` on a constant dict...): the frame then runs in plain
Python so the user sees exactly Python's exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Location:
    """One user frame of the capture: file, line and the text of that line."""

    filename: str
    lineno: int
    source_line: str
    function: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass
class CaptureUnsupported(Exception):
    """The translator met something a graph cannot hold."""

    reason: str
    hint: str = ""
    location: Location | None = None
    user_stack: list[Location] = field(default_factory=list)
    kind: str = "unsupported_construct"
    #: position of the root frame's instruction being run when capture stopped: (index, visit)
    root_position: tuple[int, int] | None = None
    #: the frame runs on in Python after the break, to its end, with no resume function (a
    #: loop past the step limit: resuming would unroll the rest of it again)
    runs_on_natively: bool = False

    def __str__(self) -> str:
        return format_reason(self.reason, self.hint, self.location)


class RollRefused(Exception):
    """A ``for`` loop could not be captured as one in-graph loop after its capture began: the
    frame is captured again from the top with the loop at ``key`` (code, index) unrolled;
    ``note`` says why (``explain``)."""

    def __init__(self, key: tuple, note: str) -> None:
        super().__init__(note)
        self.key = key
        self.note = note


class UserCodeRaises(Exception):
    """Running the captured code in Python would raise ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def internal_error_reason(exc: BaseException) -> str:
    """The break reason of an exception npdynamo itself raised while capturing a line."""
    return f"npdynamo failed to capture this line ({type(exc).__name__}: {exc})"


def format_reason(reason: str, hint: str, location: Location | None) -> str:
    text = reason
    if location is not None:
        text += f"\n  at {location.filename}:{location.lineno}: {location.source_line.strip()}"
    if hint:
        text += f"\n  hint: {hint}"
    return text
