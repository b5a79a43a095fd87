"""One capture's state: everything one capture of one function builds, and the limits it keeps.

``CaptureContext`` is the state of one capture: the fx graph (the function's own, or a loop
body's or branch's while a sub-capture of ``flow/`` is active: ``subcapture``), the guards, the
graph inputs read from the frame, the side effects, the symbolic sizes and the facts the op rules
relied on. The translator's frames (``translator.py``) step through bytecode and record into it;
``call_op`` is the one place an op becomes a graph node. ``compile_frame`` makes one per attempt
and hands it, finished, to ``entry.py`` (a whole graph) or ``breaks/`` (a graph break). What all
the captures of one compiled function share (the backend, the resume functions) is the
``CompileSession`` of ``breaks/resume.py`` (one per ``compile()``).
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from npdynamo import ops, progress
from npdynamo.autograd.tracer import tracer_value
from npdynamo.capture.builder import ValueBuilder
from npdynamo.capture.bytecode.code import arg_names
from npdynamo.capture.errors import (
    NUMPY_ERRORS,
    CaptureUnsupported,
    Location,
    UserCodeRaises,
    internal_error_reason,
)
from npdynamo.capture.guards import Guard, GuardKind, GuardSet, SourceTuple, remaining_items
from npdynamo.capture.side_effects import SideEffects
from npdynamo.capture.values import (
    ArrayValue,
    Const,
    ScalarInputValue,
    SizeValue,
    TupleValue,
    map_values,
)
from npdynamo.fx import Graph
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.shape_guards import shape_guards
from npdynamo.ops.symbol_table import SymbolTable
from npdynamo.ops.symbolic import FactRecorder, SymbolicDecision, SymInt, compare, hint_of
from npdynamo.ops.unbacked import mentions_unbacked

if TYPE_CHECKING:
    from npdynamo.capture.flow.subcapture import SubCapture
    from npdynamo.capture.translator import Frame

#: Ops one graph may hold: a long loop unrolled past this ends the graph (a graph break), so
#: generating and compiling a graph stays fast; the loop continues in a resume function.
GRAPH_NODE_LIMIT = 4_000
#: Items of tuples and lists from outside one capture may track one by one when it uses them
#: whole (``sorted(data)``, ``for x in data``); ``seq[i]`` tracks only the item it reads.
ITEMS_READ_LIMIT = 500


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
        #: the np.errstate modes the ops recorded now run under (``flow/errstate_blocks.py``)
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
        #: the function's own graph
        self.root_graph = Graph()
        #: the loop body or branch being captured into its own graph while one is
        #: (``flow/subcapture.py``); ``graph`` and ``lift`` are read through it
        self.subcapture: SubCapture | None = None
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
        #: items of sequences from outside tracked one by one (``builder.ITEMS_READ_LIMIT``)
        self.items_read = 0
        self.node_count = 0
        self.current: Frame | None = None

    def read_items(self, count: int, source) -> None:
        """``count`` items of the sequence at ``source`` are about to be tracked one by one.
        Each is wrapped and guarded by value, at every capture (a loop's new value recaptures)
        and on every call: past ``ITEMS_READ_LIMIT`` a break, as that grows with the data."""
        self.items_read += count
        if self.items_read > ITEMS_READ_LIMIT:
            raise self.unsupported(
                f"using all items of {source.short()} ({count:,}) makes the capture track more "
                f"than {ITEMS_READ_LIMIT:,} items read from outside, one by one",
                "pass long sequences of numbers as NumPy arrays, or work on them outside the "
                "compiled function",
            )

    @property
    def graph(self) -> Graph:
        """Where an op is recorded now: the active sub-capture's graph, else the function's."""
        sub = self.subcapture
        return self.root_graph if sub is None else sub.graph

    @property
    def lift(self) -> Callable | None:
        """How a tracked operand becomes a node of ``graph`` inside a sub-capture (lifting outer
        graph values to placeholders); None on the function's own graph."""
        sub = self.subcapture
        return None if sub is None else sub.lift

    def guard_namespace(self) -> dict:
        ns = {"G": self.fn.__globals__, "REMAINING": remaining_items, "MODULES": sys.modules}
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
        except SymbolicDecision as exc:  # a loop index's size, an unbacked one: no one value
            raise self.unsupported(
                f"Python needs the value of a size that has no one value at capture: {exc}"
            ) from exc
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
        if mentions_unbacked((node_args, node_kwargs)):  # (a slice bound is its node there)
            raise self.unsupported(  # generated code could not compute it (ops.unbacked)
                f"{op!r} takes a size known only when the graph runs (from a slice bound "
                "the graph computes)")
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
