"""Generated entry code of the frame hooks: dispatchers, trampolines and Python calls.

First stage of a call of a compiled function. Every call goes through a small generated Python
function with the user function's own parameters: it binds the arguments exactly as the user's
function would, then loops over the cache's ``(check, run)`` pairs and calls the first ``run``
whose ``check`` accepts the frame arguments, or else the cache's miss handler. Nothing else runs
in the hot path (no ``inspect``, no ``*args``/``**kwargs`` repacking).

The same code serves both hooks:

* the decorator wraps it in a new function object (defaults copied from the user's function);
* the region hook puts it into the user's function as its ``__code__`` (a *trampoline*), so it
  keeps the function's free variables; the function object supplies the defaults.

The pairs list and the miss handler are stored as constants of the generated code object: it
reads them with ``LOAD_CONST``, and no name is added to the user's globals.

The *Python call* (``make_python_call``) runs the user's original code with the frame arguments
passed positionally. It is the original code object with its argument counts widened (the
``*args`` tuple and ``**kwargs`` dict become plain positional slots), so the body runs unchanged.
"""

from __future__ import annotations

import ast
import builtins
import warnings
import weakref
from types import CodeType, FunctionType

from npdynamo import generated as generated_code
from npdynamo.capture.bytecode.code import (
    CO_VARARGS,
    CO_VARKEYWORDS,
    arg_count,
    arg_layout,
    arg_names,
)
from npdynamo.generated import fresh_name

# Stand-ins compiled into the template and swapped for the real objects afterwards.
_PAIRS_MARKER = "\x00npdynamo:pairs"
_MISS_MARKER = "\x00npdynamo:miss"

# Code objects compare by value (a Python call's code can equal the user's code), so sets of
# code objects are keyed by identity throughout this package.
_GENERATED: weakref.WeakValueDictionary[int, CodeType] = weakref.WeakValueDictionary()
# Maps a dispatcher or a hooked function to the function running the user's original code.
_ORIGINALS: weakref.WeakKeyDictionary[FunctionType, FunctionType] = weakref.WeakKeyDictionary()
_VIEWS: weakref.WeakSet[FunctionType] = weakref.WeakSet()
_TEMPLATES: dict[tuple, CodeType] = {}


class EntryList(list):
    """The ``(check, run)`` pairs of one cache, read by generated code.

    Hashable by identity: it is a constant of generated code objects, and code objects hash
    their constants (a plain list would make ``hash(code)`` raise).
    """

    __slots__ = ()
    __hash__ = object.__hash__


def mark_generated(code: CodeType) -> None:
    """Record ``code`` as npdynamo's own: the region hook never captures or hooks it."""
    _GENERATED[id(code)] = code


def is_generated_code(code: object) -> bool:
    """True for code objects npdynamo generated (dispatchers, trampolines, Python calls, ...)."""
    return _GENERATED.get(id(code)) is code


def hashes_by_identity(obj: object) -> bool:
    """True when looking ``obj`` up in a set or dict runs none of the user's code: only such
    objects (functions) are ever registered here, and hashing another object could call its
    ``__hash__`` (a user's side effect, at capture: test_dict's test_setdefault_atomic)."""
    return type(obj).__hash__ is object.__hash__


def original_function(obj: object) -> FunctionType | None:
    """The function running the user's original code behind a dispatcher or a hooked function."""
    if not hashes_by_identity(obj):
        return None
    try:
        return _ORIGINALS.get(obj)
    except TypeError:  # no weak reference to it can exist: never registered
        return None


def is_original_view(fn: object) -> bool:
    """True for a private copy made by ``make_original_view`` (never hooked: it must stay as is)."""
    try:
        return hashes_by_identity(fn) and fn in _VIEWS
    except TypeError:  # no weak reference to it can exist: never registered
        return False


def register_original(front: FunctionType, original: FunctionType) -> None:
    """Remember that calls of ``front`` stand for calls of ``original``."""
    _ORIGINALS[front] = original


def forget_original(front: FunctionType) -> None:
    """Undo ``register_original`` (the region hook restored ``front``'s code)."""
    _ORIGINALS.pop(front, None)


def make_python_call(fn: FunctionType, code: CodeType) -> FunctionType:
    """A function running ``code`` (``fn``'s original code) that takes the frame args positionally.

    ``code`` is passed separately because the region hook has already replaced ``fn.__code__``.
    """
    flat = code.replace(
        co_argcount=arg_count(code),
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=code.co_flags & ~(CO_VARARGS | CO_VARKEYWORDS),
    )
    mark_generated(flat)
    python = FunctionType(flat, fn.__globals__, fn.__name__, None, fn.__closure__)
    python.__qualname__ = fn.__qualname__
    return python


