"""A whole ``while_loop``/``fori_loop`` as ONE njit function: the loop runs in compiled code.

Without this, the numba backend compiles a loop's condition and body as programs of their own
and the loop itself runs in Python (the op's ``impl``): every iteration pays Python dispatch.
Here the writer (``loop_writer``) turns the loop node, its subgraphs and the ``cond``/loop
nodes nested in them into the source of one nopython function: carried values are locals, the
condition is evaluated in compiled code, the body's fusion groups are calls of their kernels,
and ops without a nopython form are NumPy calls in object mode inside the compiled loop. A loop
the writer cannot express (a size no argument's dimension gives, a body returning a
``getitem`` view, a carried complex value) keeps the Python loop; its ``LoopRecord`` in the
numba report says why.

Exactness:

* Indexing is bounds-checked (``boundscheck=True``). Any exception raised by the compiled loop
  (an index out of bounds, a Python int that would overflow int64, a Python division by zero)
  makes the call rerun the loop in Python, which raises NumPy's or Python's own exception (or
  returns Python's exact result). Rerunning is safe: the graph's ops are functional
  (``setitem`` included), so the loop writes only into buffers it allocated, never into its
  arguments, and ops that draw random numbers are refused.
* numba returns an argument array that comes back unchanged as that very object (a zero-trip
  loop, a value passed through the body), exactly as the Python loop returns it, and a NumPy
  call's result as the very object the call gave; views made in compiled code are never
  returned (a body returning a ``getitem`` view is refused). Every other result is a fresh
  array.
* Results have the carried kinds: NumPy scalars where the loop carries NumPy scalars, Python
  int/float where it carries Python numbers.
* Arrays of two or more dimensions that are not C-contiguous, arrays not aligned or not in
  native byte order, and read-only carried arrays run the Python loop (for that call):
  numba's copies are C-ordered where ``setitem``'s keep the memory order, and numba types the
  others apart.
* A numba error while compiling (an argument type the code cannot take), or a NumPy call in
  object mode giving what the compiled code cannot take, switches this loop to the Python loop
  for good, recorded in the report.
"""

from __future__ import annotations

import hashlib
import math
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit, objmode
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaError, NumbaWarning
from numba.core.types import BaseTuple, Boolean, Float, Integer
from numba.core.types import Type as NumbaType

from npdynamo import progress
from npdynamo.backends.numba import boxing, diskcache, errstate, threads
from npdynamo.backends.numba.loop_runtime import UnexpectedValue
from npdynamo.backends.numba.loop_writer import NotCompilable, Writer, node_meta
from npdynamo.backends.report import GUARDED, GuardedInput
from npdynamo.fx.graph import Graph
from npdynamo.fx.node import Node
from npdynamo.fx.subgraphs import is_loop
from npdynamo.generated import Namespace, define
from npdynamo.logs import get_logger
from npdynamo.ops.meta import ArrayMeta, ScalarMeta
from npdynamo.ops.symbolic_code import symbol_name


@dataclass
class LoopRecord:
    """What became of one loop node under the numba backend (a line of its report)."""

    node: str
    op: str
    compiled: bool
    why: str = ""
    runs: int = 0  # calls that ran the compiled loop (a test sees the fast path was taken)
    numpy_ops: tuple[str, ...] = ()  # ops the compiled loop calls back in NumPy
    dispatcher: Any = field(default=None, repr=False)  # the compiled loop's numba function

    def __str__(self) -> str:
        if self.compiled:
            calls = (f"; NumPy calls in object mode: {', '.join(self.numpy_ops)}"
                     if self.numpy_ops else "")
            if self.op == "whole graph":
                return "the whole graph: one compiled function, its branches and loops in numba"
            return (f"loop {self.node} ({self.op}): one compiled program, the loop runs in "
                    f"numba{calls}")
        return f"loop {self.node} ({self.op}): Python loop ({self.why})"


