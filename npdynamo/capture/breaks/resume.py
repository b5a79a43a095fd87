"""Resume functions at run time: called from a broken frame, captured by the same machinery.

A ``CompileSession`` is the session one ``compile()`` makes (``npdynamo/api.py``, through
``compile_frame.new_session``): what its captures share, bound at construction: the backend,
``fullgraph``, ``dynamic``, the resume functions' caches, (for ``explain``) a recorder of every
entry built, and two callables: ``build_entry`` (how a resume function is captured) and
``compile_callee`` (how a user function called natively at a break is compiled). A broken frame
hands over to ``ResumeCall(cells, *stack, *locals)``, an ``EntryCache`` like the frame hook's:
it runs the first entry whose guards hold, or captures the resume function for these arguments
(its guards and runner take the closure cells as a leading argument, since one resume code
serves every closure).

The hand-over is a trampoline, so a loop with a break costs no stack depth per iteration: a
resume function's broken frame returns a ``TailCall`` instead of calling, and a function's own
broken frame hands one to ``finish``, which keeps calling while the result is a ``TailCall``.
The generated hand-over sits after all original code, outside every try range, so returning
instead of calling changes no exception handling.

The hand-over passes ownership, as a Python frame owns its locals: the broken frame clears each
local as it pushes it, the ``TailCall`` is emptied by popping as its call's arguments are pushed
(``take``), and the dispatcher and runners clear what they pass on (``liveness.hand_over``). So
the resumed code holds the only reference to each value, and an object whose last name it drops
dies there, as in Python (a weak reference dies, a cycle is collected, a generator finalised).
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from npdynamo.capture.builder import LOOP_ITERATOR_TYPES
from npdynamo.capture.bytecode.generate import (
    ResumeKey,
    resume_code,
    user_label,
)
from npdynamo.capture.bytecode.liveness import hand_over
from npdynamo.capture.hooks.cache import EntryCache, describe_code
from npdynamo.capture.hooks.dispatch import mark_generated
from npdynamo.generated import define, dispatch_source


@dataclass
class CompileSession:
    """The session of one ``compile()``: its settings and what its captures share. Made by
    ``compile_frame.new_session``; nothing fills it in later."""

    backend: Callable
    #: ``build_entry(fn, args, *, backend, fullgraph, dynamic, context, cells_as_argument,
    #: opaque_iterators)``: captures a frame or a resume function (``compile_frame.build_entry``)
    build_entry: Callable
    fullgraph: bool = False
    #: ``compile(dynamic=...)``: which input dimensions become symbolic (``dynamic_dims``)
    dynamic: bool | None = None
    recorder: Callable | None = None  # recorder(entry, fn) for explain
    #: ``compile_callee(fn)``: what a user function called natively at a break becomes; with
    #: none (a session made for a test) it runs as plain Python
    compile_callee: Callable | None = None
    #: ``on_compile()``: what the backend does at each ``compile(fn, backend=...)`` (the numba
    #: backend starts its compile workers), run by ``hooks/decorator.compile_with``
    on_compile: Callable[[], None] | None = None
    resume_calls: dict = field(default_factory=dict)

    def resume_call(self, key: ResumeKey, fn_globals: dict) -> ResumeCall:
        # code objects compare by value: equal code in another module has other globals
        call = self.resume_calls.get((key, id(fn_globals)))
        if call is None:
            call = self.resume_calls[key, id(fn_globals)] = ResumeCall(self, key, fn_globals)
        return call


class TailCall(list):
    """What a resume function's broken frame returns: ``[*reversed(args), cells, take]`` — call
    ``take(self)`` next, in my place, which pops the arguments one by one onto the stack of its
    call (so nothing but the callee keeps them). Its own class, so no user value is one."""

    __slots__ = ()


def finish(result):
    """Run a resume chain from a function's own frame: no stack growth per resume."""
    while type(result) is TailCall:
        result = result.pop()(result)
    return result


