"""The translator: evaluates a function's bytecode symbolically into a graph plus guards.

``CaptureContext`` owns what one capture builds (the fx graph, the guards, the values read from
the frame). ``Frame`` is one activation: the captured function, a user function inlined into it,
or the body of a generator made inside it (run up to each yield, see ``generators.py``).
It steps through the instructions the ``bytecode`` library decoded, dispatching each to the one
opcode-handler table ``tables.HANDLERS`` (filled by ``opcodes/``); jumps follow values known at
capture time, so loops unroll and branches specialise. Nothing here executes an array operation.
"""

from __future__ import annotations

import linecache
import re
import types

from npdynamo import ops, progress
from npdynamo.autograd.tracer import tracer_value
from npdynamo.capture import bytecode as bc
from npdynamo.capture.builder import ValueBuilder
from npdynamo.capture.bytecode.code import CO_GENERATOR, CO_GENERATOR_LIKE, arg_names
from npdynamo.capture.bytecode.generate import decoded_instructions, user_name
from npdynamo.capture.errors import (
    CaptureUnsupported,
    Location,
    RollRefused,
    UserCodeRaises,
    internal_error_reason,
)
from npdynamo.capture.guards import (
    ClosureSource,
    Guard,
    GuardKind,
    GuardSet,
    LocalSource,
    SourceTuple,
    remaining_items,
)
from npdynamo.capture.registry import HANDLERS
from npdynamo.capture.side_effects import SideEffects
from npdynamo.capture.values import (
    NULL,
    ArrayValue,
    CellValue,
    Const,
    ExternalCell,
    FunctionValue,
    ScalarInputValue,
    SizeValue,
    TupleValue,
    Value,
    map_values,
)
from npdynamo.errors import NpdynamoError
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.shape_guards import shape_guards
from npdynamo.ops.symbol_table import SymbolTable
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision, SymInt, compare, hint_of

#: Instructions one capture may evaluate before giving up (an unrolled loop that never ends):
#: past it the graph breaks and the frame runs on in Python to its end (``runs_on_natively``).
#: A loop this long with so few ops is Python-level work a graph gains nothing from, while each
#: unrolled step costs a few microseconds of capture (and the break re-traces up to it).
STEP_LIMIT = 50_000
#: Ops one graph may hold: a long loop unrolled past this ends the graph (a graph break), so
#: generating and compiling a graph stays fast; the loop continues in a resume function.
GRAPH_NODE_LIMIT = 4_000
#: Depth of inlined user calls before giving up (recursion).
INLINE_DEPTH_LIMIT = 32


#: What the handlers CPython adds around a generator body and an inlined comprehension run.
RESTORING_HANDLER_OPS = frozenset({"CALL_INTRINSIC_1", "SWAP", "POP_TOP", "STORE_FAST", "NOP"})


class ReachedBreak(Exception):
    """The re-trace reached the break point: the root frame's state is what the break needs."""

    def __init__(self, frame: Frame) -> None:
        super().__init__("reached the graph break")
        self.frame = frame