# -- the loop node's program ---------------------------------------------------------------
def _flat_args(op: str, args: tuple) -> tuple:
    """The loop node's arguments as the loop function's parameters (subgraphs left out)."""
    if op == "graph":  # a whole graph's program (``GraphCall``): its arguments themselves
        return args
    if op == "while_loop":
        _cond, _body, carried, cond_extra, body_extra = (*args, (), ())[:5]
        return (*carried, *cond_extra, *body_extra)
    lower, upper, _body, carried, body_extra = (*args, ())[:5]
    return (lower, upper, *carried, *body_extra)


def _loop_source(node: Node, op: str, prepare: Callable[[Graph], Graph]) -> Writer:
    if node.kwargs:
        raise NotCompilable("keyword arguments")
    writer = Writer(prepare)
    values = _flat_args(op, node.args)
    for v in values:
        meta = node_meta(v) if isinstance(v, Node) else v
        if type(meta) is complex:
            raise NotCompilable("a carried or outer Python complex")
        if isinstance(meta, (ArrayMeta, np.ndarray, np.generic)) and \
                meta.dtype.kind not in "biufc":
            raise NotCompilable(f"a carried or outer value of dtype {meta.dtype}")
        if isinstance(meta, ScalarMeta) and meta.type not in (int, float):
            raise NotCompilable(f"a carried or outer Python {meta.type.__name__}")
    params = [f"p{k}" for k in range(len(values))]
    for param, v in zip(params, values):  # the ints the loop is given, as bounds of its index
        if type(v) is int:
            writer.ranges[param] = (v, v)
        elif symbol_name(v) is not None:  # (an array's length: the caller passes its value)
            writer.ranges[param] = (0, 2**63 - 1)
    if op == "while_loop":
        _cond, _body, carried, cond_extra, _extra = (*node.args, (), ())[:5]
        n, m = len(carried), len(cond_extra)
        result = writer.emit_while(node.args[0], node.args[1], params[:n], params[n:n + m],
                                   params[n + m:], 1)
    else:
        n = len(node.args[3])
        result = writer.emit_fori(params[0], params[1], node.args[2], params[2:2 + n],
                                  params[2 + n:], 1)
    metas = list(node.meta.get("val") or ())
    if len(metas) == n:  # (each carried value boxed as the warm path returns it)
        result = "(" + "".join(_boxed(writer, f"{result}[{k}]", meta) + ", "
                               for k, meta in enumerate(metas)) + ")"
    writer.emit(f"return {result}", 1)
    writer.lines[:0] = [f"def loop({', '.join(params)}):",
                        *_symbol_reads({name: local for name, local in writer.symbols.items()
                                        if name not in writer.loop_symbols}, values, params),
                        *(f"    {line}" for line in writer.hoisted)]
    return writer


def _symbol_reads(symbols: dict[str, str], values: tuple, params: list[str]) -> list[str]:
    """Lines reading each size symbol the loop uses from a dimension of an argument."""
    origins: dict[str, str] = {}
    for v, param in zip(values, params):
        meta = node_meta(v)
        for d, size in enumerate(meta.shape if isinstance(meta, ArrayMeta) else ()):
            name = symbol_name(size)
            if name is not None:
                origins.setdefault(name, f"{param}.shape[{d}]")
    missing = sorted(set(symbols) - set(origins))
    if missing:
        raise NotCompilable(f"the sizes {', '.join(missing)} are no dimension of the loop's "
                            "arrays")
    return [f"    {local} = {origins[name]}" for name, local in symbols.items()]


def _converter(meta: Any) -> Callable[[Any], Any]:
    """numba's result as the Python loop gives it: NumPy scalars, Python int/float."""
    if isinstance(meta, ScalarMeta):
        return meta.type
    if isinstance(meta, ArrayMeta) and meta.scalar:
        return meta.dtype.type
    return lambda v: v


def _runs_compiled(value: Any, carried: bool) -> bool:
    # numba's copies are C-ordered where NumPy's ``copy(order="K")`` keeps the memory order:
    # the same for arrays of one dimension and C-contiguous ones (and their slices); a
    # read-only carried array would have another numba type than the body's new values
    if not isinstance(value, np.ndarray):
        return True
    flags = value.flags
    return ((value.ndim <= 1 or flags.c_contiguous) and value.dtype.isnative and flags.aligned
            and (flags.writeable or not carried))


