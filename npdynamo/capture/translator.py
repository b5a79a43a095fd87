"""The translator: evaluates a function's bytecode symbolically into a graph plus guards.

A ``Frame`` is one activation: the captured function, a user function inlined into it, or the
body of a generator made inside it (run up to each yield, see ``generators.py``). It steps through
the instructions the ``bytecode`` library decoded, dispatching each to the one opcode-handler
table ``registry.HANDLERS`` (filled by ``opcodes/``), and records ops, guards and inputs into the
``CaptureContext`` of its capture (``session.py``). Jumps follow values known at
capture time, so loops unroll and branches specialise. Nothing here executes an array operation.
"""

from __future__ import annotations

import linecache
from typing import TYPE_CHECKING

from npdynamo.capture import bytecode as bc
from npdynamo.capture.bytecode.code import CO_GENERATOR, CO_GENERATOR_LIKE
from npdynamo.capture.bytecode.generate import decoded_instructions, user_name
from npdynamo.capture.errors import (
    CaptureUnsupported,
    Location,
    RollRefused,
    UserCodeRaises,
    internal_error_reason,
)
from npdynamo.capture.guards import (
    ClosureCellSource,
    ClosureSource,
    LocalSource,
)
from npdynamo.capture.registry import HANDLERS
from npdynamo.capture.values import (
    NULL,
    CellValue,
    Const,
    ExternalCell,
    FunctionValue,
    Value,
)
from npdynamo.errors import NpdynamoError

if TYPE_CHECKING:
    from npdynamo.capture.session import CaptureContext

#: Instructions one capture may evaluate before giving up (an unrolled loop that never ends):
#: past it the graph breaks and the frame runs on in Python to its end (``runs_on_natively``).
#: A loop this long with so few ops is Python-level work a graph gains nothing from, while each
#: unrolled step costs a few microseconds of capture (and the break re-traces up to it).
STEP_LIMIT = 50_000
#: Depth of inlined user calls before giving up (recursion).
INLINE_DEPTH_LIMIT = 32


#: What the handlers CPython adds around a generator body and an inlined comprehension run.
RESTORING_HANDLER_OPS = frozenset({"CALL_INTRINSIC_1", "SWAP", "POP_TOP", "STORE_FAST", "NOP"})


class ReachedBreak(Exception):
    """The re-trace reached the break point: the root frame's state is what the break needs."""

    def __init__(self, frame: Frame) -> None:
        super().__init__("reached the graph break")
        self.frame = frame


#: How the translator's parts talk to each other (and the user's npdynamo errors): they pass
#: through a frame untouched; any other exception out of a handler is an internal error.
CAPTURE_SIGNALS = (UserCodeRaises, RollRefused, ReachedBreak, NpdynamoError)