class CaptureContext:
    """Everything one capture of one function builds."""

    def __init__(
        self,
        fn: types.FunctionType,
        break_at: tuple[int, int] | None = None,
        cells_as_argument: bool = False,
        opaque_iterators: bool = False,
        dynamic: bool | None = None,
        unrolled_loops: dict | None = None,
    ) -> None:
        self.fn = fn
        #: (code, index) -> why: ``for`` loops an earlier attempt failed to form (unrolled now)
        self.unrolled_loops = {} if unrolled_loops is None else unrolled_loops
        #: what became of each loop met, once per text (``explain``)
        self.loop_notes: dict[str, None] = {}
        #: the np.errstate modes the ops recorded now run under (``errstate_blocks.py``)
        self.errstate: tuple = ()
        #: ``compile(dynamic=...)``; the symbols of this capture's dynamic input dimensions and
        #: the facts about them the op rules relied on (they become the entry's size guards)
        self.dynamic = dynamic
        self.symbols = SymbolTable()
        self.facts = FactRecorder()
        #: (instruction index in the root frame, visit number): where the re-trace stops
        self.break_at = break_at
        self.cells_as_argument = cells_as_argument
        #: loop iterators among the arguments are not unrolled: their FOR_ITER runs natively
        self.opaque_iterators = opaque_iterators
        self.graph = Graph()
        #: the function's own graph; ``graph`` is a loop body's or branch's while it is captured
        #: (``control_flow.py``), and ``lift`` then maps outer values into it
        self.root_graph = self.graph
        self.lift = None
        #: id -> ArrayValue of arrays a control-flow node read or returned (they may alias)
        self.loop_aliased: dict[int, ArrayValue] = {}
        self.arg_names = list(arg_names(fn.__code__))
        self.guards = GuardSet(arg_count=len(self.arg_names))
        if cells_as_argument:
            self.guards.cell_count = len(fn.__closure__ or ())
        self.cells = tuple(fn.__closure__ or ())
        self.guards.namespace_base = self.guard_namespace()
        self.builder = ValueBuilder(self)
        self.side_effects = SideEffects()
        #: > 0 while a loss is captured for value_and_grad (tape semantics apply)
        self.differentiating = 0
        self.placeholders: list[tuple[object, object]] = []  # (node, source)
        self.steps = 0
        self.node_count = 0
        self.current: Frame | None = None

    def guard_namespace(self) -> dict:
        ns = {"G": self.fn.__globals__, "REMAINING": remaining_items}
        if not self.cells_as_argument:
            ns.update({f"CELL{i}": c for i, c in enumerate(self.cells)})
        return ns

    # -- locations -------------------------------------------------------------------------
    def location(self) -> Location | None:
        return self.current.location() if self.current is not None else None

    def user_stack(self) -> list[Location]:
        stack, frame = [], self.current
        while frame is not None:
            stack.append(frame.location())
            frame = frame.parent
        return stack[::-1]

    def where(self) -> tuple[str, int]:
        loc = self.location()
        if loc is None:  # arguments are wrapped before the first instruction runs
            return (self.fn.__code__.co_filename, self.fn.__code__.co_firstlineno)
        return (loc.filename, loc.lineno)

    def unsupported(
        self, reason: str, hint: str = "", kind: str = "unsupported_construct"
    ) -> CaptureUnsupported:
        return CaptureUnsupported(reason, hint, self.location(), self.user_stack(), kind)

    # -- guards and graph ------------------------------------------------------------------
    def guard(self, source, kind: GuardKind, expected: object) -> None:
        if source is not None:
            self.guards.add(Guard(source, kind, expected, self.where()))

    def add_placeholder(self, value, source, dynamic: frozenset[int] = frozenset()) -> object:
        """A graph input for ``value``; its dimensions in ``dynamic`` become symbols."""
        name = _identifier(source.short())
        node = self.root_graph.placeholder(name)
        meta = ArrayMeta.of(tracer_value(value))
        if dynamic:
            shape = tuple(
                self.symbols.new(size, source=f"{source.short()}.shape[{d}]")
                if d in dynamic else size
                for d, size in enumerate(meta.shape)
            )
            meta = ArrayMeta(shape, meta.dtype, scalar=meta.scalar)
        node.meta["val"] = meta
        node.meta["source_name"] = source.name()
        self.placeholders.append((node, source))
        return node

    def add_scalar_placeholder(self, value, source) -> object:
        """A graph input for a dynamic scalar: a weak Python int or float of unknown value."""
        node = self.root_graph.placeholder(_identifier(source.short()))
        node.meta["val"] = ScalarMeta(type(value))
        node.meta["source_name"] = source.name()
        self.placeholders.append((node, source))
        return node

    def concrete(self, size):
        """``size`` as a Python int: a symbolic size read by Python code is specialised (the
        fact ``size == its value now`` becomes a guard), since Python code may do anything with
        it (``range``, a list index, ``print``)."""
        if not isinstance(size, SymInt):
            return size
        value = hint_of(size)
        try:
            with self.facts:
                compare(size, "==", value)  # true by construction; recorded as a fact
        except SymbolicDecision as exc:  # a size of a loop index: no one value (loop_index)
            raise self.unsupported(
                f"Python needs the value of a size that changes with a loop index: {exc}") from exc
        return value

    def size_value(self, size) -> Const:
        """A size as Python code sees it: a ``SizeValue`` when symbolic, else a constant."""
        if not isinstance(size, SymInt):
            return Const(size)
        return SizeValue(size, hint_of(size), lambda: self.concrete(size))

    def concrete_shape(self, shape: tuple) -> tuple[int, ...]:
        return tuple(self.concrete(d) for d in shape)

    def finish_guards(self) -> None:
        """Add the guards on symbolic sizes (from the placeholders and the recorded facts),
        then generate the guard function."""
        metas = [node.meta.get("val") for node, _source in self.placeholders]
        if any(isinstance(m, ScalarMeta) or (
                isinstance(m, ArrayMeta) and any(isinstance(d, SymInt) for d in m.shape))
               for m in metas):
            sources = tuple(source for _node, source in self.placeholders)
            scalar_sizes = {i: node.meta["size_expr"] for i, (node, _s) in enumerate(
                self.placeholders) if "size_symbol" in node.meta}  # a loop's trip count
            sizes = shape_guards(metas, self.facts.facts, [s.short() for s in sources],
                                 scalar_sizes)
            self.guard(SourceTuple(sources), GuardKind.SIZES, sizes)
        self.guards.compile()

    def call_op(self, op, args: tuple, kwargs: dict) -> ArrayValue | Const:
        """Record ``op(*args, **kwargs)`` (tracked values inside) as a graph node."""
        to_node = self.lift or _node_of
        node_args = map_values(args, to_node)
        node_kwargs = map_values(kwargs, to_node)
        meta_args = _to_meta_args(args)
        meta_kwargs = _to_meta_args(kwargs)
        try:
            with self.facts:
                meta = op.infer(*meta_args, **meta_kwargs)
        except (ops.UnsupportedArguments, NotImplementedError) as exc:
            raise self.unsupported(
                f"{op!r} with these arguments cannot be captured: {exc}"
            ) from exc
        except NUMPY_ERRORS as exc:  # what NumPy raises on these operands
            raise UserCodeRaises(exc) from exc
        except Exception as exc:  # the rule's own failure: a break, never "your code raised"
            raise self.unsupported(
                f"{op!r}: {internal_error_reason(exc)}", kind="internal_error") from exc
        self.node_count += 1
        progress.op_captured(self)
        if self.node_count > GRAPH_NODE_LIMIT:
            raise self.unsupported(
                f"the graph reached {GRAPH_NODE_LIMIT} ops (a long loop unrolled); it ends here",
                "the rest continues in the next graph")
        node = self.graph.call_function(op, node_args, node_kwargs)
        node.meta["val"] = meta
        if self.errstate:
            node.meta["errstate"] = self.errstate
        loc = self.location()
        if loc is not None:
            node.meta["source"] = (loc.filename, loc.lineno, loc.source_line.strip())
        if isinstance(meta, tuple) and getattr(op, "subgraph_inputs", None) is None:
            # several results (np.linalg.svd): one projection node each; a control-flow node's
            # results are taken apart by its own capture (``control_flow.record_node``)
            return TupleValue([self.call_op(ops.REGISTRY["tuple_item"], (ArrayValue(node), i),
                                            {}) for i in range(len(meta))])
        return ArrayValue(node)