class LoopCall:
    """Runs a loop node: its compiled loop function, or its Python loop (``impl``)."""

    def __init__(self, node: Node, writer: Writer, record: LoopRecord) -> None:
        self._setup(node.target.name, node.target.impl, record, writer, node.name)
        self.node_results = list(node.meta.get("val") or ())
        self.convert = [_converter(m) for m in self.node_results]
        first = 0 if self.op == "while_loop" else 2  # the carried values' parameters
        self.carried = (first, first + len(self.convert))
        self.metas = [node_meta(v) if isinstance(v, Node) else v
                      for v in _flat_args(self.op, node.args)]

    def _setup(self, op: str, impl: Callable[..., Any], record: LoopRecord, writer: Writer,
               label: str) -> None:
        self.op = op
        self.impl = impl
        self.record = record
        self.source = "\n".join(writer.lines) + "\n"
        described = _described(writer.globals)
        path = "<memory>"
        if described is not None:  # a file in the kernel cache: numba caches its machine code
            module, path = diskcache.load_loop_module(self.source, writer.globals, described)
            loop = module.loop
        else:
            loop = define(self.source, "loop", writer.globals,
                          filename=f"<npdynamo-loop-{label}>", lines=False)
        get_logger("output_code").info("numba loop program of %s (%s):\n%s",
                                       "the whole graph" if op == "graph" else label, path,
                                       self.source)
        # bounds checked: an index out of range raises (and the Python loop then raises
        # NumPy's IndexError) instead of reading outside the array
        # NumPy calls in object mode hold the GIL: nogil only without them
        self.jit = njit(boundscheck=True, error_model="numpy", nogil=not writer.numpy_ops,
                        cache=path != "<memory>")(loop)
        if path != "<memory>":
            diskcache.guard_numba_cache(self.jit, path)
        record.dispatcher = self.jit
        # what the program calls: this general path until a compiled call gives the
        # specialisation that ``_fast_path`` calls directly
        self.run: Callable[..., tuple] = self.__call__
        self._specialised = False

    def __call__(self, *args: Any) -> tuple:
        if self.record.compiled:
            flat = _flat_args(self.op, args)
            first, end = self.carried
            if all(_runs_compiled(v, first <= k < end) for k, v in enumerate(flat)):
                try:
                    out = self._run(flat)
                except Exception as exc:
                    # numba failed to compile (for good: the Python loop from now on), or the
                    # loop raised: rerun in Python, for its own exception or result
                    if isinstance(exc, (NumbaError, UnexpectedValue)) or \
                            not self.jit.overloads:
                        lines = str(exc).strip().splitlines()
                        self.record.compiled = False
                        self.record.why = (f"numba could not run it: "
                                           f"{type(exc).__name__}: {lines[0] if lines else ''}")
                else:
                    self.record.runs += 1
                    if not self._specialised:
                        self._specialised = True
                        self._specialise(args, flat)
                    return tuple(conv(v) for conv, v in zip(self.convert, out))
        return self.impl(*args)

    def _specialise(self, args: tuple, flat: tuple) -> None:
        self.run = _fast_path(self, args, flat) or self.run

    def _run(self, flat: tuple) -> tuple:
        if self.jit.overloads:
            return self.jit(*flat)
        # the first call compiles: numba's warnings about its own code are not the user's
        # (a user's filter turning warnings into errors would make every call fall back);
        # the progress line's timer shows the compile when it takes long
        with warnings.catch_warnings(), progress.busy():
            warnings.simplefilter("ignore", NumbaWarning)
            return self.jit(*flat)