class Frame:
    """One activation of user bytecode evaluated on tracked values."""

    def __init__(
        self,
        ctx: CaptureContext,
        func: FunctionValue,
        locals_: dict[str, Value],
        parent: Frame | None = None,
        generator: bool = False,
    ) -> None:
        self.ctx = ctx
        self.func = func
        self.code = func.code
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        if self.depth > INLINE_DEPTH_LIMIT:
            raise ctx.unsupported("calls nest too deeply to inline (recursion?)")
        flags = self.code.co_flags & CO_GENERATOR_LIKE
        if flags and not (generator and flags == CO_GENERATOR):
            raise ctx.unsupported(
                f"{self.code.co_name} is a coroutine or a generator run as the compiled function "
                "itself, which cannot be captured"
            )
        self.globals = func.globals
        self.instrs = decoded_instructions(self.code)
        self.labels = {ins: i for i, ins in enumerate(self.instrs) if isinstance(ins, bc.Label)}
        if generator and self._has_exception_handlers():
            # closing an abandoned generator would run its finally/__exit__ code at a moment
            # the capture does not model
            raise ctx.unsupported(
                f"the generator {self.code.co_name} has try/with blocks, which are not inlined"
            )
        self.ip = 0
        self.lineno = self.code.co_firstlineno
        self.stack: list[Value] = []
        self.locals = dict(locals_)
        self.cells: dict[str, Value] = {}
        for name, cell in zip(self.code.co_freevars, func.closure):
            self.cells[name] = cell
        self.kw_names: tuple[str, ...] = ()
        self.return_value: Value | None = None
        #: what a generator frame's last YIELD_VALUE produced (it is suspended there)
        self.yielded: Value | None = None
        self.visits: dict[int, int] = {}
        #: FOR_ITER index -> (iterator, steps when its loop started, iterations stepped)
        self.unrolling: dict[int, tuple] = {}
        #: run stops before this instruction (a while loop's body captured as a subgraph)
        self.stop_at: int | None = None
        #: jumps to a label go to an instruction instead (a branch at the end of a loop body:
        #: a jump back to the loop's head goes to the branch's own jump back, where it stops)
        self.redirects: dict[bc.Label, int] | None = None

    def _has_exception_handlers(self) -> bool:
        """True if the code has a handler that runs user code: a try/with block, not 3.12+'s
        generator wrapper (PEP 479) or an inlined comprehension's restore of its names."""
        for item in self.instrs:
            if isinstance(item, bc.TryBegin):
                for ins in self.instrs[self.labels[item.target] :]:
                    if not isinstance(ins, bc.Instr):
                        continue
                    if ins.name == "RERAISE":
                        break
                    if ins.name not in RESTORING_HANDLER_OPS:
                        return True
        return False

    # -- helpers used by the handlers ------------------------------------------------------
    def location(self) -> Location:
        filename = self.code.co_filename
        line = linecache.getline(filename, self.lineno) if self.lineno else ""
        return Location(filename, self.lineno or 0, line.rstrip("\n"), user_name(self.code))

    def push(self, value: Value) -> None:
        self.stack.append(value)

    def pop(self) -> Value:
        return self.stack.pop()

    def popn(self, n: int) -> list[Value]:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def jump(self, label: bc.Label) -> None:
        redirects = self.redirects
        self.ip = redirects[label] if redirects and label in redirects else self.labels[label]

    def unsupported(
        self, reason: str, hint: str = "", kind: str = "unsupported_construct"
    ) -> CaptureUnsupported:
        return self.ctx.unsupported(reason, hint, kind)

    def load_cell(self, name: str) -> Value:
        cell = self.cells.get(name)
        if isinstance(cell, CellValue):
            if cell.contents is None:
                raise UserCodeRaises(
                    NameError(
                        f"cannot access free variable '{name}' where it is not associated with a"
                        " value in enclosing scope"
                    )
                )
            return cell.contents
        if isinstance(cell, ExternalCell):
            if cell.contents is None:
                try:
                    raw = cell.cell.cell_contents
                except ValueError as exc:
                    raise UserCodeRaises(NameError(str(exc))) from exc
                cell.contents = self.ctx.builder.wrap(raw, cell.source)
            return cell.contents
        raise self.unsupported(f"closure variable {name!r} not found")

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> Value:
        previous, self.ctx.current = self.ctx.current, self
        root = self.parent is None
        break_at = self.ctx.break_at if root else None
        if root:  # a decision on symbolic sizes anywhere in the capture becomes a guard
            self.ctx.facts.__enter__()
        try:
            instrs = self.instrs
            while self.return_value is None and self.yielded is None and self.ip != self.stop_at:
                if root:
                    visit = self.visits[self.ip] = self.visits.get(self.ip, 0) + 1
                    if break_at is not None and (self.ip, visit) == break_at:
                        raise ReachedBreak(self)
                ins = instrs[self.ip]
                self.ip += 1
                if not isinstance(ins, bc.Instr):
                    continue
                if ins.lineno is not None:
                    self.lineno = ins.lineno
                self.ctx.steps += 1
                if self.ctx.steps > STEP_LIMIT:
                    error = self.unsupported(
                        f"the loop runs too many iterations to unroll into a graph (over"
                        f" {STEP_LIMIT:,} instructions); the rest of the function runs in Python",
                        "move the long loop out of the compiled function or shorten it",
                    )
                    error.runs_on_natively = True
                    raise error
                handler = HANDLERS.get(ins.name)
                if handler is None:
                    raise self.unsupported(*unsupported_opcode_reason(ins.name))
                handler(self, ins)
            return self.return_value
        except CaptureUnsupported as exc:
            if root and exc.root_position is None:
                index = self.ip - 1
                exc.root_position = (index, self.visits.get(index, 1))
            raise
        except CAPTURE_SIGNALS:
            raise
        except Exception as exc:
            # npdynamo's own failure on this instruction (a bug): never the user's traceback,
            # a graph break at the instruction, which then runs in Python
            unsupported = self.unsupported(internal_error_reason(exc), kind="internal_error")
            if root:
                index = self.ip - 1
                unsupported.root_position = (index, self.visits.get(index, 1))
            raise unsupported from exc
        finally:
            self.ctx.current = previous
            if root:
                self.ctx.facts.__exit__(None, None, None)


def root_frame(ctx: CaptureContext, frame_args: tuple) -> Frame:
    """The frame of the captured function itself, its arguments wrapped with their sources."""
    fn = ctx.fn
    code = fn.__code__
    locals_: dict[str, Value] = {}
    for i, name in enumerate(ctx.arg_names):
        locals_[name] = ctx.builder.wrap(frame_args[i], LocalSource(name, i))
    closure = tuple(
        ctx.builder.external_cell(cell, ClosureSource(name, i), ClosureCellSource(name, i))
        for i, (name, cell) in enumerate(zip(code.co_freevars, ctx.cells))
    )
    func = FunctionValue(code, fn.__globals__, fn.__name__, closure=closure, obj=fn)
    return Frame(ctx, func, locals_)


#: What the user wrote, for opcodes that have no handler (a graph break in plain words).
OPCODE_CONSTRUCTS = {
    "BEFORE_WITH": (
        "a `with` block: its __enter__ and __exit__ run in Python",
        "the code inside the block is still compiled after the break",
    ),
    "LOAD_BUILD_CLASS": ("a class definition inside the function", "define it at module level"),
    "SEND": ("yield from / await inside a generator", "loop over the inner iterable instead"),
    "GET_YIELD_FROM_ITER": ("yield from inside a generator", "loop over it with for instead"),
    "GET_AWAITABLE": ("await: coroutines cannot be captured", ""),
    "LOAD_SUPER_ATTR": ("super() attribute lookup", ""),
    "DELETE_DEREF": ("del of a closure variable", ""),
}


def unsupported_opcode_reason(name: str) -> tuple[str, str]:
    reason, hint = OPCODE_CONSTRUCTS.get(
        name, (f"the Python construct behind opcode {name} is not supported", "")
    )
    return reason, hint


__all__ = ["Frame", "NULL", "Const", "root_frame"]