class ResumeCall(EntryCache):
    """The callable a broken frame's trampoline calls: guarded, compiled resume entries."""

    def __init__(self, context: CompileSession, key: ResumeKey, fn_globals: dict) -> None:
        super().__init__(resume_code(key))
        self.context = context
        self.key = key
        self.globals = fn_globals
        #: step loop iterators natively (set once a loop came back here: it breaks every time)
        self.opaque_iterators = False
        self.__name__ = self.code.co_name
        self.arity = sum(kind == "V" for kind in key.stack) + len(key.locals)
        #: what the broken frames' hand-overs call (``dispatch(cells, *args)``): the entries'
        #: checks and runners unrolled into one generated function, rebuilt when they change
        self.dispatch: Callable = self._dispatcher()
        #: ``take(tail)``: pop a ``TailCall``'s cells and arguments into a call of ``dispatch``;
        #: ``python(cells, *args)``: the resume function run as plain Python
        self.take, self._python = self._movers()

    def describe(self) -> str:
        return f"the code after a graph break in {describe_code(self.key.code)}"

    def changed(self) -> None:
        self.dispatch = self._dispatcher()

    def function(self, cells: tuple) -> types.FunctionType:
        return types.FunctionType(self.code, self.globals, self.code.co_name, None, cells or None)

    def __call__(self, cells: tuple, *args):
        return self.dispatch(cells, *args)

    def _dispatcher(self) -> Callable:
        """``dispatch(C, a0, a1, ...)``: the first entry whose guards hold runs, else ``miss``.
        Fixed arity and inlined runners: this runs once per hand-over, in every loop
        iteration that breaks, so each Python call it saves counts. It passes its arguments on
        with their ownership (``hand_over``); a runner whose graph failed hands them back in the
        ``GraphFailed`` for the rerun in Python."""
        params = "".join(f", a{i}" for i in range(self.arity))[2:]
        args = f"C, {params}" if params else "C"
        env: dict = {"choose": self.choose}

        def call(i: int) -> list[str]:
            check, run = self.pairs[i]
            env[f"check{i}"] = check
            parts = getattr(run, "shared_parts", None)
            if parts is None:
                env[f"run{i}"] = run
                return [f"return run{i}({args})"]
            env[f"shared{i}"], env[f"python{i}"], env[f"failed{i}"] = parts
            # the rerun is outside the handler: the Python code must not see GraphFailed as
            # the exception being handled
            return ["try:", f"    return shared{i}({params})",
                    f"except failed{i} as failed:", "    rerun = failed.args",
                    f"return python{i}(*rerun)"]

        source = dispatch_source("dispatch", args, len(self.pairs), call,
                                 f"choose(C, ({params}{',' if params else ''}))({args})")
        dispatch = define(source, "dispatch", env,
                          filename=f"<npdynamo-dispatch-{self.code.co_name}>", lines=False)
        dispatch.__code__ = hand_over(dispatch.__code__)
        mark_generated(dispatch.__code__)  # warnings skip it to name the user's line
        return dispatch

    def _movers(self) -> tuple[Callable, Callable]:
        params = "".join(f", a{i}" for i in range(self.arity))
        pops = ", box.pop()" * self.arity
        source = (f"def take(box):\n    return R.dispatch(box.pop(){pops})\n"
                  f"def python(C{params}):\n"
                  f"    return function(CODE, G, NAME, None, C or None)({params[2:]})\n")
        env = {"R": self, "function": types.FunctionType, "CODE": self.code, "G": self.globals,
               "NAME": self.code.co_name}
        take = define(source, "take", env, filename=f"<npdynamo-take-{self.code.co_name}>",
                      lines=False)
        python = env["python"]
        python.__code__ = hand_over(python.__code__)
        for fn in (take, python):
            mark_generated(fn.__code__)
        return take, python

    def choose(self, cells: tuple, args: tuple) -> Callable:
        """What runs these arguments: an entry captured for them, or (past the limit) Python.
        The caller calls it with the arguments it still owns."""
        return self.run_or_capture(self._python, (cells, *args), self._build, run=False)

    def _build(self, cells_and_args: tuple):
        cells, *args = cells_and_args
        if not self.opaque_iterators and _loops_back(args, self.entries):
            # a loop that breaks in its body came back: an entry per remaining item count
            # would recompile every iteration, so its iterator is stepped natively from now on
            self.opaque_iterators = True
            self.entries.clear()
            self.pairs.clear()
            self.changed()
        return self.context.build_entry(
            self.function(cells),
            tuple(args),
            backend=self.context.backend,
            fullgraph=self.context.fullgraph,
            context=self.context,
            cells_as_argument=True,
            opaque_iterators=self.opaque_iterators,
        )

    def route_to_python(self, why: str) -> None:
        super().route_to_python(why)
        note = getattr(self.context.recorder, "python_from_now_on", None)
        if note is not None:
            note(user_label(self.code), f"later cases run in Python: {why}")


#: Loops with more items left than this are not unrolled by a resume function even once.
UNROLL_ITEMS_LIMIT = 2000


def _loops_back(args: tuple, entries: list) -> bool:
    loops = [a for a in args if type(a) in LOOP_ITERATOR_TYPES]
    if not loops:
        return False
    return bool(entries) or any(operator.length_hint(a) > UNROLL_ITEMS_LIMIT for a in loops)