class GraphCall(LoopCall):
    """Runs a whole graph's function (``whole_graph_program``), or ``program`` (the graph's
    usual program, set before the first call) for calls it cannot take or that raise in it."""

    def __init__(self, graph: Graph, writer: Writer, record: LoopRecord) -> None:
        self._setup("graph", self._no_program, record, writer, "graph")
        self.node_results = [node_meta(v) for v in _outputs(graph)]
        self.convert = [_converter(m) for m in self.node_results]
        self.metas = [node_meta(p) for p in graph.placeholders]
        # every argument counts as carried: a read-only array would take another numba type
        # than the arrays a loop in the graph carries on from it (the program runs that call)
        self.carried = (0, len(self.metas))
        #: what the entry's guards prove about each argument (``GuardedInput``, or None)
        self.guarded = [p.meta.get(GUARDED) for p in graph.placeholders]
        # ``forward`` is what the program (and the tuner, the tiers, the entry) holds: a
        # function of its own, whose code the warm path replaces once a call ran compiled
        # (``_specialise``), so that no frame of this class is left between the entry's
        # runner and the machine code
        self._scope = {"general": self._general}
        self.forward: Callable[..., tuple] = define(
            "def forward(*args):\n    return general(*args)\n", "forward", self._scope,
            label="graph-call")

    @staticmethod
    def _no_program(*args: Any) -> tuple:
        raise RuntimeError("GraphCall.program was not set")

    @property
    def program(self) -> Callable[..., tuple]:
        return self.impl

    @program.setter
    def program(self, fn: Callable[..., tuple]) -> None:
        self.impl = fn

    def _general(self, *args: Any) -> tuple:
        """The graph's program: under a user's ``np.errstate`` NumPy itself must raise or
        warn, so the usual program (which runs the eager backend then) takes the call."""
        if not errstate.kernels_may_run():
            return self.impl(*args)
        return self.__call__(*args)  # (``run`` is the warm path, whose other way this is)

    def _specialise(self, args: tuple, flat: tuple) -> None:
        fast = _fast_path(self, args, flat, guarded=self.guarded, scope=self._scope)
        if fast is not None:
            self.run = fast
            self.forward.__code__ = fast.__code__  # (its names are in the shared scope)


def _outputs(graph: Graph) -> tuple:
    out = graph.output_node.args[0] if graph.output_node.args else ()
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


# -- the warm path -----------------------------------------------------------------------
#: the bits of ``ndarray.flags.num`` numba's array type depends on or ``_runs_compiled``
#: checks: NumPy's C_CONTIGUOUS and F_CONTIGUOUS (layouts C, F, A: without F, a strided array
#: would reach the machine code typed for an F-ordered one), ALIGNED and WRITEABLE
_FLAG_BITS = 0x1 | 0x2 | 0x100 | 0x400
#: C_CONTIGUOUS, ALIGNED and WRITEABLE: ``flags.carray``, one property (no int built); numba
#: types such an array C-ordered whatever its F_CONTIGUOUS bit (it looks at C first)
_CARRAY = 0x1 | 0x100 | 0x400