#: The exceptions a shape/dtype rule raises where NumPy itself would raise (its own kinds); any
#: other exception out of a rule is a fault of the rule.
NUMPY_ERRORS = (ValueError, TypeError, IndexError, KeyError, ArithmeticError)

#: How the translator's parts talk to each other (and the user's npdynamo errors): they pass
#: through a frame untouched; any other exception out of a handler is an internal error.
CAPTURE_SIGNALS = (UserCodeRaises, RollRefused, ReachedBreak, NpdynamoError)


def _identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_") or "arg"
    return name if not name[0].isdigit() else "_" + name


def _node_of(v):
    return v.node if isinstance(v, (ArrayValue, ScalarInputValue)) else v


def _to_meta_args(obj):
    if isinstance(obj, slice):  # a bound from a loop index is a size there (ops.loop_index)
        return slice(*(v.expr if getattr(v, "expr", None) is not None else _to_meta_args(v)
                       for v in (obj.start, obj.stop, obj.step)))
    if isinstance(obj, tuple):
        return tuple(_to_meta_args(v) for v in obj)
    if isinstance(obj, list):
        return [_to_meta_args(v) for v in obj]
    return map_values(obj, lambda v: (
        v.meta if isinstance(v, ArrayValue)
        else v.node.meta["val"] if isinstance(v, ScalarInputValue) else v))


class Frame:
    """One activation of user bytecode under symbolic evaluation."""

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
        #: run stops before this instruction (a while loop's body captured as a subgraph)
        self.stop_at: int | None = None

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
        self.ip = self.labels[label]

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
        ctx.builder.external_cell(cell, ClosureSource(name, i))
        for i, (name, cell) in enumerate(zip(code.co_freevars, ctx.cells))
    )
    func = FunctionValue(code, fn.__globals__, fn.__name__, closure=closure, fn=fn)
    return Frame(ctx, func, locals_)


#: What the user wrote, for opcodes that have no handler (a graph break in plain words).
OPCODE_CONSTRUCTS = {
    "BEFORE_WITH": (
        "a `with` block: its __enter__ and __exit__ run in Python",
        "the code inside the block is still compiled after the break",
    ),
    "IMPORT_NAME": ("an import inside the function", "import at module level"),
    "IMPORT_FROM": ("an import inside the function", "import at module level"),
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


__all__ = ["CaptureContext", "Frame", "NULL", "Const", "root_frame"]