def make_original_view(fn: FunctionType, code: CodeType) -> FunctionType:
    """A private copy of ``fn`` running ``code``, the translator's input.

    The user's function object may get its ``__code__`` replaced by the region hook later; the
    copy keeps the original code, globals, closure and defaults.
    """
    view = FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    view.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    view.__qualname__ = fn.__qualname__
    view.__module__ = fn.__module__
    view.__doc__ = fn.__doc__
    _VIEWS.add(view)
    return view


def make_dispatch_code(
    code: CodeType, pairs: EntryList, miss: object, *, keep_freevars: bool
) -> CodeType:
    """Generated code with ``code``'s parameters that dispatches to ``pairs`` or ``miss``.

    With ``keep_freevars`` it also has ``code``'s free variables (unused), so it can replace
    ``code`` as the ``__code__`` of a closure. Every instruction is placed on the original
    ``def`` line so tracebacks and ``inspect.getsource`` point at the user's function.
    """
    freevars = code.co_freevars if keep_freevars else ()
    key = (
        arg_names(code),
        code.co_posonlyargcount,
        code.co_argcount,
        code.co_kwonlyargcount,
        code.co_flags & (CO_VARARGS | CO_VARKEYWORDS),
        freevars,
    )
    template = _TEMPLATES.get(key)
    if template is None:
        template = _TEMPLATES[key] = _compile_template(code, freevars)
    consts = tuple(
        pairs if c == _PAIRS_MARKER else miss if c == _MISS_MARKER else c
        for c in template.co_consts
    )
    generated = template.replace(
        co_consts=consts,
        co_name=code.co_name,
        co_qualname=code.co_qualname,
        co_filename=code.co_filename,
        co_firstlineno=code.co_firstlineno,
    )
    mark_generated(generated)
    return generated


def make_dispatcher(fn: FunctionType, pairs: EntryList, miss: object) -> FunctionType:
    """A new function with ``fn``'s signature and defaults that dispatches to ``pairs``/``miss``."""
    code = make_dispatch_code(fn.__code__, pairs, miss, keep_freevars=False)
    dispatcher = FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, None)
    dispatcher.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    return dispatcher


def _parameter_list(code: CodeType) -> str:
    layout = arg_layout(code)
    parts = list(layout.positional[: layout.positional_only])
    if layout.positional_only:
        parts.append("/")
    parts.extend(layout.positional[layout.positional_only :])
    if layout.varargs is not None:
        parts.append("*" + layout.varargs)
    elif layout.keyword_only:
        parts.append("*")
    parts.extend(layout.keyword_only)
    if layout.varkw is not None:
        parts.append("**" + layout.varkw)
    return ", ".join(parts)


def _compile_template(code: CodeType, freevars: tuple[str, ...]) -> CodeType:
    names = arg_names(code)
    taken = set(names) | set(freevars)
    check, run = fresh_name("_npd_check", taken), fresh_name("_npd_run", taken)
    outer, inner = fresh_name("_npd_outer", taken), fresh_name("_npd_fn", taken)
    args = ", ".join(names)
    # The free variables are bound in an enclosing function and named after the final return:
    # that makes them free variables of the inner code without any instruction reading them.
    lines = [f"def {outer}():"]
    if freevars:
        lines.append(f"    {' = '.join(freevars)} = None")
    lines += [
        f"    def {inner}({_parameter_list(code)}):",
        f"        for {check}, {run} in {_PAIRS_MARKER!r}:",
        f"            if {check}({args}):",
        f"                return {run}({args})",
        f"        return {_MISS_MARKER!r}({args})",
    ]
    if freevars:
        lines.append(f"        {', '.join(freevars)}")
    lines.append(f"    return {inner}")
    tree = ast.parse("\n".join(lines))
    for node in ast.walk(tree):
        # One line, no columns: every instruction reports the user's ``def`` line, no carets.
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = 1
            node.col_offset = node.end_col_offset = 0
    with warnings.catch_warnings():
        # "'str' object is not callable": the marker is replaced before the code ever runs.
        warnings.simplefilter("ignore", SyntaxWarning)
        module = builtins.compile(tree, "<npdynamo dispatcher>", "exec")
    generated = generated_code.run(module, {})[outer]().__code__
    if generated.co_freevars != freevars:
        raise ValueError(
            f"generated trampoline has free variables {generated.co_freevars}, expected {freevars}"
        )
    return generated


__all__ = [
    "EntryList",
    "is_generated_code",
    "is_original_view",
    "make_dispatch_code",
    "make_dispatcher",
    "make_python_call",
    "make_original_view",
    "mark_generated",
    "original_function",
    "register_original",
    "forget_original",
]