def _fast_path(call: LoopCall, args: tuple, flat: tuple, *,
               guarded: list[GuardedInput | None] | None = None,
               scope: dict | None = None) -> Callable[..., tuple] | None:
    """The loop node's call as one generated function: when every argument has the type and
    flags it had in ``flat`` (a call that ran compiled), it calls the machine code numba
    compiled for them (``entry_point``: no type resolution by numba's dispatcher) and
    converts the results as ``LoopCall`` does; any other argument goes the general way
    (``call.__call__``), and a raise reruns the Python loop. None: no specialisation of
    numba's matches ``flat`` exactly (numba converted an argument), so no fast path.

    A whole graph's call (``GraphCall``) gives ``guarded``, what the entry's guards prove
    about each argument (``_tests``: those tests are left out), and ``scope``, the globals
    of its ``forward`` (the function is defined there, its code becomes ``forward``'s); its
    warm path tests NumPy's error state too (``GraphCall._general`` decides otherwise)."""
    jit = call.jit
    try:
        signature = tuple(jit.typeof_pyval(v) for v in flat)
    except Exception:  # a value numba cannot type: the general path decides
        return None
    compiled = jit.overloads.get(signature)
    if compiled is None or len(flat) != len(call.metas):
        return None
    ns = Namespace(scope, reserved=[f"a{k}" for k in range(len(args))] +
                   [f"p{k}" for k in range(len(flat))] + ["out"])
    params = [f"a{k}" for k in range(len(args))]
    lines = [f"def run({', '.join(params)}):"]
    flat_names = []
    # the subgraphs ``_flat_args`` leaves out
    subgraphs = {"while_loop": (0, 1), "fori_loop": (2,)}.get(call.op, ())
    for k, arg in enumerate(args):
        if k in subgraphs:
            continue
        if isinstance(arg, tuple):
            names = [f"p{len(flat_names) + j}" for j in range(len(arg))]
            if names:
                lines.append(f"    {', '.join(names)}, = a{k}")
            flat_names += names
        else:
            flat_names.append(f"a{k}")
    if len(flat_names) != len(flat):
        return None
    tests = []
    if scope is not None:  # (``errstate.current`` is ``ContextVar.get``: no Python frame)
        tests.append(f"{ns.bind(errstate.current, 'errstate')}() in "
                     f"{ns.bind(errstate.DEFAULT_STATES, 'default_errstates')}")
    facts = guarded or [None] * len(flat)
    for name, value, fact in zip(flat_names, flat, facts):
        tests += _tests(name, value, fact, ns)
    returned = compiled.signature.return_type
    returned = tuple(returned) if isinstance(returned, BaseTuple) else ()
    as_returned = [_boxed_as_returned(meta, returned[k] if k < len(returned) else None)
                   for k, meta in enumerate(call.node_results)]
    results = ", ".join(
        f"out[{k}]" if same else f"{ns.bind(conv, 'convert')}(out[{k}])"
        for k, (conv, same) in enumerate(zip(call.convert, as_returned)))
    # (numba's tuple itself when it holds every result as the loop returns it)
    results = "out" if all(as_returned) and len(returned) == len(call.convert) else \
        f"({results}{',' if len(call.convert) == 1 else ''})"
    everything = ", ".join(params)
    # (a whole graph's other way decides on the error state first: ``GraphCall._general``)
    general = call.__call__ if scope is None else scope["general"]
    entry = ns.bind(compiled.entry_point, "entry")
    lines += [f"    if {' and '.join(tests) or 'True'}:",
              "        try:",
              f"            out = {entry}({', '.join(flat_names)})",
              "        except Exception:  # the loop raised: Python's loop raises or returns",
              f"            return {ns.bind(call.impl, 'impl')}({everything})",
              f"        {ns.bind(call.record, 'record')}.runs += 1",
              f"        return {results}",
              f"    return {ns.bind(general, 'general')}({everything})"]
    if scope is None:
        return define("\n".join(lines) + "\n", "run", ns, label="loop-call")
    scope.update(ns.values)
    return define("\n".join(lines) + "\n", "run", scope, label="graph-call")


def _boxed_as_returned(meta: Any, numba_type: NumbaType | None) -> bool:
    """Whether numba's entry point boxes a result of ``numba_type`` as the object the loop's
    Python run returns for ``meta`` (then the warm path returns it as it is): an array; a
    number ``boxing.numpy_scalar`` boxed as the NumPy scalar of ``meta``'s dtype; a Python
    ``int``, ``float`` or ``bool`` (numba boxes every integer as an ``int``, every float as
    a ``float``, a boolean as a ``bool``)."""
    if isinstance(meta, ArrayMeta) and not meta.scalar:
        return True
    if isinstance(meta, ArrayMeta):
        return isinstance(numba_type, boxing.NumPyScalar) and numba_type.dtype == meta.dtype
    if isinstance(meta, ScalarMeta):
        return (meta.type is int and isinstance(numba_type, Integer)) or \
            (meta.type is float and isinstance(numba_type, Float)) or \
            (meta.type is bool and isinstance(numba_type, Boolean))
    return False


