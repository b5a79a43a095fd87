"""Code-object facts: the argument layout, the flags and the running Python version.

A leaf of the capture package (it imports nothing from npdynamo): every layer that needs to know
how a code object lays out its frame arguments, whether it is a generator, or which CPython's
bytecode it reads asks here, so each fact is computed in one place. The frame arguments are the
first ``arg_count(code)`` names of ``co_varnames``: positional parameters, keyword-only ones,
then the ``*args`` tuple and the ``**kwargs`` dict.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from types import CodeType

#: The running CPython as ``(major, minor)``; per-version code compares against it.
PY = sys.version_info[:2]
#: The CPython versions whose bytecode the translator reads.
SUPPORTED_PYTHON = ((3, 11), (3, 12), (3, 13))

CO_OPTIMIZED = inspect.CO_OPTIMIZED
CO_NESTED = inspect.CO_NESTED
CO_VARARGS = inspect.CO_VARARGS
CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
CO_GENERATOR = inspect.CO_GENERATOR
#: Code whose call makes a generator, coroutine or async generator instead of running the body.
CO_GENERATOR_LIKE = (
    inspect.CO_GENERATOR
    | inspect.CO_COROUTINE
    | inspect.CO_ITERABLE_COROUTINE
    | inspect.CO_ASYNC_GENERATOR
)


@dataclass(frozen=True)
class ArgLayout:
    """How a code object's parameters sit in its frame."""

    positional: tuple[str, ...]  #: positional parameters, the positional-only ones first
    positional_only: int
    keyword_only: tuple[str, ...]
    varargs: str | None  #: the ``*args`` name, if any
    varkw: str | None  #: the ``**kwargs`` name, if any

    @property
    def names(self) -> tuple[str, ...]:
        """Every frame argument, in ``co_varnames`` order."""
        extra = tuple(n for n in (self.varargs, self.varkw) if n is not None)
        return self.positional + self.keyword_only + extra


def arg_layout(code: CodeType) -> ArgLayout:
    """The parameters of ``code`` by kind."""
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    index = npos + nkw
    varargs = varkw = None
    if code.co_flags & CO_VARARGS:
        varargs, index = names[index], index + 1
    if code.co_flags & CO_VARKEYWORDS:
        varkw = names[index]
    return ArgLayout(
        names[:npos], code.co_posonlyargcount, names[npos : npos + nkw], varargs, varkw
    )


def arg_count(code: CodeType) -> int:
    """How many of ``code.co_varnames`` hold the frame's initial arguments."""
    return (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & CO_VARARGS)
        + bool(code.co_flags & CO_VARKEYWORDS)
    )


def arg_names(code: CodeType) -> tuple[str, ...]:
    """The frame arguments' names in ``co_varnames`` order (params, kw-only, *args, **kwargs)."""
    return code.co_varnames[: arg_count(code)]


def closure_names(code: CodeType) -> tuple[str, ...]:
    """The frame's cell and free variables, in the order of its closure slots."""
    return tuple(code.co_cellvars) + tuple(code.co_freevars)


def is_generator_like(code: CodeType) -> bool:
    """True when calling ``code`` makes a generator/coroutine instead of running the body."""
    return bool(code.co_flags & CO_GENERATOR_LIKE)


def python_supported(version: tuple[int, int] = PY) -> bool:
    """True when ``version`` (the running CPython by default) is one the translator reads."""
    return version in SUPPORTED_PYTHON
