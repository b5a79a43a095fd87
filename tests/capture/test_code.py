"""``capture/bytecode/code.py``: the argument layout, flags and version facts of code objects,
read from real functions (every parameter kind) against ``inspect``'s own reading of them."""

from __future__ import annotations

import inspect
import sys

import pytest

from npdynamo.capture.bytecode import code as codefacts


def every_kind(a, b=1, /, c=2, *rest, d, e=3, **extra):
    inner = a + b  # a local after the arguments, never a frame argument
    return lambda: inner + c  # ``inner`` becomes a cell


def plain(x, y):
    return x + y


def gen(x):
    yield x


async def coro(x):
    return x


async def agen(x):
    yield x


def test_arg_layout_sorts_parameters_by_kind():
    layout = codefacts.arg_layout(every_kind.__code__)
    assert layout.positional == ("a", "b", "c")
    assert layout.positional_only == 2
    assert layout.keyword_only == ("d", "e")
    assert (layout.varargs, layout.varkw) == ("rest", "extra")
    # co_varnames order: keyword-only parameters before ``*rest`` (the signature's order differs)
    assert layout.names == ("a", "b", "c", "d", "e", "rest", "extra")
    assert set(layout.names) == set(inspect.signature(every_kind).parameters)


def test_arg_layout_without_star_parameters():
    layout = codefacts.arg_layout(plain.__code__)
    assert layout == codefacts.ArgLayout(("x", "y"), 0, (), None, None)
    assert layout.names == ("x", "y")


@pytest.mark.parametrize("fn", [every_kind, plain, gen, lambda *a: a, lambda **k: k])
def test_arg_names_are_the_signature_in_varnames_order(fn):
    code = fn.__code__
    assert set(codefacts.arg_names(code)) == set(inspect.signature(fn).parameters)
    assert codefacts.arg_names(code) == code.co_varnames[:len(codefacts.arg_names(code))]
    assert codefacts.arg_count(code) == len(inspect.signature(fn).parameters)
    assert codefacts.arg_names(code) == codefacts.arg_layout(code).names


def test_closure_names_are_cells_then_free_variables():
    code = every_kind.__code__
    assert codefacts.closure_names(code) == ("c", "inner")  # both read by the lambda
    inner = every_kind(1, d=0)
    assert codefacts.closure_names(inner.__code__) == inner.__code__.co_freevars
    assert len(codefacts.closure_names(inner.__code__)) == len(inner.__closure__)


@pytest.mark.parametrize("fn, expected", [(plain, False), (gen, True), (coro, True),
                                          (agen, True), (every_kind, False)])
def test_generator_like_code(fn, expected):
    assert codefacts.is_generator_like(fn.__code__) is expected


def test_versions():
    assert codefacts.PY == sys.version_info[:2]
    assert codefacts.python_supported()
    assert not codefacts.python_supported((3, 10))
    assert not codefacts.python_supported((3, 14))
    assert codefacts.NULL_ABOVE_CALLABLE is (sys.version_info >= (3, 13))


def test_call_slots_put_the_null_where_this_python_does():
    bottom_first = codefacts.call_slots("callable", "NULL")
    # 3.11/3.12 push NULL then the callable; 3.13 the callable then NULL (dis: PUSH_NULL after
    # LOAD_GLOBAL's callable, folded into LOAD_GLOBAL's low bit either way)
    expected = ("callable", "NULL") if sys.version_info >= (3, 13) else ("NULL", "callable")
    assert bottom_first == expected