def _tests(name: str, value: Any, fact: GuardedInput | None, ns: Namespace) -> list[str]:
    """The tests that ``name`` is typed by numba as ``value`` was, less what ``fact`` proves.

    ``fact`` (the guards' ``GuardedInput``) holds on every call for the very object ``name``
    is: a test it implies is left out, each one only where ``value`` (the argument of the
    call the specialisation was made for, which passed the same guards) agrees with it.
    numba types an array by its dtype's equality (``from_dtype``), which the guard's
    ``is ... or ==`` tests. The flags are never guarded: their test stays (a C-ordered one's
    as ``flags.carray``, which costs less than building ``flags.num``)."""
    tests = []
    if fact is None or type(value) is not fact.type:
        tests.append(f"type({name}) is {ns.bind(type(value), 'type')}")
    if isinstance(value, np.ndarray):  # the dtype object, rank and flags numba typed
        if fact is None or fact.dtype is None or value.dtype != fact.dtype or \
                type(value) is not fact.type:
            tests.append(f"{name}.dtype is {ns.bind(value.dtype, 'dtype')}")
        if fact is None or fact.ndim != value.ndim or type(value) is not fact.type:
            tests.append(f"{name}.ndim == {value.ndim}")
        flags = value.flags.num & _FLAG_BITS
        tests.append(f"{name}.flags.carray" if flags & _CARRAY == _CARRAY else
                     f"{name}.flags.num & {_FLAG_BITS} == {flags}")
    return tests


def _described(namespace: dict) -> str | None:
    """A text that identifies every object a loop's source names (numba builds them into the
    machine code it caches), or ``None`` when one has no stable identity (then no disk cache)."""
    parts = []
    for name in sorted(namespace):
        text = _identity(namespace[name])
        if text is None:
            return None
        parts.append(f"{name}={text}")
    return ";".join(parts)


def _identity(obj: Any) -> str | None:
    if isinstance(obj, Dispatcher):  # a kernel: its module's name is its source's key
        inlined = "inlined " if obj.targetoptions.get("inline") == "always" else ""
        return f"{inlined}kernel {obj.py_func.__module__}"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if obj is objmode:
        return "numba.objmode"
    if isinstance(obj, (bool, int, float, complex, str)):
        return f"{type(obj).__name__} {obj!r}"
    if isinstance(obj, np.generic):
        return f"scalar {obj.dtype.str} {obj.tobytes().hex()}"
    if isinstance(obj, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()
        return f"array {obj.dtype.str} {obj.shape} {digest}"
    if isinstance(obj, (np.dtype, NumbaType)):
        return f"{type(obj).__name__} {obj}"
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) or ("numpy" if isinstance(obj, np.ufunc) else None)
    if qualname and module and "<" not in qualname:  # importable: a function, a ufunc, a class
        return f"{type(obj).__name__} {module}.{qualname}"
    return None


# -- a whole graph as one function ------------------------------------------------------
def whole_graph_program(graph: Graph, prepare: Callable[[Graph], Graph]) -> GraphCall | None:
    """The whole (prepared) top-level ``graph`` as one nopython function, when it has a branch
    at its top level (as the peeled first iteration of a loop whose carried value changes type
    has, the CRC's) or a loop with other small work around it (``_worth_one_function``) and
    the writer expresses every op
    in nopython code (no NumPy call in object mode). The backend then calls that one function
    (``GraphCall.forward``) where the program would run each branch, kernel and loop from
    Python: a branch costs ~1 µs there, the scalar work in it nanoseconds.

    Exactness is the loop program's (the module docstring): the function never writes into
    its arguments, and any exception it raises (or a numba error) reruns the call on the
    graph's usual program (``GraphCall.program``, set by the backend once it is built), which
    raises or returns as it does. Called before the backend compiles the subgraphs (which
    puts their programs in place of the graph's branches and bodies). None: the
    graph keeps its usual program (no top-level control flow, or an op the writer cannot
    express without object mode)."""
    if not _worth_one_function(graph):
        return None
    own, _ = graph.copy()  # the writer rewrites int operands in the graph it writes
    params = [f"p{k}" for k in range(len(own.placeholders))]
    writer = Writer(prepare)
    # (the function runs only on arguments of at most one dimension or C-contiguous ones)
    writer.c_ordered.update(own.placeholders)
    try:
        for p in own.placeholders:
            meta = node_meta(p)
            if not (isinstance(meta, ScalarMeta) and meta.type in (int, float)) and not (
                    isinstance(meta, ArrayMeta) and meta.dtype.kind in "biufc"):
                raise NotCompilable(f"an argument {meta!r}")
        results = writer.graph(own, params, 1)
        sizes = _symbol_reads({name: local for name, local in writer.symbols.items()
                               if name not in writer.loop_symbols},
                              tuple(own.placeholders), params)
    except NotCompilable:
        return None
    arrays = [v for v in _outputs(own) if isinstance(node_meta(v), ArrayMeta)]
    if writer.numpy_ops or len(set(arrays)) != len(arrays):
        # (object mode is slower than the program's own NumPy calls; an array returned twice
        # would come back from numba as two objects)
        return None
    # (the machine code boxes each result as Python gets it: ``boxing``)
    writer.emit(f"return ({''.join(_boxed(writer, e, meta) + ', ' for e, meta in results)})", 1)
    writer.lines[:0] = [f"def loop({', '.join(params)}):",
                        *sizes,
                        *(f"    {line}" for line in writer.hoisted)]
    record = LoopRecord("graph", "whole graph", compiled=True)
    return GraphCall(own, writer, record)


