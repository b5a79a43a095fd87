"""How capture stops: an unsupported construct (a future graph break) or user code that raises.

``CaptureUnsupported`` carries a typed reason and the user's location; the entry turns it into
``npdynamo.Unsupported``. ``UserCodeRaises`` means running the code in Python would raise (a shape
mismatch found by an op rule, a ``KeyError`` on a constant dict...): the frame then runs in plain
Python so the user sees exactly Python's exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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


#: What NumPy raises on bad operands, and so what an op's rule or an op run on constants may
#: raise as the program's error; anything else from them (an ``AttributeError``...) is
#: npdynamo's own failure, which ``getattr``'s default or ``hasattr`` must never swallow
NUMPY_ERRORS = (ValueError, TypeError, IndexError, KeyError, ArithmeticError)

#: npdynamo's own source tree: a frame there is npdynamo's code, not the program's or Python's
_PACKAGE = str(Path(__file__).resolve().parents[1])


def python_raised(exc: Exception) -> Exception:
    """What to raise for ``exc``, caught around a call the capture makes on the program's plain
    values (a builtin, a method of a constant, Python's operator): ``UserCodeRaises`` where
    Python's or the program's code raised it, so the program sees that error; ``exc`` itself
    where it came from npdynamo's own code called inside the ``try`` (a bug: it must reach the
    translator's internal-error handler, a graph break, and never be taken for the program's
    error, which a ``getattr`` default or ``hasattr`` would swallow with no guard)."""
    frames = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    while frames is not None:  # the first frame is the call site's own: npdynamo's
        if frames.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            return exc
        frames = frames.tb_next
    error = UserCodeRaises(exc)
    error.__cause__ = exc
    return error


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