def _boxed(writer: Writer, expression: str, meta: Any) -> str:
    """``expression`` returned so that numba's entry point boxes it as the warm path returns
    it: an array without numba's unpickle of its class, a NumPy scalar as that scalar."""
    if isinstance(meta, ArrayMeta) and not meta.scalar:
        return f"{writer.bind(boxing.returned_array, 'returned_array')}({expression})"
    if isinstance(meta, ArrayMeta) and boxing.SCALARS_BOXED:
        return f"{writer.bind(boxing.numpy_scalar, 'numpy_scalar')}({expression})"
    return expression


#: the most elements of any array computed at the top level of a graph whose loops make it one
#: function (``_worth_one_function``): the function's kernels are serial and its products
#: inline loops, where the program would run large ones in parallel or on BLAS
_TOP_LEVEL_ELEMENTS = threads.PARALLEL_MIN_ELEMENTS


def _worth_one_function(graph: Graph) -> bool:
    """Whether the whole graph is worth one function: a branch at its top level, or a loop
    with other work around it (the program would run each of those ops from Python, around
    the loop's own call: the allocations and the peeled first iteration of a loop nest, an
    LU's row of element writes, each a NumPy call and a copy). Only where every array
    computed at the top level is small and of static size."""
    ops = [n for n in graph.nodes if n.op == "call_function"]
    if any(getattr(n.target, "name", "") == "cond" for n in ops):
        return True
    if not any(is_loop(n) for n in ops) or all(
            is_loop(n) or getattr(n.target, "name", "") == "tuple_item" for n in ops):
        return False  # (a loop alone at the top level is its loop program already)
    for n in ops:
        if is_loop(n):
            continue
        meta = node_meta(n)
        if isinstance(meta, ArrayMeta) and not (
                all(type(d) is int for d in meta.shape)
                and math.prod(meta.shape) < _TOP_LEVEL_ELEMENTS):
            return False
        if getattr(n.target, "name", "") == "matmul" and all(
                isinstance(node_meta(a), ArrayMeta) for a in n.args):
            shapes = [node_meta(a).shape for a in n.args]
            if not all(type(d) is int for s in shapes for d in s) or \
                    math.prod(shapes[0]) * (shapes[1][-1] if len(shapes[1]) > 1 else 1) \
                    >= _TOP_LEVEL_ELEMENTS:
                return False
    return True


def loop_programs(graph: Graph, prepare: Callable[[Graph], Graph]) -> list[LoopRecord]:
    """Give each ``while_loop``/``fori_loop`` node of ``graph`` whose loop the writer can
    express its compiled loop (``node.meta["numba_impl"]``, which the program calls instead of
    the op's Python loop). Returns one record per loop node."""
    records = []
    for node in graph.nodes:
        if not is_loop(node):
            continue
        op = node.target.name
        record = LoopRecord(node.name, op, compiled=False)
        try:
            writer = _loop_source(node, op, prepare)
        except NotCompilable as exc:
            record.why = str(exc)
        else:
            record.compiled = True
            record.numpy_ops = tuple(dict.fromkeys(writer.numpy_ops))
            node.meta["numba_impl"] = LoopCall(node, writer, record)
        records.append(record)
    return records
